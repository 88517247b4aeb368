"""The hypothesis log: the journal itself, in time order, one key away."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import Footer, Label, RichLog

from torchdoctor.journal import read_events
from torchdoctor.tui.widgets.views import event_line


class LogScreen(Screen[None]):
    """Every hypothesis, test, result and decision, read back from journal.jsonl."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,l", "app.pop_screen", "Back", id="log.back")]

    def __init__(self, journal_path: Path) -> None:
        super().__init__()
        self.journal_path = journal_path

    def compose(self) -> ComposeResult:
        # The session's name fits 80 columns; the full path is the log's last line.
        yield Label(f"Hypothesis log — session {Path(self.journal_path).parent.name}",
                    id="log-title", markup=False)
        yield RichLog(id="log", wrap=True, highlight=False, markup=False)
        yield Footer(compact=True)

    def on_mount(self) -> None:
        log = self.query_one(RichLog)
        events, warnings = read_events(self.journal_path)
        for event in events:
            log.write(event_line(event))
        for warning in warnings:
            log.write(warning)
        log.write(Text(f"journal: {self.journal_path}", style="dim"))
