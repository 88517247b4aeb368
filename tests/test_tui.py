"""The Textual app, driven with Pilot: phase transitions, bisection, the log and export.

The walk through the demo uses real patients on the bundled CNN; the tests
about the screens alone use a fake patient that answers like a real one.
"""

from __future__ import annotations

import asyncio
import functools
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from torchdoctor import demo
from torchdoctor.investigation.walk import Investigation, Target, default_client_factory
from torchdoctor.journal import read_events
from torchdoctor.session import Session
from torchdoctor.tui import build_app
from torchdoctor.tui.app import TorchDoctorApp
from torchdoctor.tui.screens.bisect import BisectScreen
from torchdoctor.tui.screens.intake import IntakeScreen
from torchdoctor.tui.screens.log import LogScreen
from torchdoctor.tui.screens.modals import Ask, ErrorPanel
from torchdoctor.tui.widgets import views

ROOT = Path(__file__).resolve().parents[1]
TRACEBACK = (ROOT / "tests" / "fixtures" / "examples" / "linear_mismatch.txt").read_text()
EMBEDDING_TRACEBACK = (ROOT / "tests" / "fixtures" / "examples" / "embedding_index.txt").read_text()
SIZE = (100, 34)


def synchronously(test):
    """Run an async Pilot test on its own event loop (no asyncio plugin is needed)."""

    @functools.wraps(test)
    def run(*args, **kwargs):
        return asyncio.run(test(*args, **kwargs))

    return run


class FakePatient:
    """Answers like a patient on the linear-mismatch example, for tests of the screens alone."""

    def __init__(self, hang: threading.Event | None = None, die: bool = False) -> None:
        self.hang = hang
        self.die = die
        self.closed = False
        self.process = None

    @property
    def alive(self) -> bool:
        return not self.closed

    def run_script(self, path, argv=(), cwd=None, timeout=None):
        return {"exited": "raised", "exit_code": 1, "traceback": TRACEBACK,
                "error": {"type": "RuntimeError", "message": "mat1 and mat2 shapes cannot be "
                          "multiplied (64x57600 and 9216x128)"}}

    def probe(self, name, params=None, timeout=None):
        from torchdoctor.patient.client import PatientDied

        if self.die:
            raise PatientDied(f"running the {name} probe", -9, "")
        if self.hang is not None:
            self.hang.wait(20)
            if self.closed:
                raise PatientDied(f"running the {name} probe", -9, "")
        facts = {"raised": True, "feeding_module": "features.4", "chw": [64, 30, 30],
                 "feature_count": 57600, "input_shapes": [[64, 57600]]}
        return {"probe": name, "status": "fail", "summary": f"{name}: fc1 got [64, 57600]",
                "facts": facts, "location": {"module": "fc1", "op": "linear"}}

    def close(self):
        self.closed = True
        if self.hang is not None:
            self.hang.set()


def fake_factory(**kwargs):
    return lambda env=None: FakePatient(**kwargs)


def make_app(tmp_path, factory, target=True, diagnosed=True, **kwargs) -> TorchDoctorApp:
    session = Session.start(tmp_path / "sessions", target="train.py" if target else None)
    if diagnosed:
        from torchdoctor.knowledge import load_knowledge
        from torchdoctor.match import diagnose

        session.record_input(TRACEBACK, "paste")
        session.record_diagnosis(diagnose(TRACEBACK, load_knowledge()).to_dict())
    chosen = Target(script=str(tmp_path / "train.py")) if target else None
    return TorchDoctorApp(session, factory, chosen, **kwargs)


def plain(renderable) -> str:
    """What a Static shows, as text."""
    from rich.console import Console

    console = Console(width=100, record=True, file=open(os.devnull, "w"))  # noqa: SIM115
    console.print(renderable)
    return console.export_text()


def event_types(app: TorchDoctorApp) -> list[str]:
    return [e["type"] for e in read_events(app.session.journal.path)[0]]


