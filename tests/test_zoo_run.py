"""``torchdoctor run`` end to end on every crashing program of the zoo.

Each zoo program is a realistic buggy script. Here the real CLI runs it in a
real patient, as a user would (``torchdoctor run --no-tui --json FILE``), and
the test checks what the user is promised: the error is reported, the right
knowledge-base entry ranks first, its hypothesis is *confirmed* by the entry's
own criteria over the probe's facts, and the place is named — a module path
and/or the line carrying the program's marker comment (found by searching the
file, never hard-coded).

The runs cost a few seconds each, so they all start once, two at a time, in a
module-scoped fixture; the tests then only read their outcomes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parent.parent
ZOO = ROOT / "tests" / "zoo" / "errors"


@dataclass(frozen=True)
class ZooCase:
    program: str
    entry: str
    hypothesis: str
    marker: str  # the comment marking the line torchdoctor must point at
    module: str | None = None  # the module path the confirmed finding must name
    needs_cuda: bool = False

    @property
    def path(self) -> Path:
        return ZOO / f"{self.program}.py"


CASES = [
    ZooCase("flatten_linear", "shape.linear_in_features", "flatten_size", "RAISES",
            module="classifier.0"),
    ZooCase("embedding_index", "index.embedding_out_of_range", "vocab_too_small", "RAISES",
            module="embedding"),
    ZooCase("one_based_labels", "index.target_out_of_bounds", "one_based_labels", "RAISES"),
    ZooCase("float_labels", "dtype.target_not_long", "labels_from_numpy", "RAISES"),
    ZooCase("inplace_saved", "autograd.inplace_modified", "inplace_activation", "BUG",
            module="block"),
    ZooCase("view_permute", "shape.view_noncontiguous", "after_permute", "BUG"),
    ZooCase("wrong_channels", "shape.conv_channels", "grayscale_vs_rgb", "RAISES",
            module="conv1"),
    ZooCase("backward_twice", "autograd.backward_twice", "shared_subgraph_two_losses", "BUG"),
    ZooCase("nan_log", "numerics.nan_loss", "unstable_op_in_this_batch", "BUG"),
    ZooCase("device_mismatch", "device.mixed_devices", "batch_not_moved", "RAISES",
            needs_cuda=True),
]


# Diverging after a few updates can only be shown by rerunning training steps from
# the start, which a script's crash does not allow: run names the likely cause and
# points to the harness check, which confirms it.
HARNESS_ONLY = "huge_lr"


def marker_line(path: Path, marker: str) -> int:
    """The one line of ``path`` whose comment is ``# MARKER`` or ``# MARKER: why``."""
    lines = path.read_text().splitlines()
    hits = [number for number, line in enumerate(lines, 1)
            if line.rstrip().endswith(f"# {marker}") or f"# {marker}:" in line]
    assert len(hits) == 1, f"{path.name} should mark exactly one line with # {marker}"
    return hits[0]


def run_cli(script: Path, as_json: bool = True) -> subprocess.CompletedProcess:
    flags = ["--no-tui", "--no-session", "--json"] if as_json else ["--no-tui", "--no-session"]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1"}
    return subprocess.run(
        [sys.executable, "-m", "torchdoctor", "run", *flags, str(script)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=240, check=False)


def runnable(case: ZooCase) -> bool:
    return not case.needs_cuda or torch.cuda.is_available()


@pytest.fixture(scope="module")
def outcomes() -> dict[str, tuple[int, dict]]:
    """Every runnable program through the real CLI, two at a time (the suite has 2 cores)."""
    paths = {case.program: case.path for case in CASES if runnable(case)}
    paths[HARNESS_ONLY] = ZOO / f"{HARNESS_ONLY}.py"
    with ThreadPoolExecutor(max_workers=2) as pool:
        procs = dict(zip(paths, pool.map(run_cli, paths.values())))
    answers = {}
    for program, proc in procs.items():
        assert proc.stdout.strip(), f"{program}: no output; stderr:\n{proc.stderr}"
        answers[program] = (proc.returncode, json.loads(proc.stdout))
    return answers


def confirmed(outcome: dict, case: ZooCase) -> dict:
    wanted = f"{case.entry}/{case.hypothesis}"
    findings = [f for f in outcome["findings"] if f["hypothesis"] == wanted]
    assert findings, f"{wanted} was not tested: {[f['hypothesis'] for f in outcome['findings']]}"
    finding = findings[0]
    assert finding["verdict"] == "confirmed", (
        f"{wanted} is {finding['verdict']}: {finding['summary']}; facts {finding['facts']}")
    return finding


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=lambda case: case.program)
def test_run_reports_the_error_ranks_the_entry_and_confirms_the_cause(case, outcomes):
    if not runnable(case):
        pytest.skip("this program only fails on a machine with CUDA")
    status, outcome = outcomes[case.program]
    assert outcome["exited"] == "raised"
    assert outcome["error"]["type"], outcome["error"]
    assert outcome["matches"], f"no entry matched {outcome['error']['message']!r}"
    assert outcome["matches"][0]["entry"] == case.entry, [m["entry"] for m in outcome["matches"]]
    confirmed(outcome, case)
    rivals = {f["hypothesis"] for f in outcome["findings"] if f["verdict"] == "confirmed"
              and f["hypothesis"].startswith(f"{case.entry}/")}
    assert rivals == {f"{case.entry}/{case.hypothesis}"}, "one cause, not several, is confirmed"
    assert status == 0, "a confirmed cause exits 0"


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=lambda case: case.program)
def test_run_names_the_place_of_the_bug(case, outcomes):
    if not runnable(case):
        pytest.skip("this program only fails on a machine with CUDA")
    _, outcome = outcomes[case.program]
    finding = confirmed(outcome, case)
    location = finding["location"] or {}
    if case.module is not None:
        assert location.get("module") == case.module, location
    # The probe's own location when it has one, else the user's frame of the error.
    frame = outcome["error"]["user_frame"] or {}
    where = (location.get("file"), location.get("line")) if location.get("line") else (
        frame.get("file"), frame.get("line"))
    assert where[0] and Path(where[0]).name == case.path.name, (location, frame)
    assert where[1] == marker_line(case.path, case.marker), (location, frame)


