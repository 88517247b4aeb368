"""The app, headless (Textual's ``run_test``), working on a script until told to stop.

``python tests/app_headless.py SCRIPT`` opens the app on SCRIPT and starts
reproducing it at once, as ``torchdoctor`` does with a target; a line on
stdin makes it quit the app. It handles SIGTERM and SIGHUP as the command
line does, so tests can stop it from outside in every way a user can.
"""

from __future__ import annotations

import asyncio
import sys

from torchdoctor.process_groups import stop_like_ctrl_c
from torchdoctor.tui import build_app


async def main(script: str) -> None:
    app = build_app(script=script, autostart=True)
    async with app.run_test(size=(100, 34)):
        print("app started", flush=True)
        told = asyncio.Event()
        asyncio.get_running_loop().add_reader(sys.stdin.fileno(), told.set)
        await told.wait()
        app.exit(0)
    app.session.close()


if __name__ == "__main__":
    stop_like_ctrl_c()
    asyncio.run(main(sys.argv[1]))
