"""The Textual app: a guided walk through Reproduce → Gather → Hypothesize → Test → Fix & verify.

The app holds no diagnostic logic and imports no torch: it receives a
patient-client factory (as memray's TUI receives its reader), runs every
blocking step of the ``Investigation`` (the core engine) in a thread worker that answers with a
message, and redraws from the Session, whose journal is the hypothesis log.
"""

from __future__ import annotations

import os
import time
from typing import Any, ClassVar

from rich.console import Group
from rich.text import Text
from textual import on, work
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, VerticalScroll
from textual.widgets import ContentSwitcher, DataTable, Footer, Header, Label, ProgressBar, Static
from textual.worker import Worker, WorkerState

from torchdoctor.investigation.walk import Cancelled, Investigation, PatientFactory, Target
from torchdoctor.render import how_many_match
from torchdoctor.session import PHASE_PURPOSE, PHASE_TITLES, PHASES, Session
from torchdoctor.tui.checkup_step import SymptomCheckup
from torchdoctor.tui.commands import DoctorCommands
from torchdoctor.tui.live_output import WatchedPatients
from torchdoctor.tui.messages import StepFailed, StepFinished
from torchdoctor.tui.screens.modals import Ask, ErrorPanel
from torchdoctor.tui.widgets import views
from torchdoctor.tui.widgets.stepper import Stepper

PHASE_ACTION = {"reproduce": "rerun the target", "gather": "take the census",
                "hypothesize": "", "test": "run the probe", "fix": "rerun and verify"}
# Steps that run the person's own code, whose output is shown live as it runs.
SHOWS_OUTPUT = ("reproduce", "fix")


