"""Small modal screens: a readable error panel and a one-line question."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Static


class ErrorPanel(ModalScreen[None]):
    """An error as a panel the person reads and closes; the app carries on."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,enter", "dismiss", "Close", id="error.close")]

    def __init__(self, title: str, text: str) -> None:
        super().__init__()
        self.title_text = title
        self.body = text

    def compose(self) -> ComposeResult:
        with Vertical(id="error-panel", classes="modal"):
            yield Label(self.title_text, classes="modal-title", markup=False)
            yield Static(self.body, id="error-text", markup=False)
            yield Button("Close", id="error-close", variant="primary")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss()


class Ask(ModalScreen[str | None]):
    """One line of text from the person (a hypothesis, a reason); escape gives None."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel", id="ask.cancel")]

    def __init__(self, question: str, placeholder: str = "") -> None:
        super().__init__()
        self.question = question
        self.placeholder = placeholder

    def compose(self) -> ComposeResult:
        with Vertical(classes="modal"):
            yield Label(self.question, classes="modal-title", markup=False)
            yield Input(placeholder=self.placeholder, id="ask-input")
            yield Label("enter submits · esc cancels", classes="modal-hint")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value.strip() or None)

    def action_cancel(self) -> None:
        self.dismiss(None)
