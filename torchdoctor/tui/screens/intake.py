"""Intake: a traceback pasted, a log file picked, or a symptom named; and an optional target.

Returns ``{"text", "source", "target"}`` to the app, which diagnoses the
text in a worker. Checking that a target loads starts a patient, so it runs
in a worker too.
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.suggester import Suggester
from textual.widgets import Button, Footer, Input, Label, OptionList, TextArea

from torchdoctor.investigation.walk import Investigation, Target

SYMPTOMS = (
    "loss is not decreasing",
    "loss stays at 2.30 with 10 classes",
    "loss becomes NaN after a few hundred steps",
    "memory keeps growing every iteration",
    "training is slow, the GPU is idle",
    "DataLoader hangs with num_workers > 0",
    "accuracy stuck at chance",
    "validation loss goes up while training loss goes down",
)


class PathSuggester(Suggester):
    """Completes a path from the files on disk, as a shell would."""

    def __init__(self) -> None:
        super().__init__(use_cache=False, case_sensitive=True)

    async def get_suggestion(self, value: str) -> str | None:
        path = Path(value).expanduser()
        folder, stem = (path, "") if value.endswith("/") else (path.parent, path.name)
        try:
            names = sorted(p.name + ("/" if p.is_dir() else "") for p in folder.iterdir()
                           if p.name.startswith(stem) and not p.name.startswith("."))
        except OSError:
            return None
        if not names:
            return None
        head = value[: len(value) - len(stem)] if stem else value
        return head + names[0]


class IntakeScreen(Screen[dict | None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+d", "diagnose", "Diagnose", id="intake.diagnose", priority=True),
        Binding("escape", "leave", "Back", id="intake.back"),
    ]

    def __init__(self, doctor: Investigation) -> None:
        super().__init__()
        self.doctor = doctor
        self.symptom: str | None = None

    def compose(self) -> ComposeResult:
        yield Label("Paste a traceback (or a whole log) — ctrl+d diagnoses, esc goes back",
                    classes="screen-title")
        yield TextArea(id="paste", soft_wrap=False, show_line_numbers=False)
        with Horizontal(classes="row"):
            yield Input(placeholder="…or a log file: path/to/train.log", id="log-path",
                        suggester=PathSuggester())
        yield Label("…or no traceback: pick a symptom", classes="screen-title")
        yield OptionList(*SYMPTOMS, id="symptoms")
        with Horizontal(classes="row"):
            yield Input(placeholder="optional: train.py [args] or file.py:make",
                        id="target", suggester=PathSuggester())
            yield Button("Check it loads", id="check")
            yield Button("Diagnose", id="diagnose", variant="primary")
        with Vertical(classes="row"):
            yield Label("", id="intake-status")
        yield Footer(compact=True)

    @on(OptionList.OptionSelected, "#symptoms")
    def _symptom(self, event: OptionList.OptionSelected) -> None:
        self.symptom = str(event.option.prompt)
        self._status(f"symptom: {self.symptom} (ctrl+d to diagnose)")

    @on(Button.Pressed, "#diagnose")
    def _diagnose_pressed(self) -> None:
        self.action_diagnose()

    @on(Button.Pressed, "#check")
    def _check_pressed(self) -> None:
        target = self._target()
        if target is None:
            return
        self._status(f"starting a patient to load {target.label} …")
        self._check_loads(target)

    def _status(self, text: str) -> None:
        self.query_one("#intake-status", Label).update(text)

    def _target(self) -> Target | None:
        text = self.query_one("#target", Input).value.strip()
        if not text:
            self._status("no target given (that is fine for a pasted traceback)")
            return None
        try:
            return Target.parse(text)
        except ValueError as exc:
            self._status(f"target: {exc}")
            return None

    @work(thread=True, exclusive=True, exit_on_error=False, group="intake")
    def _check_loads(self, target: Target) -> None:
        from torchdoctor.patient.client import PatientError

        try:
            client = self.doctor.client_factory(None)
        except PatientError as exc:
            self.app.call_from_thread(self._status, f"could not start a patient: {exc}")
            return
        try:
            if target.harness:
                reply = client.load_harness(target.harness)
                found = ", ".join(sorted(reply.get("found") or []))
                text = f"✓ {target.label} loads: {found or 'ok'}"
            else:
                source = Path(target.script or "").read_text(encoding="utf-8")
                compile(source, target.script or "<script>", "exec")
                text = f"✓ {target.label} compiles; it runs when you press r in Reproduce"
        except (PatientError, SyntaxError, OSError) as exc:
            text = f"✗ {target.label} does not load: {exc}"
        finally:
            client.close()
        self.app.call_from_thread(self._status, text)

    def action_diagnose(self) -> None:
        text, source = self._input()
        target_text = self.query_one("#target", Input).value.strip()
        target = self._target() if target_text else None
        if target_text and target is None:
            return
        if text is None and target is None:
            self._status("paste a traceback, give a log file, pick a symptom or a target")
            return
        self.dismiss({"text": text, "source": source, "target": target})

    def _input(self) -> tuple[str | None, str]:
        pasted = self.query_one("#paste", TextArea).text
        if pasted.strip():
            return pasted, "paste"
        log = self.query_one("#log-path", Input).value.strip()
        if log:
            try:
                return Path(log).expanduser().read_text(encoding="utf-8", errors="replace"), "file"
            except OSError as exc:
                self._status(f"{log}: {exc.strerror or exc}")
                return None, "file"
        if self.symptom:
            return self.symptom, "symptom"
        return None, "paste"

    def action_leave(self) -> None:
        self.dismiss(None)