class TorchDoctorApp(App[int]):
    """One session, one target (optional), one patient factory."""

    CSS_PATH = "app.tcss"
    TITLE = "torchdoctor"
    COMMANDS: ClassVar = App.COMMANDS | {DoctorCommands}
    BINDINGS: ClassVar[list[BindingType]] = [
        # The footer shows the keys of this phase (check_action hides the others' keys);
        # the rest work everywhere and are named in the palette and the next-step line.
        Binding("r", "run_step", "Run", id="phase.run"),
        Binding("escape", "cancel", "Cancel", id="work.cancel"),
        Binding("n", "next_phase", "Next", id="phase.next"),
        Binding("p", "previous_phase", "Prev", id="phase.previous", show=False),
        Binding("a", "add_hypothesis", "Add", id="hyp.add"),
        Binding("x", "reject", "Reject", id="hyp.reject"),
        Binding("y", "confirm", "Confirm", id="hyp.confirm"),
        Binding("left_square_bracket", "move(-1)", "Up", id="hyp.up", show=False),
        Binding("right_square_bracket", "move(1)", "Down", id="hyp.down", show=False),
        Binding("f", "apply_demo_fix", "Apply fix", id="demo.fix"),
        Binding("v", "verify_patch", "Verify patch", id="fix.verify"),
        Binding("w", "write_patch", "Write patch", id="fix.write"),
        Binding("d", "diagnose_new_error", "New session", id="repro.new"),
        Binding("b", "bisect", "Bisect", id="view.bisect"),
        Binding("k", "checkup", "Checkup", id="test.checkup", show=False),
        Binding("l", "log", "Log", id="view.log"),
        Binding("e", "export", "Export", id="report.export"),
        Binding("i", "intake", "Intake", id="view.intake", show=False),
        Binding("c", "copy_traceback", "Copy tb", id="copy.traceback", show=False),
        Binding("C", "copy_result", "Copy result", id="copy.result", show=False),
        Binding("t", "toggle_theme", "Theme", id="view.theme", show=False),
        *(Binding(str(n), f"goto('{phase}')", PHASE_TITLES[phase], id=f"phase.{phase}",
                  show=False) for n, phase in enumerate(PHASES, 1)),
        Binding("q", "quit", "Quit", id="app.quit"),
    ]

    def __init__(self, session: Session, client_factory: PatientFactory,
                 target: Target | None = None, *, demo: Any = None,
                 kb_dirs: tuple[str, ...] = (), autostart: bool = False,
                 intake_first: bool = False, notice: str | None = None) -> None:
        super().__init__()
        self.session = session
        self.patients = WatchedPatients(client_factory)
        self.doctor = Investigation(session, target, self.patients, kb_dirs)
        self.checkup: Any = None  # the SymptomCheckup running or last run
        self.patch: Any = None  # phase five's PatchStep, made when the Fix phase shows
        self._cancelling = False
        self._progress = (0, 0, "")
        self.demo = demo
        self.demo_fixed = False
        self.autostart = autostart
        self.intake_first = intake_first
        self.notice = notice
        self.busy: str | None = None
        self._busy_since = 0.0
        self.verify_detail = ""
        self.verified_by: str | None = None  # "fix" (r) or "patch" (v): whose verdict is shown
        self.exported: str | None = None
        self.report_note: str | None = None  # the report path, shown until the next move
        self._shown_key: str | None = None
        self.selected_row = 0

    # -- layout ---------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield Header()
        yield Stepper(id="stepper")
        yield Label("", id="purpose")
        yield Label("", id="next")
        with ContentSwitcher(initial="reproduce", id="phases"):
            with VerticalScroll(id="reproduce"):
                yield Static(id="reproduce-view")
            with VerticalScroll(id="gather"):
                yield Static(id="gather-view")
            with VerticalScroll(id="hypothesize"):
                yield DataTable(id="hyp-table", cursor_type="row")
                yield Static(id="hyp-detail")
            with VerticalScroll(id="test"):
                yield DataTable(id="test-table", cursor_type="row")
                yield Static(id="test-result")
            with VerticalScroll(id="fix"):
                yield Static(id="fix-view")
        yield Static(id="live-output", markup=False)
        with Horizontal(id="busy"):
            yield ProgressBar(total=1, show_eta=False, show_percentage=False, id="busy-bar")
            yield Label("", id="busy-label", markup=False)
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.sub_title = f"session {self.session.id}"
        for table_id in ("#hyp-table", "#test-table"):
            table = self.main_screen.query_one(table_id, DataTable)
            # Fixed widths: auto-sized columns keep the width of the first rows ("proposed")
            # and clip a later "confirmed"; the probe goes before the long statement.
            table.add_column("#", width=2)
            table.add_column("state", width=12)
            table.add_column("probe", width=16)
            table.add_column("hypothesis")
        self.main_screen.query_one("#busy").display = False
        self.main_screen.query_one("#live-output").display = False
        self.set_interval(0.5, self._tick)
        self.refresh_all()
        if self.notice:
            self.notify(self.notice, severity="warning", timeout=15)
        painted_file = os.environ.get("TORCHDOCTOR_EXIT_AFTER_PAINT")
        if painted_file:  # the start-up benchmark: note the wall clock at first paint, leave
            self.call_after_refresh(self._painted, painted_file)
            return
        if self.autostart and self.doctor.target is not None:
            self.action_run_step()
        elif self.intake_first:
            self.action_intake()

    def _painted(self, painted_file: str) -> None:
        with open(painted_file, "w", encoding="utf-8") as f:
            f.write(repr(time.time()))
        self.exit(0)

    # -- drawing ----------------------------------------------------------------------

    @property
    def main_screen(self) -> Any:
        """The phases screen, which stays at the bottom of the stack under any modal or view."""
        return self.screen_stack[0]

    @property
    def phase(self) -> str:
        return self.session.state.phase

    def refresh_all(self) -> None:
        if not self.screen_stack or not self.main_screen.is_attached:
            return
        state = self.session.state
        self.main_screen.query_one(Stepper).show(state.phase, views.done_phases(state))
        self.main_screen.query_one("#purpose", Label).update(
            f"{PHASE_TITLES[state.phase]}: {PHASE_PURPOSE[state.phase]}")
        patch = self._patch_step() if state.phase == "fix" else None
        self.main_screen.query_one("#next", Label).update(
            "→ " + (views.patch_next(patch) if patch is not None and patch.can_verify else
                    views.needs_next(state, state.phase, self.doctor.target is not None,
                                     self.report_note, self._checkup_tests())))
        self.main_screen.query_one(ContentSwitcher).current = state.phase
        target = self.doctor.target.label if self.doctor.target else None
        self.main_screen.query_one("#reproduce-view", Static).update(views.reproduce_view(state, target))
        self.main_screen.query_one("#gather-view", Static).update(views.gather_view(state))
        self._fill_tables()
        # The verdict shown is the last one: r reruns the user's file, v tries the patch.
        by_patch = self.verified_by == "patch" and patch is not None and state.verified is not None
        plan = patch.ran() if by_patch else views.verify_plan(self.doctor.target)
        self.main_screen.query_one("#fix-view", Static).update(views.fix_view(
            state, self._fix_hypothesis(), self._demo_fix(), self.demo_fixed,
            self.verify_detail, plan, views.patch_view(patch) if patch is not None else None))
        self.refresh_bindings()

    def _fill_tables(self) -> None:
        hyps = list(self.session.state.hypotheses.values())
        for table_id in ("#hyp-table", "#test-table"):
            table = self.main_screen.query_one(table_id, DataTable)
            row = self.selected_row
            table.clear()
            for number, hyp in enumerate(hyps, 1):
                table.add_row(str(number), Text(hyp.state, style=views.STATE_STYLE.get(
                    hyp.state, "")), hyp.probe or "—", _shorten(hyp.statement, self._room()),
                    key=hyp.key)
            if hyps:
                table.move_cursor(row=min(max(row, 0), len(hyps) - 1))
        self._show_selected(force=True)

    def _room(self) -> int:
        """Characters left for a statement beside the fixed columns, so no row scrolls."""
        return max(self.size.width - 44, 20)

    def on_resize(self) -> None:
        if self.screen_stack and self.main_screen.query_one("#hyp-table", DataTable).columns:
            self._fill_tables()

    def _show_selected(self, force: bool = False) -> None:
        hyp = self.selected_hypothesis()
        key = getattr(hyp, "key", None)
        # A table re-announces its highlight after every layout; redraw only on a real move.
        if key == self._shown_key and not force:
            return
        self._shown_key = key
        self.main_screen.query_one("#hyp-detail", Static).update(views.hypothesis_detail(hyp))
        self.main_screen.query_one("#test-result", Static).update(
            Group(views.hypothesis_detail(hyp), views.result_view(hyp)))

    @on(DataTable.RowHighlighted)
    def _row_moved(self, event: DataTable.RowHighlighted) -> None:
        """Only the table on show sets the selection; the hidden one follows it."""
        visible = {"hypothesize": "hyp-table", "test": "test-table"}.get(self.phase)
        if not self.screen_stack or event.data_table.id != visible:
            return
        self.selected_row = event.cursor_row
        other = "#test-table" if visible == "hyp-table" else "#hyp-table"
        table = self.main_screen.query_one(other, DataTable)
        if table.cursor_row != event.cursor_row and event.cursor_row < table.row_count:
            table.move_cursor(row=event.cursor_row)
        self._show_selected()

    def selected_hypothesis(self) -> Any:
        hyps = list(self.session.state.hypotheses.values())
        if not hyps:
            return None
        return hyps[min(max(self.selected_row, 0), len(hyps) - 1)]

    def _fix_hypothesis(self) -> Any:
        hyps = self.session.state.hypotheses.values()
        return next((h for h in hyps if h.state == "confirmed"), None)

    def _patch_step(self) -> Any:
        """Phase five's patch for the confirmed cause, proposed once the cause and target are known."""
        if self._fix_hypothesis() is None or self.doctor.target is None:
            return None
        if self.patch is None:
            from torchdoctor.tui.patch_step import PatchStep

            self.patch = PatchStep(self.session, self.doctor.knowledge())
        try:
            self.patch.prepare(self.doctor.target)
        except (OSError, ValueError) as problem:
            self.notify(f"No patch: {problem}", severity="warning")
            return None
        return self.patch

    def _demo_fix(self) -> tuple[str, str] | None:
        if self.demo is None:
            return None
        from torchdoctor import demo

        return demo.FIX_BEFORE, demo.FIX_AFTER

    def _tick(self) -> None:
        if not self.busy:
            return
        seconds = time.monotonic() - self._busy_since
        done, planned, now = self._progress
        step = f"{done + 1}/{planned} {now} · " if planned and done < planned else ""
        # Time and the way out first: if the label wraps, they are what stays in view.
        self.main_screen.query_one("#busy-label", Label).update(
            f"{seconds:.0f} s · esc cancels · {step}{self.busy}")
        output = self.main_screen.query_one("#live-output", Static)
        if output.display:
            tail = self.patients.tail(OUTPUT_LINES)
            output.update(tail or "(no output yet)")

    # -- bindings -------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        phase = self.phase
        if action in _PHASE_SCREEN_ACTIONS and self.screen_stack and \
                self.screen is not self.main_screen:
            return False  # n, r, a… act on the phases; hidden under bisection or the log
        if self.busy and action in _WAIT_FOR_STEP:
            return False  # they would act on what the running step is still deciding
        if action in ("reject", "confirm", "move"):
            return phase in ("hypothesize", "test")
        if action == "add_hypothesis":
            return phase == "hypothesize"
        if action == "apply_demo_fix":
            return self.demo is not None and phase == "fix"
        if action == "verify_patch":
            return phase == "fix" and self.patch is not None and self.patch.can_verify
        if action == "write_patch":
            return (phase == "fix" and self.patch is not None
                    and self.patch.verified is not None and self.patch.written is None)
        if action == "cancel":
            return self.busy is not None
        if action == "run_step":
            return bool(PHASE_ACTION[phase])
        if action == "diagnose_new_error":
            return phase == "reproduce" and views.different_error(self.session.state) is not None
        if action == "bisect":
            return phase in ("gather", "test")
        return True

    # -- phase movement -------------------------------------------------------------------

    def action_next_phase(self) -> None:
        index = PHASES.index(self.phase)
        if index + 1 < len(PHASES):
            self.action_goto(PHASES[index + 1])

    def action_previous_phase(self) -> None:
        index = PHASES.index(self.phase)
        if index > 0:
            self.action_goto(PHASES[index - 1])

    def action_goto(self, phase: str) -> None:
        if phase != self.phase:
            self.report_note = None
            self.session.goto(phase)
            self.refresh_all()
        table = {"hypothesize": "#hyp-table", "test": "#test-table"}.get(phase)
        if table:
            self.main_screen.query_one(table, DataTable).focus()

    # -- the phase step, in a worker --------------------------------------------------------

    def action_run_step(self) -> None:
        phase = self.phase
        if phase == "test":
            hyp = self.selected_hypothesis()
            if hyp is None:
                self.notify("No hypothesis to test.", severity="warning")
                return
            if not hyp.probe:
                self.notify("This hypothesis names no probe: confirm (y) or reject (x) it from"
                            " what you know.", severity="warning")
                return
        if phase in ("reproduce", "test", "fix") and self.doctor.target is None:
            self.ask_for_target(f"{PHASE_TITLES[phase]} runs your code in a patient process.",
                                self.action_run_step)
            return
        target = self.doctor.target
        if phase == "test" and self._checkup_tests():
            self.action_checkup()  # a silent symptom is tested by the whole checkup
        elif phase == "test":
            self.run_step("test", f"testing {hyp.key} with {hyp.probe}", hyp.key)
        elif phase == "reproduce":
            self.run_step(phase, f"rerunning {target.label} with seed 0")
        elif phase == "gather":
            self.run_step(phase, "taking the census and reading the environment"
                          if self.doctor.shared is not None else "reading the environment")
        elif phase == "fix":
            self._record_fix_under_test()
            self.run_step(phase, "verifying the fix as the Fix & verify view says")

    def _checkup_tests(self) -> bool:
        """Whether r in Test runs the checkup: a silent symptom with a harness to train."""
        target = self.doctor.target
        return views.is_symptom(self.session.state) and bool(target and target.harness)

    def action_checkup(self) -> None:
        """Every training check on the harness, as ``torchdoctor check`` runs them."""
        target = self.doctor.target
        if target is None or not target.harness:
            self.ask_for_target("The checkup trains your model on one batch.",
                                self.action_checkup)
            return
        if self.phase != "test":
            self.session.goto("test")
        self.checkup = SymptomCheckup(self.session, target.harness, self.patients,
                                      self.doctor.knowledge(), self.doctor.hypothesis_spec)
        self.run_step("checkup", f"checkup of {os.path.basename(target.harness)}")

    def _record_fix_under_test(self) -> None:
        """What the verification tests: the confirmed cause's fix, journaled once per cause."""
        hyp = self._fix_hypothesis()
        fix = self.session.state.fix
        if hyp is None or (fix is not None and fix.get("hypothesis") == hyp.key):
            return
        summary = (hyp.fix or {}).get("summary") or f"your change for: {hyp.statement}"
        self.session.record_fix(summary, hyp.key)

    def ask_for_target(self, why: str, then: Any) -> None:
        """No target yet: ask for one on the spot, then carry on with ``then``."""

        def answered(text: str | None) -> None:
            if not text:
                self.notify("No target given; the steps that run your code wait for one.",
                            severity="warning")
                return
            try:
                target = Target.parse(text)
            except ValueError as exc:
                self.push_screen(ErrorPanel("That target cannot be used", str(exc)))
                return
            self.set_target(target)
            then()

        self.push_screen(Ask(f"{why} Give a script (train.py [args]) or a harness "
                             "(file.py:make):", "train.py  or  model.py:make_parts"), answered)

    def set_target(self, target: Target) -> None:
        self.doctor.target = target
        self.session.note(f"target: {target.label}")
        self.refresh_all()

    def run_step(self, step: str, label: str, *args: Any) -> None:
        self.busy = label
        self._busy_since = time.monotonic()
        self._progress = (0, 0, "")
        self._cancelling = False
        self.main_screen.query_one("#busy").display = True
        self.patients.forget()
        output = self.main_screen.query_one("#live-output", Static)
        output.display = step in SHOWS_OUTPUT
        output.border_title = "output of " + (self.doctor.target.label if self.doctor.target
                                              else "the target")
        output.update("")
        self._tick()
        self.refresh_bindings()
        self.doctor.begin()
        self._step_worker(step, args)

    def _run_checkup(self) -> dict:
        """In the worker: the checkup ``action_checkup`` set up, reporting each check."""
        return self.checkup.run(lambda *p: self.call_from_thread(self._show_progress, *p))

    def _verify_patch(self) -> dict:
        """In the worker: the patch tried on a copy, reporting each run."""
        return self.patch.verify(lambda line: self.call_from_thread(self._patch_progress, line))

    def _patch_progress(self, line: str) -> None:
        """From the worker: which run of the verification is going on."""
        self.busy = line
        self._tick()

    def action_verify_patch(self) -> None:
        self.run_step("patch", "verifying the patch on a scratch copy")

    def action_write_patch(self) -> None:
        chosen = self.patch.verified

        def answered(text: str | None) -> None:
            if (text or "").strip().lower() not in ("y", "yes"):
                self.notify("Nothing written.")
                return
            try:
                self.notify(self.patch.write(), timeout=10)
            except (OSError, ValueError) as problem:
                self.push_screen(ErrorPanel("Could not write the patch", str(problem)))
            self.refresh_all()

        self.push_screen(Ask(f"Write the verified patch to {chosen.patch.file}? (a backup is "
                             "kept beside it) y/n", "y"), answered)

    def _show_progress(self, done: int, planned: int, now: str) -> None:
        """From the checkup's worker thread: how far it got."""
        self._progress = (done, planned, now)
        bar = self.main_screen.query_one("#busy-bar", ProgressBar)
        if planned:
            bar.update(total=planned, progress=done)
        self._tick()

    @work(thread=True, exclusive=True, exit_on_error=False, group="step")
    def _step_worker(self, step: str, args: tuple) -> None:
        """Blocking work; it talks back only through messages."""
        from torchdoctor.patient.client import PatientError

        method = {"reproduce": self.doctor.reproduce, "gather": self.doctor.gather,
                  "test": self.doctor.test, "fix": self.doctor.verify,
                  "bisect": self.doctor.bisect, "diagnose": self.doctor.diagnose_text,
                  "checkup": self._run_checkup, "patch": self._verify_patch}[step]
        stopped = StepFailed(step, "Cancelled: the patient running it was stopped. Press r to"
                             " run it again.", True)
        try:
            result = method(*args)
        except Cancelled:
            self.post_message(stopped)
        except PatientError as exc:
            # A patient killed by esc dies like any other; the person asked for it.
            self.post_message(stopped if self._cancelling else StepFailed(step, str(exc)))
        except (ValueError, OSError) as exc:
            self.post_message(StepFailed(step, str(exc)))
        else:
            self.post_message(StepFinished(step, result))

    def _idle(self) -> None:
        self.busy = None
        # An indeterminate bar animates forever, even hidden; park it while idle.
        self.main_screen.query_one("#busy-bar", ProgressBar).update(total=1, progress=0)
        self.main_screen.query_one("#busy").display = False
        output = self.main_screen.query_one("#live-output", Static)
        if output.display:
            self._keep_output()
        output.display = False
        self.refresh_bindings()

    def _keep_output(self) -> None:
        """The script's last lines go into the journal, as a terminal's scrollback keeps them."""
        tail = self.patients.tail()
        if tail.strip():
            label = self.doctor.target.label if self.doctor.target else "the target"
            self.session.note(f"output of {label} (last lines):\n{tail}")

    @on(StepFinished)
    def _step_finished(self, message: StepFinished) -> None:
        self._idle()
        result = message.result
        if message.step == "reproduce":
            self.notify(result["detail"], severity="information" if result["same"] else "warning")
        elif message.step == "test":
            self.notify(f"{result['verdict']}: {_shorten(result['summary'], 90)}")
        elif message.step == "checkup":
            found = len(result["confirmed"])
            self.notify(f"{result['checks']} checks, {result['failed']} failed; "
                        + (f"{found} confirmed, listed first" if found else "no cause confirmed"))
        elif message.step in ("fix", "patch"):
            self.verify_detail = result["detail"]
            self.verified_by = message.step
            self.notify(("Verified: " if result["passed"] else "Not yet: ") + result["detail"],
                        severity="information" if result["passed"] else "warning")
        elif message.step == "diagnose":
            matches = result.get("matches", [])
            self.notify("No knowledge-base entry matches; add your own hypotheses (a)"
                        if not matches else
                        f"{'probably' if matches[0].get('confident') else 'a guess'}: "
                        f"{matches[0].get('title') or matches[0].get('entry')} "
                        f"({how_many_match(matches)})")
            if self.phase == "reproduce" and self.doctor.target is None:
                self.session.goto("gather")  # nothing to rerun: the error is the first fact
        self.refresh_all()

    @on(StepFailed)
    def _step_failed(self, message: StepFailed) -> None:
        self._idle()
        self.refresh_all()
        if message.cancelled:
            self.notify(message.text, severity="warning")
        else:
            self.push_screen(ErrorPanel(f"Could not {message.step}", message.text))

    @on(Worker.StateChanged)
    def _worker_failed(self, event: Worker.StateChanged) -> None:
        """Anything a worker did not expect still ends as a panel, never a crash."""
        if event.state == WorkerState.ERROR:
            self._idle()
            error = event.worker.error
            self.push_screen(ErrorPanel("Something went wrong",
                                        f"{type(error).__name__}: {error}"))

    def action_cancel(self) -> None:
        if self.busy:
            self._cancelling = True
            self.doctor.cancel()
            if self.checkup is not None:
                self.checkup.cancel()
            if self.patch is not None:
                self.patch.cancel()
            self.main_screen.query_one("#busy-label", Label).update("stopping …")

    # -- hypotheses -------------------------------------------------------------------------

    def action_add_hypothesis(self) -> None:
        def added(text: str | None) -> None:
            if text:
                self.session.add_hypothesis(text)
                self.refresh_all()

        self.push_screen(Ask("Your hypothesis, in words:", "the data loader drops the labels"),
                         added)

    def action_reject(self) -> None:
        hyp = self.selected_hypothesis()
        if hyp is None:
            return

        def rejected(reason: str | None) -> None:
            if reason:
                self.session.set_state(hyp.key, "rejected", reason)
                self.refresh_all()

        self.push_screen(Ask(f"Why reject {hyp.key}?", "the reason, for the log"), rejected)

    def action_confirm(self) -> None:
        hyp = self.selected_hypothesis()
        if hyp is not None:
            self.session.set_state(hyp.key, "confirmed", "confirmed by the person")
            self.refresh_all()

    def action_move(self, offset: int) -> None:
        keys = list(self.session.state.hypotheses)
        hyp = self.selected_hypothesis()
        if hyp is None:
            return
        index = keys.index(hyp.key)
        other = index + offset
        if not 0 <= other < len(keys):
            return
        keys[index], keys[other] = keys[other], keys[index]
        self.session.reorder(keys)
        self.selected_row = other
        self.refresh_all()

    # -- other views ---------------------------------------------------------------------------

    def action_apply_demo_fix(self) -> None:
        from torchdoctor import demo

        target = self.doctor.target
        if self.demo is None or target is None or not target.script:
            return
        if demo.apply_fix(target.script):
            self.session.record_fix(demo.FIX_SUMMARY, getattr(self._fix_hypothesis(), "key", None))
            self.patch = None  # its diff was made from the file as it was before the fix
            self.notify(f"Applied the fix to {target.script}; press r to rerun and verify.")
        else:
            self.notify("The copy is already fixed.")
        self.demo_fixed = True
        self.refresh_all()

    def action_bisect(self) -> None:
        from torchdoctor.tui.screens.bisect import BisectScreen

        if self.doctor.target is None:
            self.ask_for_target("Bisection reruns your model.", self.action_bisect)
            return
        self.push_screen(BisectScreen(self.doctor))

    def action_log(self) -> None:
        from torchdoctor.tui.screens.log import LogScreen

        self.push_screen(LogScreen(self.session.journal.path))

    def action_intake(self) -> None:
        from torchdoctor.tui.screens.intake import IntakeScreen

        if self.busy:  # a new input may start a new session under the running step
            self.notify("Still working; esc cancels, then i.", severity="warning")
            return
        self.push_screen(IntakeScreen(self.doctor), self._intake_done)

    def _intake_done(self, result: dict | None) -> None:
        if not result:
            return
        if result.get("text") and (self.session.state.matches or self.session.state.error):
            self._new_session()
        if result.get("target") is not None:
            self.set_target(result["target"])
        if result.get("text"):
            self.run_step("diagnose", "matching the knowledge base", result["text"],
                          result["source"])
        self.refresh_all()

    def action_diagnose_new_error(self) -> None:
        """The rerun raised another error: diagnose it in a session of its own."""
        text = views.different_error(self.session.state)
        if text is None:
            return
        self._new_session()
        self.run_step("diagnose", "matching the knowledge base", text, "script")

    def _new_session(self) -> None:
        """A new error gets a new session, so its hypotheses are not mixed with the last one's."""
        old = self.session
        self.session = Session.start(old.journal.directory.parent, kind="app")
        self.doctor.close()
        self.doctor = Investigation(self.session, self.doctor.target, self.doctor.client_factory,
                             self.doctor.kb_dirs)
        self.selected_row = 0
        self.verify_detail = ""
        self.verified_by = None
        self.exported = self.report_note = None
        self.demo_fixed = False
        old.close()
        self.sub_title = f"session {self.session.id}"
        self.notify(f"New session {self.session.id} for the new error; the last one is kept "
                    f"(torchdoctor --resume {old.id}).")

    def action_export(self) -> None:
        try:
            from torchdoctor.report import write_report
        except ImportError:
            self.push_screen(ErrorPanel(
                "The report module is not available",
                f"The journal holds the whole log: {self.session.journal.path}"))
            return
        try:
            path = write_report(self.session.journal.directory)
        except (OSError, ValueError) as exc:
            self.push_screen(ErrorPanel("Could not write the report", str(exc)))
            return
        self.exported = self.report_note = str(path)
        self.session.note(f"exported the report to {path}")
        self.notify(f"Report written to {path}", timeout=10)
        self.refresh_all()

    def action_copy_traceback(self) -> None:
        text = self.session.state.input_text
        if not text:
            self.notify("No traceback to copy yet.", severity="warning")
            return
        self.copy_to_clipboard(text)
        self.notify("Copied the traceback.")

    def action_copy_result(self) -> None:
        hyp = self.selected_hypothesis()
        if hyp is None or not hyp.evidence:
            self.notify("No result to copy yet.", severity="warning")
            return
        finding = hyp.evidence[-1]
        self.copy_to_clipboard(f"{hyp.statement}\n{finding.get('probe')} "
                               f"[{finding.get('status')}] {finding.get('verdict')}: "
                               f"{finding.get('summary')}")
        self.notify("Copied the result.")

    def action_toggle_theme(self) -> None:
        self.theme = "textual-light" if self.theme == "textual-dark" else "textual-dark"

    def on_unmount(self) -> None:
        if self.checkup is not None:
            self.checkup.cancel()
        self.doctor.cancel()
        self.doctor.close()


_PHASE_SCREEN_ACTIONS = {"next_phase", "previous_phase", "run_step", "add_hypothesis", "reject",
                         "confirm", "move", "apply_demo_fix", "goto", "intake", "bisect",
                         "checkup", "diagnose_new_error", "verify_patch", "write_patch"}
_WAIT_FOR_STEP = {"run_step", "add_hypothesis", "reject", "confirm", "move", "bisect",
                  "checkup", "apply_demo_fix", "diagnose_new_error", "verify_patch",
                  "write_patch"}
OUTPUT_LINES = 6


def _shorten(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