def test_the_app_module_imports_no_torch():
    code = ("import sys, torchdoctor.tui.app, torchdoctor.tui, torchdoctor.commands.demo\n"
            "print(any(m == 'torch' or m.startswith('torch.') for m in sys.modules))")
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                            text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"


@synchronously
async def test_phases_move_with_keys_and_each_move_is_journalled(tmp_path):
    app = make_app(tmp_path, fake_factory())
    async with app.run_test(size=SIZE) as pilot:
        assert app.phase == "reproduce"
        for expected in ("gather", "hypothesize", "test", "fix"):
            await pilot.press("n")
            assert app.phase == expected
            assert app.query_one("#phases").current == expected
        await pilot.press("p")
        assert app.phase == "test"
        await pilot.press("1")
        assert app.phase == "reproduce"
        assert str(app.query_one("#purpose").render()).startswith("Reproduce:")
    phases = [e["phase"] for e in read_events(app.session.journal.path)[0] if e["type"] == "phase"]
    assert phases == ["gather", "hypothesize", "test", "fix", "test", "reproduce"]


@synchronously
async def test_hypotheses_can_be_added_reordered_and_rejected_with_a_reason(tmp_path):
    app = make_app(tmp_path, fake_factory())
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("3")
        first, second = list(app.session.state.hypotheses)[:2]
        await pilot.press("right_square_bracket")
        assert list(app.session.state.hypotheses)[:2] == [second, first]
        await pilot.press("a")
        assert isinstance(app.screen, Ask)
        await pilot.press(*"labels are one-based", "enter")
        assert any(h.statement == "labels are one-based"
                   for h in app.session.state.hypotheses.values())
        await pilot.press("up")
        await pilot.press("x")
        await pilot.press(*"the map is 4-d", "enter")
        assert app.session.state.hypotheses[second].state == "rejected"
        assert app.session.state.hypotheses[second].reason == "the map is 4-d"
    assert "reorder" in event_types(app)


@synchronously
async def test_a_dying_patient_ends_as_a_readable_panel(tmp_path):
    app = make_app(tmp_path, fake_factory(die=True))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("4", "r")
        await app.workers.wait_for_complete()
        await pilot.pause()
        # A probe whose patient died is a result (status error), not a step that failed.
        assert not isinstance(app.screen, ErrorPanel)
        assert app.session.state.probes[-1]["status"] == "error"
        hyp = next(iter(app.session.state.hypotheses.values()))
        assert hyp.state == "error"
        assert "died" in hyp.evidence[-1]["summary"]
        assert hyp.reason.startswith("the probe run crashed, so it is no evidence")


@synchronously
async def test_cancel_kills_the_running_probe_and_leaves_the_ui_usable(tmp_path):
    app = make_app(tmp_path, fake_factory(hang=threading.Event()))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("1", "r")
        await app.workers.wait_for_complete()
        await pilot.press("4", "r")
        await pilot.pause(0.2)
        assert app.busy
        await pilot.press("i")  # no new input (and session) under a running step
        assert not isinstance(app.screen, IntakeScreen)
        await pilot.press("escape")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert app.busy is None
        assert any("Cancelled" in n.message for n in app._notifications)
        hyp = next(iter(app.session.state.hypotheses.values()))
        assert hyp.state == "untested" and hyp.reason == "cancelled"
        await pilot.press("n")
        assert app.phase == "fix"


@synchronously
async def test_log_screen_reads_the_journal_and_export_says_where_it_went(tmp_path):
    app = make_app(tmp_path, fake_factory())
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("l")
        await pilot.pause()
        assert isinstance(app.screen, LogScreen)
        text = "\n".join(line.text for line in app.screen.query_one("#log").lines)
        assert "RuntimeError: mat1 and mat2 shapes cannot be multiplied" in text
        assert "text=" not in text
        assert app.session.id in str(app.screen.query_one("#log-title").render())
        assert text.count("proposed") == len(app.session.state.hypotheses)
        await pilot.press("escape", "e")
        await pilot.pause()
        assert not isinstance(app.screen, ErrorPanel)
        assert app.exported and Path(app.exported).exists()
        assert Path(app.exported).read_text().startswith("# torchdoctor report")
        await pilot.press("t")
        assert app.theme == "textual-light"


