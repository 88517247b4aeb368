"""The real-world regression set in ``tests/real/``: load the cases, run them, judge the verdicts.

Each case is a program of our own that reproduces a bug reported in a public
thread (the link and the established cause are in its ``case.yaml``). The test
(``tests/test_real_world.py``) and the benchmark (``tests/perf/bench_real.py``)
share this module so that both count the same thing the same way: a case is
right when the expected knowledge-base hypothesis is confirmed, no hypothesis
of another entry is confirmed, the true cause is not rejected and the finding
names the line where the fix belongs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
CASES_DIR = ROOT / "tests" / "real"
KINDS = ("crash", "silent")


@dataclass(frozen=True)
class Line:
    file: str
    line: int
    code: str = ""


@dataclass(frozen=True)
class RealCase:
    name: str
    source: str
    root_cause: str
    kind: str
    target: str
    category: str
    entry: str | None
    hypothesis: str | None
    fix_line: Line
    raised_line: Line | None
    wanted: str | None = None
    xfail_reason: str | None = None

    @property
    def folder(self) -> Path:
        return CASES_DIR / self.name

    @property
    def expected(self) -> str | None:
        """The ``entry/hypothesis`` id a right diagnosis confirms; None when the KB lacks it."""
        if self.entry is None or self.hypothesis is None:
            return None
        return f"{self.entry}/{self.hypothesis}"

    def command(self) -> list[str]:
        """``run`` for a crashing script, ``check`` for a harness with a silent failure."""
        if self.kind == "crash":
            return ["run", "--no-tui", "--no-session", "--json", str(self.folder / self.target)]
        file, name = self.target.split(":")
        return ["check", "--json", f"{self.folder / file}:{name}"]


def load_case(folder: Path) -> RealCase:
    data = yaml.safe_load((folder / "case.yaml").read_text())
    expected = data["expected"]
    raised = data.get("raised_line")
    return RealCase(
        name=folder.name,
        source=data["source"],
        root_cause=data["root_cause"],
        kind=data["kind"],
        target=data["target"],
        category=expected["category"],
        entry=expected.get("entry"),
        hypothesis=expected.get("hypothesis"),
        fix_line=Line(**expected["fix_line"]),
        raised_line=Line(**raised) if raised else None,
        wanted=expected.get("wanted"),
        xfail_reason=data.get("xfail_reason"),
    )


def load_cases() -> list[RealCase]:
    return [load_case(folder) for folder in sorted(CASES_DIR.iterdir())
            if (folder / "case.yaml").is_file()]


@dataclass
class Outcome:
    """What the CLI printed for one case (``report`` is its JSON, None when it printed none)."""

    case: RealCase
    returncode: int
    report: dict | None
    stderr: str

    @property
    def findings(self) -> list[dict]:
        return (self.report or {}).get("findings", [])


def run_case(case: RealCase, timeout: float = 600) -> Outcome:
    sessions = tempfile.mkdtemp(prefix="torchdoctor-real-")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1",
           "TORCHDOCTOR_SESSIONS": sessions}
    done = subprocess.run([sys.executable, "-m", "torchdoctor", *case.command()],
                          cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=timeout, check=False)
    try:
        report = json.loads(done.stdout)
    except json.JSONDecodeError:
        report = None
    return Outcome(case, done.returncode, report, done.stderr)


def run_all(cases: list[RealCase], workers: int = 2) -> dict[str, Outcome]:
    """Every case through the real CLI, ``workers`` at a time (the suite shares 2 cores)."""
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return {outcome.case.name: outcome for outcome in pool.map(run_case, cases)}


def place_of(finding: dict) -> dict | None:
    """Where a finding says the fix belongs: ``fix_at`` when findings carry it, else ``location``."""
    return finding.get("fix_at") or finding.get("location")


def names_line(place: dict | None, line: Line) -> bool:
    if not place or not place.get("file") or place.get("line") is None:
        return False
    return Path(place["file"]).name == Path(line.file).name and place["line"] == line.line


def entry_of(hypothesis_id: str) -> str:
    return hypothesis_id.rsplit("/", 1)[0]


@dataclass
class Judgement:
    """One case's verdict on each figure of the issue."""

    case: RealCase
    category: str | None = None
    confirmed: bool = False
    fix_named: bool = False
    rejected: bool = False
    wrong: list[str] = field(default_factory=list)
    # Other hypotheses of the expected entry confirmed beside it (often mutually exclusive ones).
    siblings: list[str] = field(default_factory=list)
    note: str = ""

    @property
    def category_right(self) -> bool:
        return self.category == self.case.category

    @property
    def all_three(self) -> bool:
        return self.category_right and self.confirmed and self.fix_named

    @property
    def right(self) -> bool:
        """What the per-case test demands: all three, nothing wrong confirmed, nothing true rejected."""
        return self.all_three and not self.wrong and not self.rejected


