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
            # A key that follows escape too closely reads as alt+key on a busy machine.
            time.sleep(1.0 if key == "Escape" else 0.3)

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


class Walk:
    """A fresh folder holding copies of the user's files, its own sessions, and the app in tmux."""

    def __init__(self, width: int, height: int, args: str, files: tuple[str, ...]) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="td-walk-"))
        self.sessions = self.folder / "sessions"
        for name in files:
            (self.folder / Path(name).name).write_text((ROOT / name).read_text())
        self.env = (f"PYTHONPATH={shlex.quote(str(ROOT))} "
                    f"TORCHDOCTOR_SESSIONS={shlex.quote(str(self.sessions))}")
        self.tmux = Tmux(width, height, f"cd {shlex.quote(str(self.folder))} && {self.env} "
                         f"{shlex.quote(sys.executable)} -m torchdoctor {args}")
        self.screens: list[str] = []

    def see(self, text: str, seconds: float = 90) -> str:
        screen = self.tmux.wait_for(text, seconds)
        self.screens.append(screen)
        return screen

    def edit(self, name: str, old: str, new: str) -> None:
        """The person's fix, made in their own editor."""
        path = self.folder / name
        path.write_text(path.read_text().replace(old, new))

    def export(self) -> str:
        """e, then the report that the one session of this walk holds."""
        self.tmux.keys("e")
        self.see("Report written to", 30)
        (session,) = self.sessions.iterdir()
        return (session / "report.md").read_text()

    def sessions_listed(self) -> str:
        return subprocess.run(f"cd {shlex.quote(str(self.folder))} && {self.env} "
                              f"{shlex.quote(sys.executable)} -m torchdoctor sessions",
                              shell=True, capture_output=True, text=True, check=False).stdout

    def close(self) -> None:
        self.tmux.keys("q")
        time.sleep(0.5)
        self.tmux.close()


FLATTEN = "tests/zoo/errors/flatten_linear.py"
ZERO_GRAD = "tests/zoo/silent/missing_zero_grad.py"
FLATTEN_FIX = ("nn.Linear(9216, 128)", "nn.Linear(57600, 128)")


def script_path(width: int = 80, height: int = 24) -> tuple[list[str], str, str]:
    """``torchdoctor run flatten_linear.py``: five phases to a verified fix and its report."""
    walk = Walk(width, height, "run flatten_linear.py", (FLATTEN,))
    try:
        walk.see("output of flatten_linear.py", 30)
        walk.see("✓ same error")
        walk.tmux.keys("n", "r")
        walk.see("environment")
        walk.tmux.keys("n")
        walk.see("predicts")
        walk.tmux.keys("n", "r")
        walk.see("A cause is confirmed")
        walk.tmux.keys("n")
        walk.see("r will rerun flatten_linear.py")
        walk.edit("flatten_linear.py", *FLATTEN_FIX)
        walk.tmux.keys("r")
        walk.see("✓ verified", 120)
        report = walk.export()
        walk.tmux.keys("n")  # the report's path gives the line back
        return walk.screens, report, walk.sessions_listed()
    finally:
        walk.close()


def paste_path(width: int = 80, height: int = 24) -> tuple[list[str], str, str]:
    """``torchdoctor`` alone, a pasted traceback, the script named when a step needs it."""
    walk = Walk(width, height, "", (FLATTEN,))
    try:
        traceback = subprocess.run([sys.executable, "flatten_linear.py"], cwd=walk.folder,
                                   capture_output=True, text=True, check=False).stderr
        pasted = walk.folder / "pasted.txt"
        pasted.write_text(traceback)
        walk.see("Paste a traceback", 30)
        subprocess.run(["tmux", "load-buffer", str(pasted)], check=True)
        subprocess.run(["tmux", "paste-buffer", "-p", "-t", walk.tmux.name], check=True)
        walk.tmux.wait_for("cannot be multiplied", 10)
        walk.tmux.keys("C-d")
        walk.see("the numbers, explained", 30)
        walk.tmux.keys("1", "r")
        walk.see("enter submits", 10)
        walk.tmux.keys("flatten_linear.py", "Enter")
        walk.see("run 1 seed 0")
        walk.tmux.keys("n", "r")
        walk.see("census")
        walk.tmux.keys("n")
        walk.see("predicts")
        walk.tmux.keys("n", "r")
        walk.see("A cause is confirmed")
        walk.tmux.keys("n")
        walk.see("r will rerun flatten_linear.py")
        walk.edit("flatten_linear.py", *FLATTEN_FIX)
        walk.tmux.keys("r")
        walk.see("✓ verified", 120)
        return walk.screens, walk.export(), walk.sessions_listed()
    finally:
        walk.close()


def symptom_path(width: int = 80, height: int = 24) -> tuple[list[str], str, str]:
    """``torchdoctor`` alone, a symptom picked and a harness named: the checkup finds it."""
    walk = Walk(width, height, "", (ZERO_GRAD,))
    try:
        walk.see("pick a symptom", 30)
        walk.tmux.keys("Tab", "Tab", "Down", "Enter", "Tab")
        walk.tmux.keys("missing_zero_grad.py:harness")
        walk.see("symptom: loss stays at 2.30", 10)
        walk.tmux.keys("C-d")
        walk.see("╭─ the symptom", 60)  # diagnosed: r now reruns (while busy it waits)
        walk.tmux.keys("r")
        walk.see("✓ runs")
        walk.tmux.keys("n", "r")
        walk.see("census")
        walk.tmux.keys("n")
        walk.see("predicts")
        walk.tmux.keys("n")
        walk.see("whole training checkup")
        walk.tmux.keys("r")
        walk.see("esc cancels · ", 60)  # the checkup running: its progress, n of the checks
        walk.see("A cause is confirmed", 120)
        walk.tmux.keys("n")
        walk.see("r will run one training step")
        walk.edit("missing_zero_grad.py", "    loss.backward()  # BUG",
                  "    optimizer.zero_grad()\n    loss.backward()  # fixed")
        walk.tmux.keys("r")
        walk.see("✓ verified", 120)
        return walk.screens, walk.export(), walk.sessions_listed()
    finally:
        walk.close()


if __name__ == "__main__":
    size = [int(n) for n in sys.argv[1:3]] or [100, 30]
    for screen in walk(*size):
        print(screen)
        print("-" * size[0])