@synchronously
async def test_intake_diagnoses_a_500_line_paste(tmp_path):
    app = make_app(tmp_path, fake_factory(), target=False, diagnosed=False, intake_first=True)
    noise = "\n".join(f"epoch 1 step {n}: loss 2.3" for n in range(480))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert isinstance(app.screen, IntakeScreen)
        app.screen.query_one("#paste").load_text(noise + "\n" + TRACEBACK)
        await pilot.press("ctrl+d")
        await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert app.session.state.error["type"] == "RuntimeError"
        assert app.session.state.matches[0]["entry"] == "shape.linear_in_features"
        assert app.session.state.input_text.count("\n") > 500


@synchronously
async def test_a_description_no_phrase_knows_is_told_as_reading_like_entries_not_matching(tmp_path):
    app = make_app(tmp_path, fake_factory(), target=False, diagnosed=False, intake_first=True)
    description = ("since I moved to four cards with torchrun the job just sits there after "
                   "printing the config and nothing else is printed")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        app.screen.query_one("#paste").load_text(description)
        await pilot.press("ctrl+d")
        await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.pause()
        kinds = [match["kind"] for match in app.session.state.matches]
        matched, resembling = kinds.count("match"), kinds.count("reads_like")
        assert resembling >= 1
        told = (f"{matched} knowledge-base {'entry matches' if matched == 1 else 'entries match'}; "
                if matched else "") + f"{resembling} read{'s' if resembling == 1 else ''} like the description"
        notices = [n.message for n in app._notifications]
        assert any(notice.startswith("a guess: ") and notice.endswith(f"({told})")
                   for notice in notices), notices


@synchronously
async def test_a_resumed_session_opens_where_it_stopped_without_rerunning(tmp_path):
    script = tmp_path / "train.py"
    script.write_text("raise SystemExit(1)\n")
    earlier = make_app(tmp_path, fake_factory())
    earlier.session.record_probe({"probe": "env", "status": "pass", "summary": "torch",
                                  "hypothesis": None, "verdict": None, "location": None,
                                  "facts": {}})
    earlier.session.goto("test")
    earlier.session.close()
    session, _ = Session.resume(earlier.session.journal.directory)
    app = build_app(session=session, target=str(script), client_factory=fake_factory())
    assert app.autostart is False
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert app.busy is None and app.phase == "test"
        assert all(h.state == "proposed" for h in app.session.state.hypotheses.values())


