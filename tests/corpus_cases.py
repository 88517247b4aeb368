"""The corpus of real pastes in ``tests/corpus/``: reading, validating, scoring.

Each case is one small YAML file, ``tests/corpus/<group>/<case-id>.yaml``,
holding an error report as someone really pasted it into an issue thread or a
forum (``group`` says which: ``issues`` or ``pages``), with the diagnosis the
thread established. The test floor (``tests/test_corpus.py``) and the
benchmark (``tests/perf/bench_corpus.py``) both read the cases through here,
so they agree on what counts as a hit.

A case names the knowledge-base ``entry`` a right diagnosis ranks first, or,
when the knowledge base has no such entry yet, ``entry: null`` and a
``wanted_entry`` proposing one. Once an entry with the proposed id lands in
the knowledge base it becomes the case's expected entry, so adding the
missing entry is rewarded (or its regression caught) without touching the
corpus.

This module reads YAML and the knowledge base only: it never imports torch,
so the corpus can be scored in a fresh interpreter that proves the doctor
side stays torch-free.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from torchdoctor.knowledge import CATEGORIES

CORPUS_DIR = Path(__file__).resolve().parent / "corpus"
# Pastes kept out of every tuning, scored apart (see its README).
UNSEEN_DIR = Path(__file__).resolve().parent / "corpus_unseen"
# Prose reports read while shaping how descriptions are read, never phrase-tuned nor
# counted into the entries' report profiles (see its README).
DEV_DIR = Path(__file__).resolve().parent / "corpus_dev"
GROUPS = ("issues", "pages")

# The kinds of paste a case can be; a case carries every tag that applies.
FORM_TAGS = (
    "traceback",               # a Python traceback, whole or in part
    "message_only",            # the error line alone, no traceback
    "prose_only",              # a described symptom: no error message at all
    "error_before_traceback",  # the error line is written above the traceback
    "quoted_in_prose",         # the message sits inside a sentence
    "markdown",                # code fences, backticks, bold, headings
    "html_entities",           # &gt; &#39; ... left over from a web page
    "truncated",               # the traceback is cut (top, middle or end)
    "rank_prefix",             # [rank0]: / [default0]: before each line
    "logging_prefix",          # timestamps, log levels, progress bars
    "windows_paths",           # C:\Users\... frames
    "broken_line",             # one message broken over two lines
    "non_english",             # the prose around it is in another language
    "ide_noise",               # IDE or notebook output around it
    "old_wording",             # a message only torch before 1.8 prints
    "other_library",           # frames or a wrapper from another library
)

REQUIRED = ("source", "torch_version", "category", "entry", "root_cause", "form", "paste")
OPTIONAL = ("wanted_entry", "hypothesis")
WANTED_KEYS = ("id", "missing")
_ENTRY_ID = re.compile(r"[a-z_]+\.[a-z0-9_]+\Z")
_CASE_ID = re.compile(r"[a-z0-9][a-z0-9_-]*\Z")
# libyaml when present: the corpus is read on every test run
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_VERSION = re.compile(r"v?(\d+)\.(\d+)")


class CorpusError(Exception):
    """A case file is malformed; the message names the file and every problem."""


@dataclass
class Case:
    id: str
    group: str
    path: Path
    source: str
    torch_version: str | None
    category: str
    entry: str | None
    root_cause: str
    form: list[str]
    paste: str
    wanted_entry: dict | None = None
    hypothesis: str | None = None
    expected: str | None = field(default=None)  # entry, or wanted_entry's id once it exists

    @property
    def before_1_8(self) -> bool:
        """The message comes from a torch older than 1.8: by the reported
        version, or, with no version given, by a wording only those print."""
        version = _VERSION.match(self.torch_version or "")
        if version:
            return (int(version.group(1)), int(version.group(2))) < (1, 8)
        return "old_wording" in self.form

    @property
    def prose_only(self) -> bool:
        return "prose_only" in self.form


def case_files(root: Path = CORPUS_DIR) -> list[Path]:
    return sorted(p for group in GROUPS for p in (root / group).glob("*.yaml"))


def load_cases(kb: object, root: Path = CORPUS_DIR) -> list[Case]:
    """Every case, validated against ``kb``; raises CorpusError listing all problems."""
    cases: list[Case] = []
    problems: list[str] = []
    seen: dict[str, Path] = {}
    files = case_files(root)
    for path in files:
        case, errors = _read(path, kb)
        problems += [f"{path.relative_to(root)}: {error}" for error in errors]
        if case is None:
            continue
        if case.id in seen:
            problems.append(f"{path.relative_to(root)}: id also used by {seen[case.id]}")
        seen[case.id] = path.relative_to(root)
        cases.append(case)
    known = set(files)
    strays = sorted(p.relative_to(root) for p in root.rglob("*")
                    if p.is_file() and p.suffix != ".md" and p not in known)
    problems += [f"{p}: not a case (cases are <group>/<id>.yaml, group in {GROUPS})"
                 for p in strays]
    if problems:
        raise CorpusError("\n".join(problems))
    return cases


def _read(path: Path, kb: object) -> tuple[Case | None, list[str]]:
    errors: list[str] = []
    if not _CASE_ID.match(path.stem):
        errors.append("a case id is lower-case letters, digits, '-' and '_'")
    try:
        raw = yaml.load(path.read_text(encoding="utf-8"), Loader=_LOADER)
    except (yaml.YAMLError, UnicodeDecodeError) as error:
        return None, [f"not readable YAML: {error}"]
    if not isinstance(raw, dict):
        return None, ["a case is a mapping"]
    errors += [f"missing field {key!r}" for key in REQUIRED if key not in raw]
    errors += [f"unknown field {key!r}" for key in raw if key not in REQUIRED + OPTIONAL]
    if errors:
        return None, errors
    source, version = raw["source"], raw["torch_version"]
    if not (isinstance(source, str) and source.startswith(("https://", "http://"))):
        errors.append("source is the URL the paste was taken from")
    if version is not None and not isinstance(version, str):
        errors.append("torch_version is a string as reported (quote it) or null")
    category = raw["category"]
    if category not in CATEGORIES:
        errors.append(f"category {category!r} is not one of {', '.join(CATEGORIES)}")
    for key in ("root_cause", "paste"):
        if not (isinstance(raw[key], str) and raw[key].strip()):
            errors.append(f"{key} is a non-empty string")
    form = raw["form"]
    if not (isinstance(form, list) and form):
        errors.append("form is a non-empty list of tags")
        form = []
    errors += [f"unknown form tag {tag!r}" for tag in form if tag not in FORM_TAGS]
    if "prose_only" in form and "traceback" in form:
        errors.append("a paste is either prose_only or has a traceback, not both")
    entry_id, wanted, hypothesis = raw["entry"], raw.get("wanted_entry"), raw.get("hypothesis")
    expected = entry_id
    if entry_id is not None:
        errors += _check_entry(entry_id, category, hypothesis, kb)
        if wanted is not None:
            errors.append("wanted_entry is only for cases whose entry is null")
    else:
        if hypothesis is not None:
            errors.append("a hypothesis needs an entry")
        wanted_errors = _check_wanted(wanted, category)
        errors += wanted_errors
        if not wanted_errors and wanted["id"] in kb.by_id:
            expected = wanted["id"]
            errors += _check_entry(expected, category, None, kb)
    if errors:
        return None, errors
    return Case(id=path.stem, group=path.parent.name, path=path, source=source,
                torch_version=version, category=category, entry=entry_id,
                root_cause=raw["root_cause"], form=list(form), paste=raw["paste"],
                wanted_entry=wanted, hypothesis=hypothesis, expected=expected), []


def _check_entry(entry_id: object, category: str, hypothesis: object, kb: object) -> list[str]:
    entry = kb.by_id.get(entry_id) if isinstance(entry_id, str) else None
    if entry is None:
        return [f"entry {entry_id!r} is not in the knowledge base (null, and a wanted_entry)"]
    errors = []
    if entry.category != category:
        errors.append(f"entry {entry_id} is in category {entry.category}, the case in {category}")
    if hypothesis is not None and hypothesis not in [h.id for h in entry.hypotheses]:
        errors.append(f"entry {entry_id} has no hypothesis {hypothesis!r}")
    return errors


def _check_wanted(wanted: object, category: str) -> list[str]:
    if not isinstance(wanted, dict) or set(wanted) != set(WANTED_KEYS):
        return ["entry: null needs wanted_entry: {id: category.slug, missing: one line}"]
    errors = []
    if not (isinstance(wanted["id"], str) and _ENTRY_ID.match(wanted["id"])):
        errors.append("wanted_entry.id is category.slug")
    elif wanted["id"].split(".")[0] != category:
        errors.append(f"wanted_entry.id {wanted['id']} is outside the case's category {category}")
    if not (isinstance(wanted["missing"], str) and wanted["missing"].strip()):
        errors.append("wanted_entry.missing says in one line what the entry would cover")
    return errors


# --- scoring ------------------------------------------------------------------


@dataclass
class Outcome:
    """What ``diagnose`` made of one case."""

    case: Case
    got: list[tuple[str, str]]  # recognised (entry id, category), best first
    similar: list[tuple[str, str]] = field(default_factory=list)  # only resembling ones
    score: float | None = None  # the top recognised match's score

    @property
    def nothing(self) -> bool:
        """Not even a similar entry: the paste reads as holding no error and no symptom."""
        return not self.got and not self.similar

    @property
    def similar_only(self) -> bool:
        return not self.got and bool(self.similar)

    @property
    def similar3_entry(self) -> bool:
        return self.similar_only and self.case.expected in [e for e, _ in self.similar[:3]]

    @property
    def top1_category(self) -> bool:
        return bool(self.got) and self.got[0][1] == self.case.category

    @property
    def top3_category(self) -> bool:
        return self.case.category in [category for _, category in self.got[:3]]

    @property
    def top1_entry(self) -> bool:
        return bool(self.got) and self.got[0][0] == self.case.expected

    @property
    def top3_entry(self) -> bool:
        return self.case.expected in [entry for entry, _ in self.got[:3]]


def score(cases: list[Case], kb: object) -> list[Outcome]:
    """Run the matcher ``torchdoctor diagnose`` uses on every case."""
    from torchdoctor.match import diagnose

    outcomes = []
    for case in cases:
        diagnosis = diagnose(case.paste, kb)
        got = [(m.entry.id, m.entry.category) for m in diagnosis.matches]
        resembling = [(m.entry.id, m.entry.category) for m in diagnosis.similar]
        top = diagnosis.matches[0].score if diagnosis.matches else None
        outcomes.append(Outcome(case, got, resembling, top))
    return outcomes


def figures(outcomes: list[Outcome]) -> dict[str, float]:
    """Shares of the cases (0..1). Entry accuracy counts a case whose entry the
    knowledge base still lacks as a miss: the user gets no right answer."""
    total = len(outcomes) or 1
    return {
        "cases": len(outcomes),
        "top1_category": sum(o.top1_category for o in outcomes) / total,
        "top3_category": sum(o.top3_category for o in outcomes) / total,
        "top1_entry": sum(o.top1_entry for o in outcomes) / total,
        "top3_entry": sum(o.top3_entry for o in outcomes) / total,
        "nothing_matched": sum(o.nothing for o in outcomes) / total,
        "similar_only": sum(o.similar_only for o in outcomes) / total,
        "similar3_entry": sum(o.similar3_entry for o in outcomes) / total,
    }


def calibration(outcomes: list[Outcome], threshold: float) -> dict[str, float]:
    """How often a top recognised match at or above ``threshold`` names the
    expected entry (precision), and what share of all cases get one (coverage)."""
    above = [o for o in outcomes if o.score is not None and o.score >= threshold]
    return {"precision": sum(o.top1_entry for o in above) / (len(above) or 1),
            "coverage": len(above) / (len(outcomes) or 1), "count": len(above)}