@pytest.mark.slow
def test_numbers_read_from_a_guard_message_keep_the_step_apart_from_the_loss(outcomes):
    for program, step in (("nan_log", "0"), (HARNESS_ONLY, "4")):
        fields = outcomes[program][1]["matches"][0]["fields"]
        assert fields.get("step") == step and "loss" not in fields, (program, fields)


@pytest.mark.slow
def test_a_divergence_is_ranked_on_a_script_and_confirmed_on_its_harness(outcomes):
    status, outcome = outcomes[HARNESS_ONLY]
    assert outcome["error"]["type"] == "FloatingPointError"
    # A loss that turns non-finite after some steps, with no learning rate named, reads as
    # a NaN loss first (as real reports of it are labelled); divergence is its first
    # hypothesis there and the next entry, both left for the harness to decide.
    assert [m["entry"] for m in outcome["matches"][:2]] == ["numerics.nan_loss",
                                                            "training.lr_too_high"]
    assert not [f for f in outcome["findings"] if f["verdict"] == "confirmed"], (
        "nothing a script run can test shows a divergence; no other cause may be confirmed")
    untested = {f["hypothesis"] for f in outcome["findings"]
                if f["verdict"] == "untested" and "needs a harness" in f["reason"]}
    assert {"numerics.nan_loss/lr_too_high", "training.lr_too_high/diverging_updates"} <= untested
    assert status == 1, "nothing confirmed exits 1"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    check = subprocess.run(
        [sys.executable, "-m", "torchdoctor", "check", "--json", "--only", "nonfinite_steps",
         f"{ZOO / HARNESS_ONLY}.py:harness"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=240, check=False)
    findings = json.loads(check.stdout)["findings"]
    verdicts = {f["hypothesis"]: f["verdict"] for f in findings}
    assert verdicts.get("numerics.nan_loss/lr_too_high") == "confirmed", findings


@pytest.mark.slow
def test_the_text_says_what_where_and_the_fix_in_a_few_lines():
    proc = run_cli(ZOO / "flatten_linear.py", as_json=False)
    lines = proc.stdout.strip().splitlines()
    assert lines[0].startswith("torchdoctor: flatten_linear.py raised RuntimeError: mat1 and mat2")
    text = "\n".join(lines)
    assert "confirmed: The layer before this Linear emits 57600 features" in text
    assert "module classifier.0" in text
    assert f"flatten_linear.py:{marker_line(ZOO / 'flatten_linear.py', 'RAISES')}" in text
    assert any(line.strip().startswith("fix:") and "57600" in line for line in lines), text
    # The diagnosis (error, line, ranked causes) comes first, as soon as it is known,
    # then the verdicts of the tests: each part stays a few lines.
    end = next(i for i, line in enumerate(lines) if line.startswith("testing "))
    assert len(lines[: end + 1]) <= 7 and len(lines[end + 1:]) <= 10, text


@pytest.mark.slow
def test_a_confirmed_finding_shows_the_facts_that_decided_it():
    """The census confirms the channel mismatch: its evidence says channels, not a census."""
    proc = run_cli(ZOO / "wrong_channels.py", as_json=False)
    text = proc.stdout
    evidence = next(line for line in text.splitlines() if line.strip().startswith("evidence"))
    assert "3 channels" in evidence and "`conv1`" in evidence and "expects 1" in evidence
    assert "parameters 4" not in text
    assert "where: module conv1" in text


@pytest.mark.slow
def test_a_shape_in_a_statement_reads_as_a_shape(outcomes):
    match = outcomes["inplace_saved"][1]["matches"][0]
    statement = next(h["statement"] for h in match["hypotheses"]
                     if h["id"] == "inplace_activation")
    assert f"(a [{match['fields']['shape']}] " in statement, statement
