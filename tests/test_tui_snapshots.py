"""SVG snapshots of the main screens at 80 x 24, compared by their text rows.

The SVG is Textual's own screenshot; comparing the rows of text (with the
session id and temporary paths blanked) keeps the check about what a person
reads, not about colours or font metrics. Regenerate after a deliberate
change with ``TORCHDOCTOR_UPDATE_SNAPSHOTS=1 pytest tests/test_tui_snapshots.py``.
"""

from __future__ import annotations

import asyncio
import html
import os
import re
from pathlib import Path

import pytest

from torchdoctor.investigation.walk import Target
from torchdoctor.knowledge import load_knowledge
from torchdoctor.match import diagnose
from torchdoctor.session import Session
from torchdoctor.tui.app import TorchDoctorApp
from torchdoctor.tui.screens.intake import IntakeScreen

ROOT = Path(__file__).resolve().parents[1]
SNAPSHOTS = ROOT / "tests" / "snapshots"
TRACEBACK = (ROOT / "tests" / "fixtures" / "examples" / "linear_mismatch.txt").read_text()
_TEXT = re.compile(r'<text [^>]*x="([\d.]+)" y="([\d.]+)"[^>]*>(.*?)</text>', re.DOTALL)


def rows(svg: str) -> list[str]:
    """The screen's text, one string per row, in reading order."""
    by_row: dict[float, list[tuple[float, str]]] = {}
    for x, y, text in _TEXT.findall(svg):
        by_row.setdefault(float(y), []).append((float(x), html.unescape(text)))
    lines = ["".join(t for _, t in sorted(parts)).replace("\xa0", " ").rstrip()
             for _, parts in sorted(by_row.items())]
    return [re.sub(r"\d{8}-\d{6}-[0-9a-f]{4}", "<session>", line) for line in lines]


def never_called(env=None):
    raise AssertionError("a snapshot never starts a patient")


async def screenshot(tmp_path: Path, phase: str, screen: str | None = None) -> str:
    session = Session.start(tmp_path / "sessions", target="train.py")
    session.record_input(TRACEBACK, "paste")
    session.record_diagnosis(diagnose(TRACEBACK, load_knowledge()).to_dict())
    app = TorchDoctorApp(session, never_called, Target(script="/work/train.py"))
    async with app.run_test(size=(80, 24)) as pilot:
        app.action_goto(phase)
        if screen == "intake":
            app.push_screen(IntakeScreen(app.doctor))
        await pilot.pause()
        await pilot.pause()  # the footer recomposes for the phase's keys after the first
        return app.export_screenshot()


@pytest.mark.parametrize(("name", "phase", "screen"), [
    ("gather", "gather", None),
    ("hypothesize", "hypothesize", None),
    ("fix", "fix", None),
    ("intake", "reproduce", "intake"),
])
def test_screen_matches_its_snapshot(tmp_path, name, phase, screen):
    svg = asyncio.run(screenshot(tmp_path, phase, screen))
    path = SNAPSHOTS / f"{name}.svg"
    if os.environ.get("TORCHDOCTOR_UPDATE_SNAPSHOTS"):
        path.parent.mkdir(exist_ok=True)
        path.write_text(svg, encoding="utf-8")
    assert path.exists(), f"no snapshot {path}; create it with TORCHDOCTOR_UPDATE_SNAPSHOTS=1"
    assert rows(svg) == rows(path.read_text(encoding="utf-8"))