@synchronously
async def test_a_step_that_runs_code_asks_for_a_target_instead_of_failing(tmp_path):
    app = make_app(tmp_path, fake_factory(), target=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("4")
        assert "needs your code" in str(app.query_one("#next").render())
        await pilot.press("r")
        assert isinstance(app.screen, Ask)
        assert "train.py [args]" in str(app.screen.query_one(".modal-title").render())
        await pilot.press(*"nothere.py", "enter")
        assert isinstance(app.screen, ErrorPanel) and "no such script" in app.screen.body
        await pilot.press("escape")
        script = tmp_path / "train.py"
        script.write_text("raise SystemExit(1)\n")
        await pilot.press("r")
        app.screen.query_one("#ask-input").value = str(script)
        await pilot.press("enter")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert app.doctor.target.script == str(script)
        first = next(iter(app.session.state.hypotheses.values()))
        assert first.evidence and first.evidence[-1]["probe"] == "trace"


@synchronously
async def test_a_new_error_on_the_intake_gets_its_own_session(tmp_path):
    app = make_app(tmp_path, fake_factory(), target=False)
    first_session = app.session
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("i")
        app.screen.query_one("#paste").load_text(EMBEDDING_TRACEBACK)
        await pilot.press("ctrl+d")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert app.session.id != first_session.id and app.doctor.session is app.session
        assert app.session.state.error["type"] == "IndexError"
        assert all(key.startswith("index.") for key in app.session.state.hypotheses)
        assert app.phase == "gather"  # nothing to rerun: the pasted error is the first fact
    earlier, _ = read_events(first_session.journal.path)
    assert any(e["type"] == "matches" for e in earlier)  # the first error stays in its session
    assert not any(e["type"] == "parse" and e["error"]["type"] == "IndexError" for e in earlier)


@synchronously
async def test_hypothesis_tables_fit_80_columns_with_whole_states(tmp_path):
    app = make_app(tmp_path, fake_factory())
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("3", "y")
        table = app.query_one("#hyp-table")
        state, probe = table.ordered_columns[1], table.ordered_columns[2]
        assert state.get_render_width(table) >= len("confirmed") + 2
        assert str(probe.label) == "probe"
        assert sum(c.get_render_width(table) for c in table.ordered_columns) \
            <= table.scrollable_content_region.width


@synchronously
async def test_phase_keys_stay_with_the_phases_under_another_screen(tmp_path):
    app = make_app(tmp_path, fake_factory())
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("l")
        assert isinstance(app.screen, LogScreen)
        await pilot.press("n", "r")
        assert app.phase == "reproduce" and app.busy is None
        assert isinstance(app.screen, LogScreen)


@synchronously
async def test_the_exported_report_path_stays_on_screen(tmp_path):
    app = make_app(tmp_path, fake_factory())
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("e")
        await pilot.pause()
        assert app.exported
        assert app.exported in str(app.query_one("#next").render())
        await pilot.press("n")  # the next phase's own guidance takes the line back
        assert app.exported not in str(app.query_one("#next").render())


@synchronously
async def test_a_paste_only_fix_phase_shows_the_leading_fix_readably(tmp_path):
    app = make_app(tmp_path, fake_factory(), target=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("5")
        shown = plain(app.query_one("#fix-view").content)
    assert "its fix: Make in_features follow the data" in shown
    # Too narrow for two columns of code: before and after stack, each line whole.
    assert "│ before" in shown and "│ after" in shown
    assert "self.fc = nn.Linear(9216, 128)" in shown


@synchronously
async def test_the_command_palette_reaches_the_actions_by_name(tmp_path):
    app = make_app(tmp_path, fake_factory())
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("ctrl+p", *"open the h")
        await pilot.pause(0.5)
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, LogScreen)
        await pilot.press("escape", "ctrl+p", *"go to te")
        await pilot.pause(0.5)
        await pilot.press("enter")
        await pilot.pause()
        assert app.phase == "test"


def test_a_resumed_cli_run_shows_its_captured_failure_as_reproduced(tmp_path):
    from torchdoctor.knowledge import load_knowledge
    from torchdoctor.match import diagnose
    from torchdoctor.recording import record_run

    diagnosis = diagnose(EMBEDDING_TRACEBACK, load_knowledge()).to_dict()
    recorded = record_run({"target": "embed.py", "argv": [], "exited": "raised",
                           "error": diagnosis["error"], "matches": diagnosis["matches"],
                           "findings": []}, root=tmp_path)
    session, _ = Session.resume(recorded.journal.directory)
    session.close()
    assert "reproduce" in views.done_phases(session.state)


def test_a_silent_symptom_reproduces_when_its_harness_runs_clean(tmp_path):
    session = Session.start(tmp_path / "sessions")
    harness = f"{ROOT / 'tests' / 'zoo' / 'silent' / 'missing_step.py'}:harness"
    doctor = Investigation(session, Target(harness=harness), default_client_factory(str(ROOT)))
    try:
        doctor.diagnose_text("loss stays at 2.30 with 10 classes", "symptom")
        outcome = doctor.reproduce()
    finally:
        doctor.close()
        session.close()
    assert outcome["same"] is True and "silent symptom" in outcome["detail"]
    assert "reproduce" in session.state.completed
    shown = plain(views.reproduce_view(session.state, harness))
    assert "✓ runs" in shown and "the symptom" in shown and "same error" not in shown


@pytest.mark.slow
@synchronously
async def test_the_demo_walks_all_five_phases_with_real_patients(tmp_path):
    copy = demo.prepare(tmp_path / "demo")
    session = Session.start(tmp_path / "sessions", target=str(copy.script))
    target = Target(script=str(copy.script), harness=copy.harness)
    app = TorchDoctorApp(session, default_client_factory(str(copy.directory)), target,
                         demo=copy, autostart=True)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.pause()
        state = app.session.state
        assert "reproduce" in state.completed
        assert "57600" in state.error["message"]
        # Shrunk while the failure was live: the Linear alone, proven to fail the same way.
        assert state.repro["verified"] and state.repro["level"] == "module"
        assert "nn.Linear(in_features=9216" in Path(state.repro["path"]).read_text()
        await pilot.press("n", "r")  # gather: census and environment
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert {p["probe"] for p in state.probes} >= {"census", "env"}
        await pilot.press("n", "n", "r")  # test the first hypothesis with its probe
        await app.workers.wait_for_complete()
        await pilot.pause()
        first = next(iter(state.hypotheses.values()))
        assert first.state == "confirmed", first.evidence
        await pilot.press("b")  # guided bisection on the live model
        assert isinstance(app.screen, BisectScreen)
        await app.workers.wait_for_complete()
        await pilot.pause()
        screen = app.screen
        steps = screen.facts["steps"]
        assert steps and screen.facts["order"][-1] == "fc1"
        for _ in steps:
            await pilot.press("enter")
        assert screen.facts["first_bad"]["module"] == "fc1"
        shown = plain(screen.query_one("#bisect-view").content)
        assert "first bad module: fc1" in shown and "16x57600" in shown
        await pilot.press("escape", "n")
        assert app.phase == "fix"
        await pilot.press("r")  # before the fix the rerun must still fail
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert state.verified is False and "fix" not in state.completed
        await pilot.press("f", "r")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert state.verified is True and "fix" in state.completed
        assert "overfit_batch" in app.verify_detail


class OtherScriptPatient(FakePatient):
    """A target that fails, but not with the pasted error."""

    def run_script(self, path, argv=(), cwd=None, timeout=None):
        return {"exited": "raised", "exit_code": 1, "traceback": EMBEDDING_TRACEBACK,
                "error": {"type": "IndexError", "message": "index out of range in self"}}


def test_the_pasted_error_rerun_word_for_word_is_the_same_error(tmp_path):
    app = make_app(tmp_path, fake_factory())
    try:
        outcome = app.doctor.reproduce()
    finally:
        app.doctor.close()
    assert outcome["same"] is True and outcome["detail"] == "the same error came back"
    assert "reproduce" in app.session.state.completed


def test_a_different_error_is_said_plainly_and_tests_nothing_about_the_paste(tmp_path):
    app = make_app(tmp_path, lambda env=None: OtherScriptPatient())
    try:
        outcome = app.doctor.reproduce()
        key = next(iter(app.session.state.hypotheses))
        finding = app.doctor.test(key)
    finally:
        app.doctor.close()
    assert outcome["same"] is False
    assert outcome["detail"].startswith("a different error came back: IndexError: index out")
    assert "IndexError instead of RuntimeError" in outcome["detail"]
    assert outcome["traceback"] == EMBEDDING_TRACEBACK  # for a front end to offer to diagnose
    assert "reproduce" not in app.session.state.completed
    assert finding["verdict"] == "untested" and "does not reproduce" in finding["reason"]
    assert app.session.state.hypotheses[key].state == "untested"


def test_verify_tells_the_same_failure_from_a_new_one(tmp_path):
    app = make_app(tmp_path, fake_factory())
    same = app.doctor.verify()
    assert same["passed"] is False
    assert same["detail"].startswith("the rerun still fails the same way: RuntimeError: mat1")
    app.doctor.client_factory = lambda env=None: OtherScriptPatient()
    other = app.doctor.verify()
    assert other["detail"].startswith("the rerun fails with a different error: IndexError")
    assert "IndexError instead of RuntimeError" in other["detail"]


# -- the walk holds together: one session, phases on evidence, a footer that fits ----------


@synchronously
async def test_verifying_a_confirmed_cause_records_its_fix_for_the_report(tmp_path):
    from torchdoctor.report import build_report, render_markdown

    app = make_app(tmp_path, fake_factory())
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("4", "y", "5")
        shown = plain(app.query_one("#fix-view").content)
        assert "r will rerun train.py with seed 0 in a fresh process" in shown
        await pilot.press("r")  # the fake patient still raises: not verified, fix recorded
        await app.workers.wait_for_complete()
        await pilot.pause()
        shown = plain(app.query_one("#fix-view").content)
        await pilot.press("e")
        await pilot.pause()
    assert "✗ not yet" in shown and "it ran: rerun train.py" in shown
    hypothesis = next(iter(app.session.state.hypotheses.values()))
    assert app.session.state.fix["hypothesis"] == hypothesis.key
    report = render_markdown(build_report(app.session.journal.directory))
    assert "No fix was recorded" not in report
    assert hypothesis.fix["summary"] in report and "Verification: failed." in report


@synchronously
async def test_a_phase_ticks_only_on_its_own_evidence(tmp_path):
    app = make_app(tmp_path, fake_factory())
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("5")  # walked past Reproduce and Test without doing either
        done = views.done_phases(app.session.state)
        assert "reproduce" not in done and "test" not in done and "fix" not in done
        await pilot.press("4", "y")
        assert "test" in views.done_phases(app.session.state)


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
@synchronously
async def test_the_footer_shows_this_phases_keys_whole(tmp_path, size):
    from textual.widgets._footer import FooterKey

    app = make_app(tmp_path, fake_factory(hang=threading.Event()))
    async with app.run_test(size=size) as pilot:
        for phase in ("1", "2", "3", "5", "4"):
            await pilot.press(phase)
            await pilot.pause()
            keys = [k for k in app.screen.query(FooterKey) if k.display]
            shown = {k.key for k in keys}
            for key in keys:  # every key's label whole, none squeezed or cut
                needed = len(key.key_display) + 1 + len(key.description) if key.description \
                    else len(key.key_display)
                assert key.region.width >= needed, (app.phase, key.key, key.region)
                assert key.region.right <= size[0]
            assert {"n", "q"} <= shown
            if app.phase == "test":
                assert {"r", "y", "x", "b", "l", "e"} <= shown
            if app.phase == "hypothesize":
                assert "a" in shown
        await pilot.press("r")  # while a probe runs: cancel is on show, acting on it is not
        await pilot.pause()
        shown = {k.key for k in app.screen.query(FooterKey) if k.display}
        assert "escape" in shown and "r" not in shown and "y" not in shown
        label = str(app.query_one("#busy-label").render())
        assert "esc cancels" in label and " s " in label
        await pilot.press("escape")
        await app.workers.wait_for_complete()


@synchronously
async def test_the_add_hypothesis_dialog_says_how_to_submit(tmp_path):
    app = make_app(tmp_path, fake_factory())
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("3", "a")
        assert isinstance(app.screen, Ask)
        assert "enter submits" in str(app.screen.query_one(".modal-hint").render())


@synchronously
async def test_without_a_live_model_gather_does_not_claim_a_census(tmp_path):
    app = make_app(tmp_path, fake_factory(hang=threading.Event()), target=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("2", "r")
        await pilot.pause()
        label = str(app.query_one("#busy-label").render())
        await pilot.press("escape")
        await app.workers.wait_for_complete()
    assert "reading the environment" in label and "census" not in label


@synchronously
async def test_the_command_palette_offers_the_checkup(tmp_path):
    app = make_app(tmp_path, fake_factory(), target=False)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("ctrl+p", *"check")
        await pilot.pause(0.5)
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, Ask)  # the checkup needs a harness first
        assert "The checkup trains your model" in str(app.screen.query_one(".modal-title")
                                                      .render())


def test_the_verification_says_what_it_runs_for_each_kind_of_target():
    script = views.verify_plan(Target(script="/w/train.py", argv=["--lr", "1"]))
    harness = views.verify_plan(Target(harness="/w/model.py:make"))
    both = views.verify_plan(Target(script="/w/train.py", harness="/w/train.py:make"))
    assert script.startswith("rerun train.py --lr 1 with seed 0") and "overfit" not in script
    assert harness.startswith("run one training step of model.py:make")
    assert "overfit one batch" in harness and "overfit one batch" in both
    assert "rerun train.py" in both


def test_the_exported_report_reads_right_for_a_symptom_a_paste_and_a_cpu_build(tmp_path):
    from torchdoctor.report import build_report, render_markdown

    symptom = Session.start(tmp_path, kind="app")
    symptom.record_input("loss stays at 2.30 with 10 classes", "symptom")
    symptom.record_diagnosis({"error": {"type": None, "message": "loss stays at 2.30 with 10"
                                        " classes"}, "matches": []})
    symptom.record_probe({"probe": "env", "status": "pass", "summary": "torch 2 on cpu",
                          "hypothesis": None, "verdict": None, "location": None,
                          "facts": {"torch": "2.13.0+cpu", "cuda": None, "cudnn": None,
                                    "cuda_available": False, "devices": []}})
    symptom.record_repro(verified=True, level="module", what="Linear", lines=8, seconds=1.0,
                         path=str(tmp_path / "repro.py"), command="python repro.py",
                         error={"type": "RuntimeError", "message": "m"})
    symptom.close()
    text = render_markdown(build_report(symptom.journal.directory))
    assert "None:" not in text and "raised `None" not in text
    assert "The symptom described: “loss stays at 2.30 with 10 classes”" in text
    assert "app on a described symptom" in text
    assert "started an app session" in text and "An 8-line repro" in text
    assert "| CUDA | no CUDA build |" in text and "| cuDNN | not available |" in text
    assert "| CUDA available | no |" in text

    paste = Session.start(tmp_path, kind="app")
    paste.record_input(TRACEBACK, "paste")
    from torchdoctor.knowledge import load_knowledge
    from torchdoctor.match import diagnose

    paste.record_diagnosis(diagnose(TRACEBACK, load_knowledge()).to_dict())
    paste.close()
    text = render_markdown(build_report(paste.journal.directory))
    assert "app on a pasted error" in text and "on `-`" not in text


SLOW_CRASH = """\
import sys
import time

for n in range(1, 5):
    print(f"line {n}", flush=False)
    time.sleep(0.7)
print("about to fail", file=sys.stderr)
raise ValueError("the end of the slow script")
"""


@pytest.mark.slow
@synchronously
async def test_a_running_script_shows_its_output_live_and_the_journal_keeps_its_tail(tmp_path,
                                                                                      monkeypatch):
    monkeypatch.setenv("TORCHDOCTOR_SESSIONS", str(tmp_path / "sessions"))
    script = tmp_path / "slow_crash.py"
    script.write_text(SLOW_CRASH)
    app = build_app(script=str(script), kind="run", autostart=True)
    async with app.run_test(size=(80, 24)) as pilot:
        seen = ""
        for _ in range(60):  # while it runs, what it printed so far is on screen
            await pilot.pause(0.25)
            seen = str(app.query_one("#live-output").render())
            if "line 2" in seen:
                break
        label = str(app.query_one("#busy-label").render())
        assert app.busy and "line 1" in seen and "line 2" in seen
        assert "esc cancels" in label and " s · " in label
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert app.session.state.error["type"] == "ValueError"
        assert not app.query_one("#live-output").display
    kept = [n for n in app.session.state.notes if n.startswith("output of slow_crash.py")]
    assert kept and "line 4" in kept[0] and "about to fail" in kept[0]
    assert [p.name for p in (tmp_path / "sessions").iterdir()] == [app.session.id]


@pytest.mark.slow
@synchronously
async def test_a_symptom_with_a_harness_is_tested_by_the_whole_checkup(tmp_path):
    harness = f"{ROOT / 'tests' / 'zoo' / 'silent' / 'missing_zero_grad.py'}:harness"
    session = Session.start(tmp_path / "sessions", target=harness)
    app = TorchDoctorApp(session, default_client_factory(str(ROOT)), Target(harness=harness))
    app.doctor.diagnose_text("loss stays at 2.30 with 10 classes", "symptom")
    proposed = set(session.state.hypotheses)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("4")
        assert "whole training checkup" in str(app.query_one("#next").render())
        await pilot.press("r")
        await pilot.pause(1)
        assert "esc cancels" in str(app.query_one("#busy-label").render())
        await app.workers.wait_for_complete()
        await pilot.pause()
        fix = plain(app.query_one("#fix-view").content)
    state = session.state
    ran = {p["probe"] for p in state.probes}
    assert {"census", "grad_flow", "weights_update", "loop_order", "overfit_batch"} <= ran
    leading = next(iter(state.hypotheses.values()))
    assert leading.key == "training.missing_zero_grad/no_zero_grad"
    assert leading.state == "confirmed" and leading.key not in proposed
    # What the described symptom first suggested, the evidence ruled out.
    assert state.hypotheses["training.loss_constant/step_not_called"].state == "rejected"
    assert "cause: optimizer.zero_grad()" in fix and "Clear gradients" in fix


class OtherErrorPatient(FakePatient):
    """Reruns the target into another error than the one pasted."""

    def run_script(self, path, argv=(), cwd=None, timeout=None):
        return {"exited": "raised", "exit_code": 1, "traceback": EMBEDDING_TRACEBACK,
                "error": {"type": "IndexError", "message": "index out of range in self",
                          "traceback": EMBEDDING_TRACEBACK}}


@synchronously
async def test_a_different_error_on_rerun_is_offered_as_its_own_session(tmp_path):
    app = make_app(tmp_path, lambda env=None: OtherErrorPatient())
    first = app.session
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("r")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert "reproduce" not in views.done_phases(first.state)
        assert "d diagnoses it as its own session" in str(app.query_one("#next").render())
        await pilot.press("d")
        await app.workers.wait_for_complete()
        await pilot.pause()
    assert app.session is not first and app.session.state.error["type"] == "IndexError"
    assert first.state.error["type"] == "RuntimeError"  # the pasted one keeps its session


@synchronously
async def test_a_notice_from_the_command_line_is_shown_in_the_app(tmp_path):
    notice = "--json come after train.py, so train.py gets them"
    app = make_app(tmp_path, fake_factory(), notice=notice)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert [n.message for n in app._notifications] == [notice]


@pytest.mark.slow
@synchronously
async def test_esc_stops_a_running_script_and_keeps_what_it_printed(tmp_path):
    script = tmp_path / "slow_crash.py"
    script.write_text(SLOW_CRASH)
    session = Session.start(tmp_path / "sessions", kind="run", target=str(script))
    app = TorchDoctorApp(session, default_client_factory(str(tmp_path)),
                         Target(script=str(script)), autostart=True)
    async with app.run_test(size=(80, 24)) as pilot:
        for _ in range(80):
            await pilot.pause(0.25)
            if "line 1" in str(app.query_one("#live-output").render()):
                break
        await pilot.press("escape")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert app.busy is None and not isinstance(app.screen, ErrorPanel)
        assert any("Cancelled" in n.message for n in app._notifications)
    assert session.state.error is None and not session.state.reproductions
    assert any("line 1" in note for note in session.state.notes)
