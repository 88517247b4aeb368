"""Drive the real app in tmux through the demo: send-keys in, capture-pane out.

Run directly (``python tests/tmux_demo.py [WIDTH HEIGHT]``) to watch a walk
at a given size, or through tests/test_tui_tmux.py. Exits non-zero, naming
the screen it was waiting for, when the app does not get there.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


class Tmux:
    def __init__(self, width: int, height: int, command: str) -> None:
        self.name = f"td-{os.getpid()}"
        subprocess.run(["tmux", "new-session", "-d", "-s", self.name, "-x", str(width),
                        "-y", str(height), command], check=True)

    def keys(self, *keys: str) -> None:
        for key in keys:
            subprocess.run(["tmux", "send-keys", "-t", self.name, key], check=True)
            time.sleep(0.3)

    def screen(self) -> str:
        return subprocess.run(["tmux", "capture-pane", "-p", "-t", self.name],
                              capture_output=True, text=True, check=False).stdout

    def wait_for(self, text: str, seconds: float = 90) -> str:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            screen = self.screen()
            if text in screen:
                return screen
            time.sleep(0.5)
        raise AssertionError(f"waited {seconds:g} s for {text!r}; the screen was:\n"
                             f"{self.screen()}")

    def close(self) -> None:
        subprocess.run(["tmux", "kill-session", "-t", self.name], check=False,
                       capture_output=True)


def walk(width: int = 100, height: int = 30) -> list[str]:
    """The demo from the captured failure to a verified fix; returns each screen seen."""
    sessions = tempfile.mkdtemp(prefix="td-sessions-")
    command = (f"cd {shlex.quote(str(ROOT))} && TORCHDOCTOR_SESSIONS={shlex.quote(sessions)} "
               f"{shlex.quote(sys.executable)} -m torchdoctor demo")
    tmux = Tmux(width, height, command)
    screens = []
    try:
        screens.append(tmux.wait_for("✓ same error"))
        tmux.keys("n", "r")
        screens.append(tmux.wait_for("environment"))
        tmux.keys("n")
        screens.append(tmux.wait_for("predicts"))
        tmux.keys("n", "r")
        screens.append(tmux.wait_for("A cause is confirmed"))
        tmux.keys("b")
        screens.append(tmux.wait_for("next cut"))
        for _ in range(4):
            tmux.keys("Enter")
        screens.append(tmux.wait_for("first bad module"))
        tmux.keys("Escape", "l")
        screens.append(tmux.wait_for("Hypothesis log"))
        tmux.keys("Escape", "n", "f", "r")
        screens.append(tmux.wait_for("✓ verified", 150))
        tmux.keys("q")
    finally:
        tmux.close()
    return screens


def bare_start(width: int = 80, height: int = 24) -> list[str]:
    """``torchdoctor`` alone: paste a traceback, diagnose, and ask to test without a target."""
    folder = tempfile.mkdtemp(prefix="td-bare-")
    command = (f"cd {shlex.quote(folder)} && PYTHONPATH={shlex.quote(str(ROOT))} "
               f"{shlex.quote(sys.executable)} -m torchdoctor")
    traceback = ROOT / "tests" / "fixtures" / "examples" / "linear_mismatch.txt"
    tmux = Tmux(width, height, command)
    screens = []
    try:
        screens.append(tmux.wait_for("Paste a traceback", 30))
        subprocess.run(["tmux", "load-buffer", str(traceback)], check=True)
        subprocess.run(["tmux", "paste-buffer", "-p", "-t", tmux.name], check=True)
        tmux.wait_for("cannot be multiplied", 10)
        tmux.keys("C-d")
        screens.append(tmux.wait_for("the numbers, explained", 30))
        tmux.keys("4", "r")
        screens.append(tmux.wait_for("Give a script", 10))
        tmux.keys("Escape")
        time.sleep(0.5)
        tmux.keys("q")
    finally:
        tmux.close()
    return screens


if __name__ == "__main__":
    size = [int(n) for n in sys.argv[1:3]] or [100, 30]
    for screen in walk(*size):
        print(screen)
        print("-" * size[0])
