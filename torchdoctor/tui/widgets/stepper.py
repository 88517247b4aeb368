"""The five phases in a row, so the person always sees where they are."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from torchdoctor.session import PHASE_TITLES, PHASES


class Stepper(Static):
    """Reproduce → Gather → Hypothesize → Test → Fix & verify, current one highlighted."""

    def show(self, current: str, completed: set[str]) -> None:
        text = Text()
        for number, phase in enumerate(PHASES, 1):
            if number > 1:
                text.append(" → ", style="dim")
            mark = "✓" if phase in completed else str(number)
            label = f" {mark} {PHASE_TITLES[phase]} "
            if phase == current:
                text.append(label, style="bold reverse")
            elif phase in completed:
                text.append(label, style="green")
            else:
                text.append(label)
        self.update(text)
