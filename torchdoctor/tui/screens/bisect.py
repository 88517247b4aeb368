"""Guided bisection: follow the halving over the leaf modules, or choose your own range.

The ``bisect`` probe runs the whole search in one request and records every
cut; this screen replays those cuts one at a time (enter accepts the tool's
next cut) so the person sees which half ran and what happened. Choosing
your own cut sets the probe's ``lo``/``hi`` and reruns it from there.
"""

from __future__ import annotations

from typing import Any, ClassVar

from rich.console import Group
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Label, Static

from torchdoctor.investigation.walk import Cancelled, Investigation


class BisectScreen(Screen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "accept", "Accept next cut", id="bisect.accept"),
        Binding("g", "mark_good", "Good up to here", id="bisect.good"),
        Binding("B", "mark_bad", "Bad by here", id="bisect.bad"),
        Binding("escape,b", "app.pop_screen", "Back", id="bisect.back"),
    ]

    def __init__(self, doctor: Investigation) -> None:
        super().__init__()
        self.doctor = doctor
        self.facts: dict[str, Any] = {}
        self.summary = ""
        self.shown = 0  # how many of the probe's cuts the person has accepted
        self.lo = 0
        self.hi = -1
        self.running = False

    def compose(self) -> ComposeResult:
        yield Label("Guided bisection over the leaf modules, in execution order",
                    classes="screen-title")
        yield DataTable(id="modules", cursor_type="row")
        yield Static(id="bisect-view")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.query_one(DataTable).add_columns("#", "module", "range")
        self._run()

    def _run(self) -> None:
        self.running = True
        self.shown = 0
        self.query_one("#bisect-view", Static).update(
            Text(f"running the bisect probe from #{self.lo + 1} …", style="yellow"))
        self._probe(self.lo, self.hi)

    @work(thread=True, exclusive=True, exit_on_error=False, group="bisect")
    def _probe(self, lo: int, hi: int) -> None:
        from torchdoctor.patient.client import PatientError

        self.doctor.begin()
        try:
            result = self.doctor.bisect(lo, hi)
        except (Cancelled, PatientError, ValueError) as exc:
            result = {"status": "error", "summary": str(exc), "facts": {}}
        self.app.call_from_thread(self._show_result, result)

    def _show_result(self, result: dict) -> None:
        self.running = False
        self.facts = result.get("facts") or {}
        self.summary = result.get("summary", "")
        self._draw()

    def _range(self) -> tuple[int, int]:
        """The suspect range after the cuts accepted so far."""
        order = self.facts.get("order") or []
        steps = self.facts.get("steps") or []
        if self.shown < len(steps):
            step = steps[self.shown]
            return step["lo"], step["hi"]
        first_bad = self.facts.get("first_bad") or {}
        index = first_bad.get("index")
        return (index, index) if index is not None else (0, max(len(order) - 1, 0))

    def _draw(self) -> None:
        order = self.facts.get("order") or []
        steps = self.facts.get("steps") or []
        lo, hi = self._range()
        table = self.query_one(DataTable)
        row = table.cursor_row
        table.clear()
        for index, module in enumerate(order):
            inside = lo <= index <= hi
            mark = Text("suspect", style="bold yellow") if inside else Text("cleared", "dim")
            table.add_row(str(index + 1), Text(module, style="bold" if inside else "dim"), mark)
        if order:
            table.move_cursor(row=min(max(row, 0), len(order) - 1))
        lines: list[Any] = []
        if self.lo > 0 or self.hi >= 0:
            last = f"#{self.hi + 1}" if self.hi >= 0 else f"#{len(order)}"
            lines.append(Text(f"your cut: searching #{self.lo + 1}–{last}", style="bold cyan"))
        if not order:
            lines.append(Text(self.summary or "The bisect probe found nothing to bisect."))
        for step in steps[: self.shown]:
            ran = f"ran #1–#{step['cut'] + 1} (up to {step['cut_module']})"
            outcome = ("bad: " + str(step.get("why"))) if step["outcome"] == "bad" else "good"
            lines.append(Text(f"cut at #{step['cut'] + 1}: {ran} → {outcome}",
                              style="red" if step["outcome"] == "bad" else "green"))
        if self.shown < len(steps):
            step = steps[self.shown]
            lines.append(Text(f"next cut: run #1–#{step['cut'] + 1} (up to {step['cut_module']})"
                              " — enter accepts; or pick a row and press g / B for your own",
                              style="bold"))
        elif order:
            lines.append(self._first_bad())
        self.query_one("#bisect-view", Static).update(Group(*lines))

    def _first_bad(self) -> Text:
        first_bad = self.facts.get("first_bad")
        glue = self.facts.get("glue")
        if glue:
            return _glue_text(glue)
        if not first_bad:
            return Text(self.summary, style="green")
        text = Text("first bad module: ", style="bold red")
        text.append(f"{first_bad['module']} ({first_bad.get('label')})\n", style="bold")
        text.append(f"why: {first_bad.get('why')}\n")
        for probe in reversed(self.doctor.session.state.probes):
            facts = probe.get("facts") or {}
            if probe.get("probe") == "trace" and facts.get("input_shapes"):
                dtype = str((facts.get("input_dtypes") or [""])[0]).replace("torch.", "")
                text.append(f"input reaching it: {_dims(facts['input_shapes'][0])} {dtype}")
                if facts.get("feeding_module"):
                    text.append(f", from {facts['feeding_module']} "
                                f"{_dims(facts.get('feeding_shape'))}")
                text.append("\n")
                break
        text.append(f"{self.facts.get('runs')} runs (budget {self.facts.get('max_runs')})",
                    style="dim")
        return text

    def action_accept(self) -> None:
        if not self.running and self.shown < len(self.facts.get("steps") or []):
            self.shown += 1
            self._draw()

    def action_mark_good(self) -> None:
        """The person says everything up to the selected module is fine."""
        if self.running:
            return
        self.lo = self.query_one(DataTable).cursor_row + 1
        self.hi = -1
        self._run()

    def action_mark_bad(self) -> None:
        """The person says the failure has happened by the selected module."""
        if self.running:
            return
        self.hi = self.query_one(DataTable).cursor_row
        self._run()

    @on(DataTable.RowSelected)
    def _selected(self, event: DataTable.RowSelected) -> None:
        self.action_accept()


def _glue_text(glue: dict) -> Text:
    """The parent's own code raised between two children: no module row is to blame."""
    text = Text("raised in the parent's own forward: ", style="bold red")
    text.append(f"{glue.get('parent')}\n", style="bold")
    if glue.get("file"):
        where = f"{str(glue['file']).rsplit('/', 1)[-1]}:{glue.get('line')}"
        text.append(f"at {where}: {(glue.get('code') or '').strip()}\n")
    text.append(f"between {glue.get('before') or 'its start'} and "
                f"{glue.get('after') or 'its end'}\n")
    if glue.get("input_shapes"):
        text.append(f"{glue.get('op') or 'the op'} received {_dims(glue['input_shapes'][0])}\n")
    return text


def _dims(shape: Any) -> str:
    """``[16, 57600]`` as ``16×57600``, the way the error message writes it."""
    if not isinstance(shape, (list, tuple)):
        return str(shape or "")
    return "×".join(str(n) for n in shape)