def diagnosed_category(outcome: Outcome) -> str | None:
    """A crash: the category of the best match. A silent failure: that of the first confirmation."""
    report = outcome.report or {}
    if outcome.case.kind == "crash":
        matches = report.get("matches") or []
        return matches[0]["category"] if matches else None
    for finding in outcome.findings:
        if finding.get("verdict") == "confirmed" and finding.get("hypothesis"):
            return entry_of(finding["hypothesis"]).split(".", 1)[0]
    return None


def judge(outcome: Outcome) -> Judgement:
    case = outcome.case
    judgement = Judgement(case, category=diagnosed_category(outcome))
    if outcome.report is None:
        judgement.note = f"no JSON report (exit {outcome.returncode})"
        return judgement
    for finding in outcome.findings:
        hypothesis, verdict = finding.get("hypothesis"), finding.get("verdict")
        if not hypothesis:
            continue
        if hypothesis == case.expected:
            if verdict == "confirmed":
                judgement.confirmed = True
                judgement.fix_named = judgement.fix_named or names_line(place_of(finding), case.fix_line)
            elif verdict == "rejected":
                judgement.rejected = True
        elif verdict == "confirmed" and (case.entry is None or entry_of(hypothesis) != case.entry):
            judgement.wrong.append(hypothesis)
        elif verdict == "confirmed":
            judgement.siblings.append(hypothesis)
    judgement.note = summary_note(outcome, judgement)
    return judgement


def summary_note(outcome: Outcome, judgement: Judgement) -> str:
    """What went wrong on this case, in a few words, for the per-case line."""
    case = outcome.case
    notes = []
    if not judgement.category_right:
        notes.append(f"category {judgement.category or 'none'}")
    if case.expected is None:
        notes.append("KB lacks the cause")
    else:
        verdicts = [f.get("verdict") for f in outcome.findings if f.get("hypothesis") == case.expected]
        if not verdicts:
            notes.append("cause not tested")
        elif not judgement.confirmed:
            notes.append(f"cause {'/'.join(sorted(set(verdicts)))}")
        elif not judgement.fix_named:
            places = [place_of(f) for f in outcome.findings
                      if f.get("hypothesis") == case.expected and f.get("verdict") == "confirmed"]
            notes.append(f"points at {describe(places[0]) if places else 'nothing'}")
    if judgement.wrong:
        notes.append("also confirms " + ", ".join(judgement.wrong))
    if judgement.siblings:
        notes.append("beside it " + ", ".join(h.rsplit("/", 1)[1] for h in judgement.siblings))
    return "; ".join(notes)


def describe(place: dict | None) -> str:
    if not place:
        return "nothing"
    if place.get("file") and place.get("line") is not None:
        return f"{Path(place['file']).name}:{place['line']}"
    return f"module {place.get('module')!r}" if place.get("module") is not None else "nothing"


@dataclass
class Figures:
    """The shares the issue asks for, over the whole set."""

    total: int
    category_right: int
    confirmed: int
    fix_named: int
    all_three: int
    with_wrong: int
    wrong_confirmations: int
    rejections: int

    @classmethod
    def of(cls, judgements: list[Judgement]) -> Figures:
        return cls(
            total=len(judgements),
            category_right=sum(j.category_right for j in judgements),
            confirmed=sum(j.confirmed for j in judgements),
            fix_named=sum(j.fix_named for j in judgements),
            all_three=sum(j.all_three for j in judgements),
            with_wrong=sum(bool(j.wrong) for j in judgements),
            wrong_confirmations=sum(len(j.wrong) for j in judgements),
            rejections=sum(j.rejected for j in judgements),
        )
