"""Phase five in the app: the diff of the user's own file, v verifies it on a copy, w writes it."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from torchdoctor.session import Session
from torchdoctor.tui import build_app
from torchdoctor.tui.screens.modals import Ask

ROOT = Path(__file__).resolve().parents[1]
SIZE = (100, 34)


def failed_run(tmp_path: Path, monkeypatch) -> tuple[Path, Path]:
    """A real `torchdoctor run` of a crashing script, in its own project folder."""
    project = tmp_path / "project"
    project.mkdir()
    script = project / "flatten_linear.py"
    shutil.copy(ROOT / "tests" / "zoo" / "errors" / "flatten_linear.py", script)
    sessions = tmp_path / "sessions"
    env = {**os.environ, "TORCHDOCTOR_SESSIONS": str(sessions),
           "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH"))
                                         if p)}
    subprocess.run([sys.executable, "-m", "torchdoctor", "run", "--no-tui", script.name],
                   cwd=project, env=env, capture_output=True, timeout=600, check=False)
    monkeypatch.chdir(project)
    return script, next(sessions.iterdir())


@pytest.mark.slow
def test_the_fix_phase_shows_verifies_and_writes_a_patch_of_the_users_file(tmp_path,
                                                                         monkeypatch):
    script, directory = failed_run(tmp_path, monkeypatch)
    original = script.read_text()
    session, _ = Session.resume(directory)
    app = build_app(session=session, script=str(script))

    async def walk() -> None:
        async with app.run_test(size=SIZE) as pilot:
            app.action_goto("fix")
            await pilot.pause()
            view = str(app.main_screen.query_one("#fix-view").render())
            assert app.patch is not None and app.patch.first is not None
            assert "nn.Linear(57600, 128)" in app.patch.first.diff
            assert app.check_action("write_patch", ()) is False  # nothing verified yet
            assert "Verified" not in view
            await pilot.press("v")
            await app.workers.wait_for_complete()
            await pilot.pause()
            assert app.patch.verified is not None
            assert app.session.state.verified is True and "fix" in app.session.state.completed
            assert script.read_text() == original, "verifying never writes the user's file"
            await pilot.press("w")
            await pilot.pause()
            assert isinstance(app.screen, Ask)
            await pilot.press("y", "enter")
            await pilot.pause()

    try:
        asyncio.run(walk())
    finally:
        session.close()
    assert "nn.Linear(57600, 128)" in script.read_text()
    assert (script.parent / "flatten_linear.py.orig").read_text() == original
    kinds = [line for line in (directory / "journal.jsonl").read_text().splitlines()
             if '"type": "patch"' in line]
    assert kinds, "the verified patch is in the journal for the report"
