"""The real-world regression set: bugs from public threads, replayed through the real CLI.

Every folder of ``tests/real/`` holds a program of our own with a bug that a
public thread reported (``case.yaml`` keeps the link, the cause the thread
established, the expected knowledge-base hypothesis and the line where the fix
belongs). Crashing programs go through ``torchdoctor run``, silent failures
through ``torchdoctor check`` on their harness, as a user would run them.

Per case the verdict must be right: the expected hypothesis confirmed, no
hypothesis of another entry confirmed, the true cause not rejected, the fix
line named. A case whose verdict is not right yet says why in its
``xfail_reason``; it is a strict xfail, so the day it starts passing the test
fails until the reason is removed and the floors below are raised. A time-budgeted
probe cut short by a slow machine is inconclusive, never judged, so no verdict
depends on the machine's speed. The floors only rise; the ceilings only fall.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from real_cases import KINDS, Figures, judge, load_cases, run_all

from torchdoctor.knowledge import load_knowledge

CASES = load_cases()

# Just below the figures measured on the 40 programs (tests/perf/bench_real.py: category 40,
# confirmed 39, fix line 37, all three 37; no wrong confirmation, no rejection of the true
# cause), with a program of slack for a loaded machine.
# Raise the floors and lower the ceilings as the probes improve; never the other way.
FLOORS = {"category_right": 39, "confirmed": 38, "fix_named": 36, "all_three": 36}
CEILINGS = {"wrong_confirmations": 0, "rejections": 0}


def test_the_set_is_large_enough_to_mean_something():
    assert len(CASES) >= 30
    assert {case.kind for case in CASES} == set(KINDS)


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.name)
def test_case_record_agrees_with_its_program_and_the_knowledge_base(case):
    program = case.folder / case.fix_line.file
    lines = program.read_text().splitlines()
    assert lines[case.fix_line.line - 1].strip() == case.fix_line.code, (
        f"{case.name}: fix_line no longer points at {case.fix_line.code!r}")
    assert case.source.startswith("http"), case.source
    assert case.root_cause.strip()
    assert case.kind in KINDS
    if case.kind == "crash":
        assert case.raised_line is not None, f"{case.name}: a crash records the line that raises"
        assert (case.folder / case.raised_line.file).is_file()
    if case.expected is None:
        assert case.wanted, f"{case.name}: no KB hypothesis expected, so say which one is wanted"
        return
    kb = load_knowledge(include_user=False, report=False)
    entry = kb.by_id.get(case.entry)
    assert entry is not None, f"{case.name}: no entry {case.entry}"
    assert entry.category == case.category
    assert case.hypothesis in {h.id for h in entry.hypotheses}, (
        f"{case.name}: {case.entry} has no hypothesis {case.hypothesis}")


@pytest.fixture(scope="module")
def outcomes():
    return run_all(CASES)


@pytest.mark.slow
@pytest.mark.parametrize("case", [c for c in CASES if c.kind == "crash"], ids=lambda case: case.name)
def test_program_fails_where_its_record_says(case, outcomes):
    report = outcomes[case.name].report
    assert report is not None, outcomes[case.name].stderr[-2000:]
    error = report.get("error")
    assert error, f"{case.name}: the program did not fail under torchdoctor run"
    frame = error["user_frame"]
    assert Path(frame["file"]).name == Path(case.raised_line.file).name
    assert frame["line"] == case.raised_line.line, (
        f"{case.name}: raised at line {frame['line']}, the record says {case.raised_line.line}")


def _verdict_marks(case):
    if case.xfail_reason:
        return [pytest.mark.slow,
                pytest.mark.xfail(strict=True, reason=case.xfail_reason)]
    return [pytest.mark.slow]


@pytest.mark.parametrize(
    "case", [pytest.param(c, id=c.name, marks=_verdict_marks(c)) for c in CASES])
def test_verdict_names_the_cause_and_the_fix_line(case, outcomes):
    judgement = judge(outcomes[case.name])
    assert outcomes[case.name].report is not None, judgement.note
    assert judgement.confirmed, f"{case.expected} not confirmed: {judgement.note}"
    assert not judgement.wrong, f"also confirmed: {judgement.wrong}"
    assert not judgement.rejected, f"{case.expected} rejected"
    assert judgement.fix_named, f"fix line {case.fix_line.file}:{case.fix_line.line} not named: {judgement.note}"
    assert judgement.category_right, judgement.note


@pytest.mark.slow
def test_shares_stay_above_their_floors(outcomes):
    figures = Figures.of([judge(outcomes[case.name]) for case in CASES])
    for name, floor in FLOORS.items():
        assert getattr(figures, name) >= floor, f"{name}: {getattr(figures, name)} < {floor}"
    for name, ceiling in CEILINGS.items():
        assert getattr(figures, name) <= ceiling, f"{name}: {getattr(figures, name)} > {ceiling}"
