"""Rank knowledge-base entries for a pasted error or a described symptom.

``diagnose(text, kb)`` parses the text; when it finds an error, every
pattern is tried on the diagnosed link's message (and on the CUDA assertion
lines the parser found beside it), then on the other links of the chain
with a lower weight. When nothing parses, or no pattern matches, the text is
read as prose and matched against the entries' ``symptoms:``.

Ranking, by tiers that never overlap:

====================  =====
exception type + regex  3.0
regex only              2.0
older ``messages``      1.0
prose symptom           0.5
reads like its reports  0.41
====================  =====

then inside a tier: +0.3 when the match is on a CUDA assertion line (it
names the real cause), +0.05 when the phase agrees with the category (and
-0.05 for dataloader/state_dict entries when the error is outside that phase),
+ up to 0.4 for specificity (how much literal text and how many named
groups the pattern pinned down); a match on a non-root link of the chain
counts 0.6 of that. Ties go to the id, so the order is deterministic.

Calibration: when patterns of two or more entries match one paste, every
pattern match loses ``CONTESTED_PENALTY`` (the order stays; the certainty
goes); among them an entry about an op the user's raising line calls
(``torch.stack(…)`` for a stack entry, ``a @ b`` for a matmul one) gains
``OP_BONUS``, because the frame is what tells siblings with one wording apart; so
does an entry whose pattern holds only inside one op (``inside``: "Dimension out
of range" raised in ``cross_entropy``), where the raising line, the frames under it or,
with neither shown, the paste's words name that op.
Measured on the corpus of real pastes (``tests/perf/bench_corpus.py``
prints the bands), a top match scoring at least ``CONFIDENT`` — the exception
type and a pattern agree and no other entry's pattern matched — names the
right entry at least 95 % of the time; below it a match is worded as a guess.

A description without an error that tells a symptom (what is watched, how it
behaves, when, around what: ``facets/``) also ranks the entries whose real reports
read most like it, after those its phrases named, at the lowest recognised tier:
``TIER_RESEMBLANCE`` plus up to ``RESEMBLANCE_WEIGHT`` by its share of the
likelihood, always a guess (kind ``reads_like``).

No dead ends: when nothing is recognised, the entries that resemble the paste
most (``similar.py``) are returned in ``Diagnosis.similar`` (``kind="similar"``,
never in ``matches``) with a score below every recognised tier, with the question that tells them apart; and an error
another library raised is named with its frame (``raised_by.py``).

Speed: each pattern's regex has a *required literal*: the longest run of
plain characters that any match must contain (read from the regex's parse
tree, so escapes and groups are handled). Before running a regex we check
that its literal occurs in the lower-cased message; with thousands of
entries almost all are skipped by one substring test.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from torchdoctor import facts as derived_facts
from torchdoctor import (
    private_cache,
    retyped,
    similar,
    symptoms,
    translated,
)
from torchdoctor.facets.ranking import FacetIndex
from torchdoctor.facets.reading import report_reading
from torchdoctor.facets.vocabulary import tells_a_symptom
from torchdoctor.linear_regex import (
    TEXT_LIMIT,
    RegexError,
    bounded,
    compile_linear,
    sre_parse,
)
from torchdoctor.parsing.controls import strip_controls
from torchdoctor.parsing.extras import quoted_conditions
from torchdoctor.parsing.placeholders import filled
from torchdoctor.raised_by import raised_by
from torchdoctor.readings import message_numbers, torch_versions

TIER_TYPE_AND_REGEX = 3.0
TIER_REGEX = 2.0
TIER_MESSAGE = 1.0
TIER_SYMPTOM = 0.5
TIER_RESEMBLANCE = 0.41
RESEMBLANCE_WEIGHT = 0.08
ASSERT_BONUS = 0.3
PHASE_BONUS = 0.05
SPECIFICITY_WEIGHT = 0.4
OTHER_LINK_WEIGHT = 0.6
# A prose match: each piece of evidence (a symptom regex whose phrasing names words of
# the text no other regex of the entry named) halves what is left of EVIDENCE_WEIGHT;
# the words of the text its phrases name, each weighted by how few entries spell it
# (symptoms.word_weights), approach NAMED_WEIGHT, half of it at NAMED_HALF. Both are
# read off the text, never as a share of the entry's phrases: an entry that knows more
# ways to say its symptom never ranks lower for it.
EVIDENCE_WEIGHT = 0.3
NAMED_WEIGHT = 0.1
NAMED_HALF = 6.0
CONTESTED_PENALTY = 0.5
# Between entries that all matched, the one about the op the user's raising line calls
# (torch.stack, not torch.cat; torch.bmm, not nn.Linear) is the one that discriminates.
OP_BONUS = 0.15
# The shortest required literal of a pattern tried in any letter case, when no pattern
# matched as written: long enough that the wording, not its case, identifies it.
ANY_CASE_LITERAL = 20
# The shortest required literal of a pattern that recognises a fragment of its message.
FRAGMENT_LITERAL = 30
# How much a message fragment's share of a stored wording weighs: only enough to order
# wordings the same fragment lies in.
SHARE_WEIGHT = 0.001
_CLAUSE_END = re.compile(r"[,;] ")
# Fixed text at least this long that two entries share makes neither's phrase its own.
SHARED_LITERAL = 12
_EDGE_PUNCTUATION = " .,:;()[]{}'\"#"
# A top match at or above this is right >= 95 % of the time on the corpus (see above).
CONFIDENT = 3.0

# The phase an error of this category usually happens in.
_CATEGORY_PHASE = {
    "autograd": "backward",
    "dataloader": "data_loading",
    "state_dict": "checkpoint_load",
    "shape": "forward",
    "index": "forward",
    "dtype": "forward",
}
# Categories that only make sense in their phase: a collate error outside a
# DataLoader is a plain shape error, so these lose the bonus's worth elsewhere.
_PHASE_BOUND = {"dataloader", "state_dict"}
_MISSING = "?"


# --- required literals --------------------------------------------------------


def required_literals(regex: str) -> list[str]:
    """Every literal run that any match of ``regex`` must contain (branches and
    optional parts are left out, so each run is truly required)."""
    try:
        tree = sre_parse.parse(regex)
    except re.error:
        return []
    return _literal_runs(list(tree))


def required_literal(regex: str) -> str:
    """The longest required literal run, lower-cased; "" when there is none
    (then the pattern is always tried)."""
    return max(required_literals(regex), key=len, default="").lower()


def _literal_runs(items: list) -> list[str]:
    runs: list[str] = []
    current: list[str] = []
    for op, argument in items:
        name = str(op)
        if name == "LITERAL":
            current.append(chr(argument))
            continue
        if current:
            runs.append("".join(current))
            current = []
        if name == "SUBPATTERN":
            runs.extend(_literal_runs(list(argument[-1])))
        elif name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT") and argument[0] >= 1:
            runs.extend(_literal_runs(list(argument[2])))
        elif name == "ATOMIC_GROUP":
            runs.extend(_literal_runs(list(argument)))
    if current:
        runs.append("".join(current))
    return runs


def _specificity(regex: str, literal_chars: int) -> float:
    """0..1: more required fixed text and more named groups mean a more specific pattern."""
    groups = len(re.findall(r"\(\?P<", regex))
    weight = literal_chars + 8 * groups
    return weight / (weight + 40)


@dataclass(frozen=True)
class _CompiledPattern:
    entry: object
    index: int
    exc_type: str | None
    pattern: object  # knowledge.Pattern: compiles its regex on first use, once
    literal: str
    specificity: float

    def search(self, text: str, any_case: bool = False) -> object | None:
        try:
            if not any_case:
                return self.pattern.search(text)
            found = compile_linear(self.pattern.regex, True).search(bounded(text))
            unless = getattr(self.pattern, "unless", None)
            if found is not None and unless and compile_linear(unless, True).search(
                    found.group(0)):
                return None
            return found
        except RegexError:  # only from a pattern that was never validated
            return None


@dataclass(frozen=True)
class _CompiledMessage:
    entry: object
    normalised: str


class MatchIndex:
    """The knowledge base prepared for matching: required literals and specificity.

    Reading a regex's literals costs about as much as compiling it, and a
    ``diagnose`` process is short-lived, so they are kept in a small JSON file
    in the cache directory; regexes are compiled only when their literal is
    present in the message.
    """

    def __init__(self, entries: Iterable[object]) -> None:
        self.entries = list(entries)
        self.patterns: list[_CompiledPattern] = []
        self.messages: list[_CompiledMessage] = []
        self._messages_printed: list[str] = []  # the stored messages as torch printed them
        self._wordings: list[str] | None = None  # built on first retyped message
        known = _LiteralCache.load()
        for entry in self.entries:
            for index, pattern in enumerate(getattr(entry, "patterns", None) or []):
                literal, specificity = known.lookup(pattern.regex)
                self.patterns.append(_CompiledPattern(entry, index, pattern.type or None,
                                                      pattern, literal, specificity))
            for message in getattr(entry, "messages", None) or []:
                self.messages.append(_CompiledMessage(entry, _normalise(str(message))))
                self._messages_printed.append(str(message))
        known.save()
        self.symptom_entries = [e for e in self.entries if getattr(e, "symptoms", None)]
        self.raise_sites = [(entry, site) for entry in self.entries
                            for site in getattr(entry, "raised_in", None) or []]
        self._similarity: similar.SimilarityIndex | None = None
        self._facets: FacetIndex | None = None
        self._literals: list[tuple[str, str, str]] | None = None  # built on first fragment
        self._phrases: list[tuple[_CompiledPattern, str]] | None = None

    def phrases(self) -> list[tuple[_CompiledPattern, str]]:
        """Each pattern's longest fixed phrase, normalised, where it is long enough to
        recognise a fragment; its edges are the punctuation around captured values
        ("). Kernel size …"). So is the phrase's first clause, where it is long enough:
        a message is often quoted up to its first comma ("Expected more than 1 value
        per channel when training", without the input size after it)."""
        if self._phrases is None:
            self._phrases = []
            for pattern in self.patterns:
                if getattr(pattern.pattern, "inside", None):
                    continue  # it needs the frame that raised it, which a fragment lacks
                if len(pattern.literal) >= FRAGMENT_LITERAL:
                    phrase = _normalise(pattern.literal).strip(_EDGE_PUNCTUATION)
                    clause = _CLAUSE_END.split(phrase, 1)[0].strip(_EDGE_PUNCTUATION)
                    self._phrases += [(pattern, text) for text in dict.fromkeys((phrase, clause))
                                      if len(text) >= FRAGMENT_LITERAL]
        return self._phrases

    def distinctive(self, phrase: str, pattern: _CompiledPattern) -> bool:
        """Whether only ``pattern``'s wording holds ``phrase``: no other entry's fixed text
        contains it or is contained in it ("Expected object of scalar type " opens the
        wordings of half a dozen entries and names none of them). Siblings whose pattern
        is this very wording (a stack in the user's code, the same stack in
        default_collate) share it: the phrase names each of them, and the frame decides."""
        if self._literals is None:
            self._literals = [(p.entry.id, p.pattern.regex, _normalise(run))
                              for p in self.patterns for run in required_literals(p.pattern.regex)
                              if len(run) >= SHARED_LITERAL]
        return not any(owner != pattern.entry.id and regex != pattern.pattern.regex
                       and (run in phrase or phrase in run)
                       for owner, regex, run in self._literals)

    @property
    def wordings(self) -> list[str]:
        """What a retyped message is compared with: the stored messages, and each
        pattern written out (today's wordings are often only in a pattern)."""
        if self._wordings is None:
            written = (w for p in self.patterns for w in retyped.wordings_of(p.pattern.regex))
            self._wordings = list(dict.fromkeys(
                [*self._messages_printed, *(w for w in written if w)]))
        return self._wordings

    @property
    def facets(self) -> FacetIndex:
        """The symptom entries' profiles over facets, built when a description first needs them."""
        if self._facets is None:
            self._facets = FacetIndex(self.symptom_entries)
        return self._facets

    @property
    def similarity(self) -> similar.SimilarityIndex:
        """Built on first use: only unrecognised pastes need it."""
        if self._similarity is None:
            self._similarity = similar.SimilarityIndex(self.entries)
        return self._similarity


class _LiteralCache:
    """regex -> (required literal, specificity), remembered between processes."""

    _FILE = "match-literals-v1.json"

    def __init__(self, path: Path | None, table: dict) -> None:
        self.path, self.table, self.changed = path, table, False

    @classmethod
    def load(cls) -> _LiteralCache:
        from torchdoctor.config import cache_dir

        path = cache_dir() / cls._FILE
        table = private_cache.read_json(path)
        return cls(path, table if isinstance(table, dict) else {})

    def lookup(self, regex: str) -> tuple[str, float]:
        cached = self.table.get(regex)
        if (isinstance(cached, list) and len(cached) == 2 and isinstance(cached[0], str)
                and isinstance(cached[1], float) and 0.0 <= cached[1] < 1.0):
            return cached[0], cached[1]
        runs = required_literals(regex)
        literal = max(runs, key=len, default="").lower()
        specificity = _specificity(regex, sum(len(run) for run in runs))
        self.table[regex] = [literal, specificity]
        self.changed = True
        return literal, specificity

    def save(self) -> None:
        if self.changed and self.path is not None:
            private_cache.write_json(self.path, self.table)


def _normalise(message: str) -> str:
    """Wording without the numbers, shapes and paths that change from run to run, and
    without the spacing people put before a colon ("CUDA error : …")."""
    text = _PATH_TOKEN.sub(_path_or_word, bounded(message).lower())
    text = _DECIMAL_RUN.sub("#", text)
    text = _NUMBER_LIST.sub("#", text)
    text = _SPACE_BEFORE_COLON.sub(":", text)
    return _SPACE_RUN.sub(" ", text).strip()


def _cut_short(text: str) -> str:
    """A normalised message without what marks where a paste cut it: a trailing ellipsis
    or the full stop a sentence put after the cut ("CUDA out of memor。")."""
    return text.rstrip(_CUT_MARKS)


# A whole run of path characters is read at once (no backtracking into it), and
# replaced only when it holds a separator: linear however long the run.
_PATH_TOKEN = re.compile(r"(?:[a-z]:)?[\w./\\-]+")
_DECIMAL_RUN = re.compile(r"\d+(?:\.\d+)?")
_SPACE_RUN = re.compile(r"\s+")
_SPACE_BEFORE_COLON = re.compile(r"[ \t]+:")
_CUT_MARKS = " \t\n.。!！…"
# A shape is a list of numbers as long as the tensor's rank: "32 3 3", "[10, 512, 512]",
# "[2 x 64]" are one value each, so wordings that quote shapes of other ranks compare.
_NUMBER_LIST = re.compile(r"\[#(?:(?:, ?| x | )#){0,15}\]|#(?:(?:, ?| x | )#){1,15}")


def _path_or_word(found: re.Match[str]) -> str:
    token = found.group(0)
    return "<path>" if "/" in token or "\\" in token else token


_index_cache: dict[int, tuple[object, MatchIndex]] = {}


def index_for(kb: object) -> MatchIndex:
    """The (cached) match index of a knowledge base."""
    cached = _index_cache.get(id(kb))
    if cached is not None and cached[0] is kb:
        return cached[1]
    index = MatchIndex(getattr(kb, "entries", kb))
    if len(_index_cache) > 8:
        _index_cache.clear()
    _index_cache[id(kb)] = (kb, index)
    return index


# --- results ------------------------------------------------------------------


@dataclass
class Match:
    """One entry ranked for this input, with everything needed to explain it."""

    entry: object
    score: float
    reason: str
    fields: dict = field(default_factory=dict)
    facts: list[str] = field(default_factory=list)
    hypotheses: list[dict] = field(default_factory=list)
    # "match": a pattern, wording or symptom phrase recognised it; "reads_like": no phrase
    # did, but the description reads like the entry's real reports (``facets/``), always a
    # guess; "similar": nothing was recognised and it only resembles the entry's words
    kind: str = "match"

    @property
    def confident(self) -> bool:
        """Worth saying "probably": see CONFIDENT."""
        return self.kind == "match" and self.score >= CONFIDENT

    def to_dict(self) -> dict:
        return {
            "entry": self.entry.id,
            "kind": self.kind,
            "confident": self.confident,
            "category": getattr(self.entry, "category", ""),
            "title": getattr(self.entry, "title", ""),
            "score": self.score,
            "reason": self.reason,
            "fields": _jsonable(self.fields),
            "facts": list(self.facts),
            "hypotheses": self.hypotheses,
            "references": list(getattr(self.entry, "references", None) or []),
        }


@dataclass
class Diagnosis:
    """The parsed error (or prose) and the ranked matches, best first."""

    input: str  # "traceback" | "symptom"
    text: str
    error: object | None  # a ParsedError when the text held one
    matches: list[Match] = field(default_factory=list)
    prose_fields: dict = field(default_factory=dict)
    # When nothing is recognised: the entries it resembles, and the question between them.
    similar: list[Match] = field(default_factory=list)
    question: str | None = None
    raised_by: dict | None = None  # another library raised the error: which, and where

    @property
    def kind(self) -> str:
        """"match" (recognised), "similar" (only resembles entries) or "nothing"."""
        return "match" if self.matches else "similar" if self.similar else "nothing"

    def to_dict(self) -> dict:
        if self.error is not None:
            error = self.error.to_dict()
        else:
            error = {"type": None, "message": _shorten(self.text.strip(), 500),
                     "phase": None, "user_frame": None}
        return {
            "input": self.input,
            "kind": self.kind,
            "error": error,
            "raised_by": self.raised_by,
            "question": self.question,
            "symptom_fields": dict(self.prose_fields),
            "matches": [match.to_dict() for match in self.matches],
            "similar": [match.to_dict() for match in self.similar],
        }


def _shorten(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _jsonable(fields: dict) -> dict:
    return {k: v if isinstance(v, (str, int, float, bool)) or v is None else str(v)
            for k, v in fields.items()}


# --- templates ----------------------------------------------------------------

_TEMPLATE = re.compile(r"\{\{|\}\}|\{([A-Za-z_][A-Za-z0-9_]*)\}")


_PAREN_WITH_GAP = re.compile(r" ?\([^()]*\x00[^()]*\)")


def fill_prose(template: object, fields: dict) -> str:
    """Fill a sentence, leaving out the parts that quote a number nobody knows.

    "The loss ({loss}) stays; with {classes} classes ln C is {ln_classes}."
    without a loss or C reads "The loss stays." rather than a row of '?':
    a parenthesis that holds a missing field goes, then each ';'/','-clause
    that still does. What cannot be left out that way keeps its '?'.
    """
    text = fill(template, fields, missing="\x00")
    if "\x00" not in text:
        return text
    text = _PAREN_WITH_GAP.sub(_without_gaps, text)
    for separator in ("; ", ", "):
        if "\x00" in text:
            parts = text.split(separator)
            kept = [parts[0]] + [p for p in parts[1:] if "\x00" not in p]
            text = separator.join(kept)
            if "\x00" not in text and not text.rstrip().endswith((".", "!", "?")):
                text = text.rstrip() + "."
    return text.replace("\x00", _MISSING)


def _without_gaps(found: re.Match[str]) -> str:
    """A parenthesis that quotes a number nobody knows keeps its ';'/','-parts that
    quote none ("(model on cuda:0, batch on cpu; argument ?)" keeps the devices); with
    none left, it goes."""
    inner = found.group(0).strip()[1:-1]
    for separator in ("; ", ", "):
        inner = separator.join(part for part in inner.split(separator) if "\x00" not in part)
    return f" ({inner})" if inner else ""


def fill(template: object, fields: dict, missing: str = _MISSING) -> str:
    """Fill ``{name}`` from fields; a missing field renders as ``missing`` ('?')."""
    if template is None:
        return ""

    def replace(found: re.Match[str]) -> str:
        if found.group(0) == "{{":
            return "{"
        if found.group(0) == "}}":
            return "}"
        value = fields.get(found.group(1))
        if value is None or value == "":
            return missing
        if isinstance(value, bool):
            return "yes" if value else "no"
        return str(value)

    return _TEMPLATE.sub(replace, str(template))


def _value(obj: object, name: str) -> object:
    if isinstance(obj, dict):
        return obj.get(name)
    return getattr(obj, name, None)


def render_hypotheses(entry: object, fields: dict) -> list[dict]:
    rendered = []
    for hypothesis in _value(entry, "hypotheses") or []:
        probe_name = _value(hypothesis, "probe")
        fix = _value(hypothesis, "fix")
        rendered.append({
            "id": _value(hypothesis, "id"),
            "statement": fill_prose(_value(hypothesis, "statement"), fields),
            "why": fill_prose(_value(hypothesis, "why"), fields),
            "predicts": fill_prose(_value(hypothesis, "predicts"), fields),
            "probe": {"name": probe_name, "params": dict(_value(hypothesis, "params") or {})}
            if probe_name else None,
            "confirm": list(_value(hypothesis, "confirm") or []),
            "reject": list(_value(hypothesis, "reject") or []),
            "explained_by": list(_value(hypothesis, "explained_by") or []),
            "excludes": list(_value(hypothesis, "excludes") or []),
            "fix": {
                "summary": fill_prose(_value(fix, "summary"), fields),
                "before": fill(_value(fix, "before"), fields),
                "after": fill(_value(fix, "after"), fields),
            } if fix else None,
        })
    return rendered


# --- matching -----------------------------------------------------------------


@dataclass
class _Candidate:
    entry: object
    score: float
    reason: str
    fields: dict
    # Its pattern holds only inside an op (``inside``), and the error was raised there.
    raised_inside: bool = False
    kind: str = "match"


@dataclass(frozen=True)
class _Link:
    """A text to match: a message from the chain, or a CUDA assertion line."""

    exc_type: str | None
    text: str
    weight: float
    is_assertion: bool = False
    is_warning: bool = False


def _links(parsed: object, paste: str = "") -> list[_Link]:
    links = [_Link(_value(parsed, "type"), str(_value(parsed, "message") or ""), 1.0)]
    extras = _value(parsed, "extras") or {}
    for line in _value(extras, "cuda_asserts") or []:
        text = line if isinstance(line, str) else _value(line, "text") or _value(line, "line")
        links.append(_Link(_value(parsed, "type"), str(text or line), 1.0, is_assertion=True))
    if len(links) == 1:
        links += _retold_assertions(_value(parsed, "type"), links[0].text, paste)
    message = links[0].text
    for link in _value(parsed, "chain") or []:
        text = str(_value(link, "message") or "")
        if text and text != message:
            links.append(_Link(_value(link, "type"), text, OTHER_LINK_WEIGHT))
    return links


def _retold_assertions(exc_type: str | None, message: str, paste: str) -> list[_Link]:
    """No kernel line, but the prose may retell the kernel's condition in quotes, beside
    the device-side assert or in its place, where it speaks of an assertion ("dies with a
    CUDA assertion in indexSelectLargeIndex (`srcIndex < srcSelectDimSize` failed)"); an
    error that is itself an assertion (THNN's on the CPU) already says which one failed; a
    line the parser read no type from is the person's own sentence."""
    said = message.lower()
    if not (_DEVICE_ASSERT in said or (
            not (exc_type and "assert" in said) and _ASSERTION_TOLD.search(bounded(paste)))):
        return []
    return [_Link(exc_type, f"Assertion `{condition}` failed.", 1.0, is_assertion=True)
            for condition in quoted_conditions(bounded(paste))]


_WARNING_TYPE = re.compile(r"^(?:[^\s:]{0,300}:\d{1,9}: )?(\w{0,100}Warning): ")


def _warning_links(parsed: object) -> list[_Link]:
    """The warnings printed before the error, each typed by its warning class."""
    links = []
    for text in (_value(_value(parsed, "extras") or {}, "warnings") or [])[:20]:
        text = str(text)
        found = _WARNING_TYPE.match(text)
        links.append(_Link(found.group(1) if found else None,
                           text[found.end():] if found else text, OTHER_LINK_WEIGHT,
                           is_warning=True))
    return links


def _match_patterns(index: MatchIndex, links: list[_Link], phase: str | None,
                    raising_code: str | None = None, any_case: bool = False,
                    retold: bool = False, context: str = "") -> list[_Candidate]:
    best: dict[str, _Candidate] = {}
    for link in links:
        # A page or a terminal may break a long message inside a sentence; a pattern
        # that misses the message as printed is tried on it with the breaks joined.
        unwrapped = _LINE_BREAK.sub(" ", link.text) if "\n" in link.text else link.text
        # A terminal that wraps at its width may pad the cut with spaces, inside a word
        # ("from che          ckpoint") or between two: both readings are tried.
        if _PADDING.search(unwrapped):
            unwrapped = _PADDING.sub("", unwrapped) + "\n" + _PADDING.sub(" ", unwrapped)
        # TH printed a CUDA call's status as "(59) : …"; retold, the space is often lost.
        if _CODE_COLON.search(unwrapped):
            unwrapped = unwrapped + "\n" + _CODE_COLON.sub(r"(\1) :", unwrapped)
        lowered = link.text.lower()
        lowered_unwrapped = unwrapped.lower() if unwrapped is not link.text else lowered
        closed = None if link.text.rstrip().endswith(".") else link.text.rstrip() + "."
        # A value blanked by hand ("(pid XXX)", "module.xxx") is read with a value there.
        blanks = filled(unwrapped)
        lowered_blanks = blanks.text.lower() if blanks else ""
        for pattern in index.patterns:
            if any_case and len(pattern.literal) < ANY_CASE_LITERAL:
                continue
            inside = getattr(pattern.pattern, "inside", None)
            if inside and not pattern.pattern.raised_inside(context):
                continue
            if pattern.literal and pattern.literal not in lowered and (
                    pattern.literal not in lowered_unwrapped) and not (
                    closed and pattern.literal[-1:] == "." and closed.lower().endswith(
                        pattern.literal)) and pattern.literal not in lowered_blanks:
                continue
            searched = link.text
            found = pattern.search(link.text, any_case)
            if not found and unwrapped is not link.text:
                searched, found = unwrapped, pattern.search(unwrapped, any_case)
            if not found and closed and pattern.pattern.regex.endswith("\\."):
                # The full stop that ends torch's sentence is what a quote drops first.
                searched, found = closed, pattern.search(closed, any_case)
            filled_in = None
            if not found and blanks is not None:
                searched = blanks.text
                found = filled_in = pattern.search(blanks.text, any_case)
            if not found:
                continue
            link_type = link.exc_type or _typed_line(searched, found.start())
            type_agrees = pattern.exc_type is not None and _same_type(pattern.exc_type,
                                                                      link_type)
            # A message retyped by hand in other letter case is a weaker sign: no type tier.
            type_agrees = type_agrees and not any_case and not retold
            # A kernel assertion names the failed bound itself: it is stronger evidence
            # than the generic "device-side assert triggered" it caused, type or not.
            tier = TIER_TYPE_AND_REGEX if type_agrees or link.is_assertion else TIER_REGEX
            # A message retyped by hand is recognised through a stored wording: that tier.
            tier = TIER_MESSAGE if retold else tier
            category = getattr(pattern.entry, "category", "")
            phase_agrees = bool(phase) and _CATEGORY_PHASE.get(category) == phase
            phase_disagrees = bool(phase) and category in _PHASE_BOUND and not phase_agrees
            score = tier + SPECIFICITY_WEIGHT * pattern.specificity
            score += ASSERT_BONUS if link.is_assertion else 0.0
            score += PHASE_BONUS if phase_agrees else -PHASE_BONUS if phase_disagrees else 0.0
            score = round(score * link.weight, 4)
            if retold:
                reason = ("the message as retyped follows a stored wording; "
                          + _pattern_reason(pattern, False, phase_agrees, link).replace(
                              f"; type differs from {pattern.exc_type}", ""))
            else:
                reason = _pattern_reason(pattern, type_agrees, phase_agrees, link)
            if phase_disagrees:
                reason += f"; not in the {_CATEGORY_PHASE[category].replace('_', ' ')} phase"
            if inside:
                reason += "; raised inside the op it is about"
            fields = {k: v for k, v in found.groupdict().items() if v is not None}
            if filled_in is not None and blanks is not None:
                fields = {k: v for k, v in fields.items()
                          if not blanks.covers(*found.span(found.re.groupindex[k]))}
            candidate = _Candidate(pattern.entry, score, reason, fields,
                                   raised_inside=bool(inside))
            _keep_best(best, candidate)
    if len(best) > 1:
        for candidate in best.values():
            candidate.score = round(candidate.score - CONTESTED_PENALTY, 4)
            candidate.reason += f"; {len(best) - 1} other entries matched too"
        _settle_siblings(list(best.values()), _ops_called(raising_code), phase)
    return list(best.values())


def _settle_siblings(contested: list[_Candidate], called: set[str], phase: str | None) -> None:
    """Entries that matched one wording, told apart by where it was raised."""
    # nll_loss2d, max_pool3d: the op's family, as entries name it.
    called = called | {_DIMENSION_SUFFIX.sub("", op) for op in called}
    for candidate in contested:
        named = called & _entry_ops(candidate.entry)
        in_loader = getattr(candidate.entry, "category", "") == "dataloader"
        if called and in_loader and phase != "data_loading":
            # The user's own line called the op and no frame is the DataLoader's:
            # the sizes met in that call, not in default_collate.
            candidate.score = round(candidate.score - OP_BONUS, 4)
            candidate.reason += "; the raising line is the user's own, outside data loading"
        elif named or candidate.raised_inside:
            # The frame that raised it tells siblings with one wording apart.
            candidate.score = round(candidate.score + OP_BONUS, 4)
            if named:
                candidate.reason += f"; the raising line calls {', '.join(sorted(named))}"


_DIMENSION_SUFFIX = re.compile(r"_?[123]d$")
# An op the raising line calls: torch.stack(…), F.linear(…), x.bmm(…), a @ b.
_CALLED = re.compile(r"\.([a-z_][a-z0-9_]{1,40})\s*\(|(@)")
_ENTRY_OP = re.compile(r"\btorch\.(?:nn\.functional\.)?([a-z_][a-z0-9_]{1,40})|\bnn\.([A-Za-z]\w{1,40})")


def _ops_called(code: str | None) -> set[str]:
    """The ops the user's raising line calls, lower-cased (``@`` reads as matmul)."""
    if not code:
        return set()
    return {"matmul" if found.group(2) else found.group(1).lower()
            for found in _CALLED.finditer(code[:500])}


# Code a paste shows without frames: an inline `span`, a REPL line, or an indented
# line such as the source line Python prints above the error; or a notebook cell, the
# lines under its `In [5]:` prompt.
_SHOWN_CODE = re.compile(r"`([^`\n]{1,300})`|^(?:>>> |[ \t]{2,})(\S[^\n]{0,300})$"
                         r"|^In \[\d{0,6}\]:[ \t]*((?:\n?[^\n]{1,300}){1,20})", re.MULTILINE)
# A span that is code: a call, an attribute, an index, an assignment or an operator on a
# name. A value or a word set as code (`[16, 2]`, `Long`) says nothing of where it raised.
_STATEMENT = re.compile(r"[A-Za-z_]\w*\s*[(.\[]|[=@+*/-]")
# The statement typed at the interpreter's prompt: a <stdin> frame prints no code line.
_REPL_LINE = re.compile(r"^>>> (\S[^\n]{0,300})$", re.MULTILINE)


_LOADER_SHOWN = re.compile(r"torch[/\\]+utils[/\\]+data[/\\]|\bdefault_collate\b|"
                           r"\bin DataLoader worker process\b")


def _raising_code(parsed: object, text: str) -> str | None:
    """The user's line that raised: the last user frame's code, or, in a paste with
    no frames at all, the code it shows (the line quoted above the message, the
    statement named in the prose) — where the user says the error came from."""
    user_frame = _value(parsed, "user_frame")
    if user_frame is not None or _value(parsed, "frames"):
        code = _value(user_frame, "code")
        if code is None and str(_value(user_frame, "file") or "") == "<stdin>":
            typed = _REPL_LINE.findall(text[-4000:])
            return typed[-1] if typed else None
        return code
    tail = text[-4000:]
    shown = ["".join(group or "" for group in found.groups()) for found in _SHOWN_CODE.finditer(tail)
             if not (found.group(2) and _in_a_block(tail, found.start()))]
    return "\n".join(span for span in shown if _STATEMENT.search(span)) or None


def _in_a_block(text: str, start: int) -> bool:
    """Whether the indented line at ``start`` is the body of a block the paste shows
    (under ``def decode(x):`` or ``for x in loader:``): the person's program, not the
    source line Python prints above an error."""
    end = text.find("\n", start)
    line = text[start:end if end >= 0 else None]
    indent = len(line) - len(line.lstrip())
    for above in reversed(text[:start].splitlines()[-40:]):
        if not above.strip():
            continue
        if len(above) - len(above.lstrip()) < indent:
            return bool(_BLOCK_HEADER.match(above))
    return False


_BLOCK_HEADER = re.compile(r"\s*(?:async\s+)?(?:def|class|for|while|if|elif|else|with|try|except|finally)"
                           r"\b[^\n]*:\s*(?:#[^\n]*)?$")


def _raising_context(parsed: object, text: str, code: str | None) -> str:
    """Where the error was raised, for a pattern that holds only inside one op
    (``inside``): the user's raising line and the functions of the frames under it
    (torch's ``cross_entropy`` and ``log_softmax`` below ``loss = criterion(out, y)``);
    in a paste that shows neither frames nor code, its words ("calling the criterion
    on them gives"), which are then all it says of where."""
    frames = list(_value(parsed, "frames") or []) if parsed is not None else []
    users = [i for i, frame in enumerate(frames) if _value(frame, "is_user")]
    below = frames[users[-1] + 1:] if users else frames
    parts = [code or ""] + [str(_value(frame, "function") or "") for frame in below]
    # torch's own module file names the op family its frame runs (torch/nn/modules/conv.py
    # calls a convolution from a method named ``forward``): a traceback cut before F.conv2d.
    parts += [found.group(1) for frame in below
              if (found := _TORCH_MODULE_FILE.search(str(_value(frame, "file") or "")))]
    if not frames and not code:
        parts.append(_WARNING_LINE.sub("", text[-2000:]))
    return "\n".join(part for part in parts if part)


_TORCH_MODULE_FILE = re.compile(r"[/\\]torch[/\\](?:[\w.]{1,60}[/\\]){0,6}(\w{1,60})\.py$")


def _entry_ops(entry: object) -> set[str]:
    """The ops an entry is about: those its title names as code (``torch.stack``,
    ``nn.Linear``) and the words of its id's slug (``shape.bmm_batch``: bmm, batch)."""
    title = str(getattr(entry, "title", "") or "")
    named = {(a or b).lower() for a, b in _ENTRY_OP.findall(title)}
    return named | set(str(entry.id).rsplit(".", 1)[-1].split("_"))


_DEVICE_ASSERT = "device-side assert triggered"
# A paste that speaks of an assertion, in words or in torch's: a condition it quotes is the
# kernel's, whose own line it left out.
_ASSERTION_TOLD = re.compile(r"\bassert(?:ion|ions|ed|s)?\b|断言|アサーション|어설션", re.IGNORECASE)
_PADDING = re.compile(r"(?<=\S) {8,}(?=\S)")
_CODE_COLON = re.compile(r"\((\d{1,4})\):(?= )")
_LINE_BREAK = re.compile(r"[ \t]*\n[ \t]*")
# "file.py:134: UserWarning: …" and the source line Python prints under it.
_WARNING_LINE = re.compile(r"^[^\n]{0,1000}:\d{1,9}: \w{0,100}Warning: [^\n]*(?:\n[ \t]+[^\n]*)?",
                           re.MULTILINE)


# In text the parser read no error from (warnings only, a raw log), the type printed
# before a message on its own line is that message's type: "UserWarning: volatile was
# removed…" is a UserWarning whatever else the paste holds.
_LINE_TYPE = re.compile(r"\b(\w{1,60}(?:Warning|Error|Exception)):[ \t]*$")


def _typed_line(text: str, start: int) -> str | None:
    line_start = text.rfind("\n", 0, start) + 1
    found = _LINE_TYPE.search(text[max(line_start, start - 200):start])
    return found.group(1) if found else None


def _same_type(expected: str, actual: str | None) -> bool:
    """Whether the paste's exception type is the pattern's: the same name, or one of
    torch's narrower types and the base an older release raised the same message as
    (``DistNetworkError`` was a ``RuntimeError``, ``ModuleAttributeError`` an
    ``AttributeError``)."""
    if not actual:
        return False
    expected, actual = expected.rsplit(".", 1)[-1], actual.rsplit(".", 1)[-1]
    return (expected == actual or TORCH_EXCEPTION_BASES.get(expected) == actual
            or TORCH_EXCEPTION_BASES.get(actual) == expected)


# torch's own exception types and the built-in each derives from (a test checks them
# against torch): the doctor never imports torch to ask.
TORCH_EXCEPTION_BASES = {
    "OutOfMemoryError": "RuntimeError", "AcceleratorError": "RuntimeError",
    "DistError": "RuntimeError", "DistBackendError": "RuntimeError",
    "DistNetworkError": "RuntimeError", "DistStoreError": "RuntimeError",
    "TorchRuntimeError": "RuntimeError", "TritonMissing": "RuntimeError",
    "BackendCompilerFailed": "RuntimeError", "InductorError": "RuntimeError",
    "Unsupported": "RuntimeError", "ModuleAttributeError": "AttributeError",
}


def _pattern_reason(pattern: _CompiledPattern, type_agrees: bool, phase_agrees: bool,
                    link: _Link) -> str:
    parts = [f"pattern {pattern.index + 1} matched"]
    if link.is_assertion:
        parts[0] += " the CUDA assertion line"
    elif link.is_warning:
        parts[0] += " a warning printed beside the error (the error itself is not recognised)"
    elif link.weight < 1.0:
        parts[0] += " another link of the exception chain (not the root cause)"
    if type_agrees:
        parts.append(f"exception type {pattern.exc_type} agrees")
    elif pattern.exc_type:
        parts.append(f"type differs from {pattern.exc_type}")
    if phase_agrees:
        parts.append("phase agrees")
    parts.append(f"specificity {pattern.specificity:.2f}")
    return "; ".join(parts)


def _keep_best(best: dict[str, _Candidate], candidate: _Candidate) -> None:
    key = str(candidate.entry.id)
    current = best.get(key)
    if current is None or candidate.score > current.score:
        best[key] = candidate


def _match_messages(index: MatchIndex, texts: list[str], phase: str | None = None,
                    where: str | None = None) -> list[_Candidate]:
    """A fragment of a message: a stored older wording it lies in, or the whole of a
    pattern's long fixed phrase. Siblings that share the phrase are told apart by the
    ops ``where`` (the raising line, or the paste's words when it shows no code) calls."""
    normalised = [_normalise(text) for text in texts if text]
    best: dict[str, _Candidate] = {}
    for message in index.messages:
        if not message.normalised:
            continue
        if any(message.normalised in text for text in normalised):
            shown, share = len(message.normalised), 1.0
        else:
            # A fragment says as much as its own length; of the stored wordings it lies
            # in, the one it is the largest part of is the likeliest (the others add
            # details the paste does not show).
            cut = [len(_cut_short(text)) for text in normalised
                   if len(text) >= 12 and _covers(text, message)]
            if not cut:
                continue
            shown = max(cut)
            share = shown / len(message.normalised)
        specificity = shown / (shown + 40)
        score = round(TIER_MESSAGE + SPECIFICITY_WEIGHT * specificity + SHARE_WEIGHT * share, 4)
        _keep_best(best, _Candidate(message.entry, score,
                                    "wording of an older torch release matched", {}))
    for pattern, phrase in index.phrases():
        # A fragment of the message people copy ("Kernel size can't be greater than actual
        # input size", without the sizes before it) is still the message when it holds the
        # whole of a long fixed phrase that every match of the pattern contains.
        if str(pattern.entry.id) in best:
            continue
        if any(phrase in text for text in normalised) and index.distinctive(phrase, pattern):
            specificity = len(phrase) / (len(phrase) + 40)
            score = round(TIER_MESSAGE + SPECIFICITY_WEIGHT * specificity, 4)
            _keep_best(best, _Candidate(pattern.entry, score,
                                        "the fixed wording of a pattern matched", {}))
    if len(best) > 1:
        _settle_siblings(list(best.values()), _ops_called(where), phase)
    return list(best.values())


def _match_retyped(index: MatchIndex, links: list[_Link], phase: str | None,
                   raising_code: str | None, context: str = "") -> list[_Candidate]:
    """A message retyped by hand (a word joined, changed or in other letter case),
    rewritten along the stored wording it follows (``retyped.py``) and matched by the
    patterns at the wording tier; so is one a page printed machine-translated, in the
    words torch wrote (``translated.py``), as it stands or as retyped."""
    retold = []
    for link in links:
        if link.is_assertion:
            continue
        english = translated.english(link.text)
        texts = [english] if english else []
        texts += [text for source in (link.text, *texts)
                  for text in retyped.restore(source, index.wordings)]
        retold += [_Link(link.exc_type, text, link.weight) for text in texts]
    return (_match_patterns(index, retold, phase, raising_code, retold=True, context=context)
            if retold else [])


def _match_raise_sites(index: MatchIndex, parsed: object) -> list[_Candidate]:
    """A traceback cut before its message, ending in a library function whose every
    raise is one entry's error (its ``raised_in``): the innermost frame is that function,
    or calls it from the same file (the frame below it was cut too)."""
    frames = _value(parsed, "frames") or []
    if not frames or not index.raise_sites:
        return []
    innermost = frames[-1]
    file = str(_value(innermost, "file") or "").replace("\\", "/")
    called = set(_CALLED_NAME.findall(str(_value(innermost, "code") or "")[:500]))
    best: dict[str, _Candidate] = {}
    for entry, site in index.raise_sites:
        path, function = site.rsplit(":", 1)
        if not (file == path or file.endswith("/" + path)):
            continue
        if function == _value(innermost, "function") or function in called:
            reason = (f"the traceback, cut before its message, ends in {site}, which raises "
                      "only this error")
            _keep_best(best, _Candidate(entry, round(TIER_MESSAGE + SPECIFICITY_WEIGHT / 2, 4),
                                        reason, {}))
    return list(best.values())


_CALLED_NAME = re.compile(r"\b([A-Za-z_]\w{0,80})\s*\(")


def _quoted(text: str) -> list[str]:
    """What a description puts in quotes or backticks: where no error line stands on its
    own, a quoted phrase is most often the message, copied in part ("fails with "expected
    all tensors to be on the same device"")."""
    return [match.group(1) for match in _QUOTED.finditer(text[-TEXT_LIMIT:])]


# One line's span between matching quotes; bounded, so one pass over the text.
_QUOTED = re.compile(r"[\"“”`'‘’「『]([^\"“”`'‘’「」『』\n]{12,300})[\"“”`'‘’」』]")


def _covers(text: str, message: _CompiledMessage) -> bool:
    """Whether a message cut short is this older wording: it lies inside it and is a
    phrase of its own (``FRAGMENT_LITERAL`` characters) or most of it. "cuda runtime
    error (" or "out of memory" lie inside many stored messages and name none of them."""
    text = _cut_short(text)
    return text in message.normalised and (len(text) >= FRAGMENT_LITERAL
                                           or 2 * len(text) >= len(message.normalised))


def prose_score(found: symptoms.SymptomMatch) -> float:
    """The score of an entry whose symptoms matched: its pieces of evidence and the words
    it names, both read off the text (see EVIDENCE_WEIGHT)."""
    return round(TIER_SYMPTOM + EVIDENCE_WEIGHT * (1 - 0.5 ** found.pieces)
                 + NAMED_WEIGHT * found.named / (found.named + NAMED_HALF), 4)


def _match_prose(index: MatchIndex, text: str) -> list[_Candidate]:
    candidates = []
    for found in symptoms.match_symptoms(text, index.symptom_entries):
        reason = f"{len(found.matched)} of {found.total} symptom phrases matched"
        candidates.append(_Candidate(found.entry, prose_score(found), reason, dict(found.fields)))
    return candidates


def _add_resemblance(candidates: list[_Candidate], resembling: list[_Candidate]) -> None:
    """The entries a description's facets place, after those its phrases named: a phrase
    hit says more than a resemblance (so the order of those stays), and the facets fill
    the list with what such reports most often turn out to be."""
    named = {str(candidate.entry.id) for candidate in candidates}
    candidates.extend(found for found in resembling if str(found.entry.id) not in named)


def _match_resemblance(index: MatchIndex, text: str) -> list[_Candidate]:
    """The entries whose real reports read most like a description no phrase matched."""
    shown, words = report_reading(text)
    if not tells_a_symptom(shown):
        return []  # the entries' profiles are built only for a text that tells a symptom
    candidates = []
    for found in index.facets.rank(shown, words):
        typical = ", ".join(name.split(".", 1)[1].replace("_", " ") for name in found.typical)
        reason = ("none of its symptom phrases matched; the description reads like its reports"
                  + (f" ({typical})" if typical else "") + f", likelihood share {found.probability:.2f}")
        candidates.append(_Candidate(found.entry, round(TIER_RESEMBLANCE + RESEMBLANCE_WEIGHT
                                                        * found.probability, 4), reason, {},
                                     kind="reads_like"))
    return candidates


# A 10 MB log holds the error near its end; prose and raw-text fallbacks look
# only at the tail, as much of it as a knowledge-base regex may see.
def diagnose(text: str, kb: object) -> Diagnosis:
    """Parse ``text`` and rank the knowledge base's entries for it, best first."""
    from torchdoctor.parse import parse_traceback

    index = index_for(kb)
    text = strip_controls(text)
    parsed = parse_traceback(text)
    tail = text[-TEXT_LIMIT:]
    candidates: list[_Candidate] = []
    prose_fields: dict = {}
    if parsed is not None:
        links = _links(parsed, tail)
        if not links[0].text.strip():
            # A traceback cut before its exception line, with no error line anywhere:
            # the words that name the error can only be in the prose or the frames (not
            # in a warning printed on the way, which is not the error).
            links.append(_Link(None, _WARNING_LINE.sub("", tail), 1.0))
        # Without frames the parser cannot judge the phase; do not hold "other" against it.
        phase = _value(parsed, "phase") if _value(parsed, "frames") else None
        if phase is None and _LOADER_SHOWN.search(tail):
            # Frames in a form the parser does not read (IPython's, a quoted path)
            # still show the DataLoader's own code.
            phase = "data_loading"
        code = _raising_code(parsed, tail)
        context = _raising_context(parsed, tail, code)
        candidates = (_match_patterns(index, links, phase, code, context=context)
                      or _match_patterns(index, links, phase, code, any_case=True,
                                         context=context))
        if not candidates:
            candidates = _match_messages(index, [link.text for link in links], phase,
                                         code or context)
        if not candidates:
            candidates = _match_retyped(index, links, phase, code, context)
        if not candidates and not links[0].text.strip():
            candidates = _match_raise_sites(index, parsed)
        if not candidates and _value(parsed, "type") not in (None, "RuntimeError"):
            # torch warned before an error nothing recognises, of a type torch's own
            # failures seldom take (scikit-learn's ValueError on the broadcast loss's
            # output, a TypeError from the call the warning was about): the warning names
            # the cause, as a link that is not the error itself. An unknown RuntimeError is
            # most likely torch's own in a wording the entries lack, and its words say more.
            candidates = _match_patterns(index, _warning_links(parsed), phase, code,
                                         context=context)
    else:
        candidates = (_match_patterns(index, [_Link(None, tail, 1.0),
                                              *_retold_assertions(None, "", tail)], None,
                                      context=_raising_context(None, tail, None))
                      or _match_messages(index, [tail, *_quoted(tail)]))
    if candidates:
        prose = _prose_around(parsed, tail)
        _decide_by_words(candidates, prose)
        # The message's numbers beside the settings the person names (a channel count
        # that is the batch size), and the torch versions the paste names beside what
        # failed (an OOM under 0.4.0 in code that ran under 0.3.0), say how it came
        # about as the person's words would.
        top = max(candidates, key=lambda c: (c.score, str(c.entry.id)))
        _refine_by_prose(index, candidates,
                         "\n".join([prose, *message_numbers.readings(top.fields, tail),
                                     *torch_versions.readings(tail)]))
    kind = "traceback" if parsed is not None or candidates else "symptom"
    message = str(_value(parsed, "message") or "") if parsed is not None else tail
    if not candidates and parsed is not None and (_value(parsed, "type") is None
                                                  or not message.strip()):
        # A sentence that merely reads like an error ("runs out of memory") is prose,
        # and so is all a paste says of an error whose message it lost: the whole
        # description is read for symptoms, not that one sentence (nor the warnings
        # printed on the way).
        message = _WARNING_LINE.sub("", tail)
    if not candidates:
        # An unknown error's message can still name a symptom ("returned nan values");
        # the rest of a traceback (code lines, paths) would only add false hits. A paste
        # of the message alone, with no frames, is the person's account around it ("my own
        # BCE with torch.log, then ZeroDivisionError"): read with it.
        if parsed is not None and _value(parsed, "type") and not _value(parsed, "frames"):
            message = message + "\n" + _prose_around(parsed, tail)
        prose_fields = symptoms.extract_numbers(message)
        candidates = _match_prose(index, message)
        if parsed is None or not _value(parsed, "type"):
            # A description with no error in it: the entries its facets place, beside
            # (and below) the ones its phrases named.
            _add_resemblance(candidates, _match_resemblance(index, message))
    other_library = raised_by(parsed)
    if not candidates and other_library is not None:
        # Another library failed on what torch produced (a histogram of NaN weights, a
        # metric of empty predictions): the torch symptom is in the person's own words
        # around its traceback ("the loss is nan from the start").
        prose = _prose_around(parsed, tail)
        prose_fields = symptoms.extract_numbers(prose)
        candidates = _match_prose(index, prose)
    candidates.sort(key=lambda c: (-c.score, str(c.entry.id)))
    matches = [_build_match(c, prose_fields, message) for c in candidates]
    diagnosis = Diagnosis(kind, text, parsed, matches, prose_fields, raised_by=other_library)
    if not matches:
        _add_similar(diagnosis, index, similar.query_text(parsed, tail), prose_fields, message)
    return diagnosis


def _prose_around(parsed: object, text: str) -> str:
    """What the person wrote around the error: the paste without its traceback's frame
    lines and without the message's own words (those the message's entry read), its
    exception's name among them (``torch._dynamo.exc.Unsupported:`` is torch's, not a
    description of a graph break)."""
    if parsed is None or _value(parsed, "type") is None:
        # No error line: the "message" is the person's own sentence; the warnings torch
        # printed (and the source line under each) are program output, not their words.
        return _WARNING_LINE.sub("", text)
    # A match starts only where a word starts, and each dotted part is bounded: a run of
    # 60,000 word characters is then one failed attempt, not one per position.
    named = re.compile(r"(?<![\w.])(?:[A-Za-z_]\w{0,80}\.){0,12}"
                       + re.escape(str(_value(parsed, "type")).rsplit(".", 1)[-1]) + r"\s*:")
    said = sorted({line.strip() for line in str(_value(parsed, "message") or "").splitlines()
                   if line.strip()}, key=len, reverse=True)
    frames = _value(parsed, "frames") or []
    shown = sorted({str(_value(frame, "file") or "") for frame in frames} - {""})[:50]
    codes = {str(_value(frame, "code") or "").strip() for frame in frames} - {""}
    # A frame line names its file with a line number ('File "test.py", line 94',
    # "manolayer.py:196"); the person's own sentence may name the script it ran.
    frame_lines = [re.compile(re.escape(path) + _LINE_NUMBER_AFTER) for path in shown]
    kept = []
    for line in text.splitlines():
        if _TRACEBACK_HEAD.match(line) or line.strip() in codes or any(
                path in line and frame.search(line) for path, frame in zip(shown, frame_lines)):
            continue
        for part in said:
            line = line.replace(part, " ")
        kept.append(named.sub(" ", line))
    return "\n".join(kept)


_TRACEBACK_HEAD = re.compile(r"\s*Traceback \(most recent call last\)")
_LINE_NUMBER_AFTER = r"""["']?(?:,\s*line\s*|:)\d"""


# A failure placed at the start of a phase (validation starts and memory climbs) is that
# phase's working set meeting the limit, not something that built up over the run.
_PHASE_START = re.compile(
    r"\b(?:(?:validation|evaluation|eval|testing|test loop)\s+(?:starts|begins|started|began)"
    r"|(?:as soon as|when|once|right after)\s+(?:the\s+)?(?:validation|evaluation|eval|testing)"
    r"\s+(?:starts|begins|started|began|kicks in))\b", re.IGNORECASE)


def _decide_by_words(candidates: list[_Candidate], prose: str) -> None:
    """Several entries' patterns matched one message: the person's words may tell them apart.

    The message alone cannot say whether sizes failed to match in a batch the DataLoader
    stacked or in the user's own concatenation; "the images have different sizes" or "a
    fixed image size fixes it" can. When the words around the message match the symptoms
    of one of the contenders, that one ranks just above the best of them. The contenders
    have already lost ``CONTESTED_PENALTY``; nothing else changes.
    """
    if len(candidates) < 2 or not prose.strip():
        return
    found = symptoms.match_symptoms(prose, [c.entry for c in candidates])
    if not found:
        return
    top = min(candidates, key=lambda c: (-c.score, str(c.entry.id)))  # the order shown
    chosen = next(c for c in candidates if c.entry is found[0].entry)
    if chosen is top:
        return
    chosen.score = round(top.score + 0.01, 4)
    chosen.reason += (f"; the words around the message match its symptoms "
                      f"({len(found[0].matched)} of {found[0].total} phrases)")


def _refine_by_prose(index: MatchIndex, candidates: list[_Candidate], prose: str) -> None:
    """A message says what failed; the words around it may say how it came about.

    The entry a message names may declare, in its hypotheses' ``explained_by``, the
    entries whose causes produce it (a CUDA OOM after memory grew step by step, missing
    keys that a ``torch.compile`` prefix renamed). When the person's own words around
    the message match the symptoms of one of those ("memory climbs until", "_orig_mod"),
    it is the more specific reading of the same failure: it ranks just above the
    message's entry, and both lose ``CONTESTED_PENALTY``, since two readings compete.
    Not when the words place the failure at the start of a phase (``_PHASE_START``).
    """
    top = max(candidates, key=lambda c: (c.score, str(c.entry.id)))
    causes = {str(ref).split("/", 1)[0]
              for hypothesis in _value(top.entry, "hypotheses") or []
              for ref in _value(hypothesis, "explained_by") or []}
    known = {str(c.entry.id) for c in candidates}
    refining = [entry for entry in index.symptom_entries
                if str(entry.id) in causes and str(entry.id) not in known]
    if _PHASE_START.search(bounded(prose)):
        return  # the failure came with the phase's own working set, which the message names
    found = symptoms.match_symptoms(prose, refining) if refining and prose.strip() else []
    if not found:
        return
    best = found[0]
    for candidate in candidates:
        candidate.score = round(candidate.score - CONTESTED_PENALTY, 4)
    reason = (f"the words around the message say how it came about ({len(best.matched)} of "
              f"{best.total} symptom phrases matched); {top.entry.id} names what failed")
    candidates.append(_Candidate(best.entry, round(top.score + 0.01, 4), reason,
                                 dict(best.fields)))


def _add_similar(diagnosis: Diagnosis, index: MatchIndex, query: str, prose_fields: dict,
                 message: str) -> None:
    """The closest entries by their words, marked as resemblance, not recognition."""
    found = index.similarity.rank(query)
    for resemblance in found:
        reason = ("similar, not recognised: shares "
                  + ", ".join(repr(word) for word in resemblance.shared)
                  + f" (similarity {resemblance.similarity:.2f})")
        match = _build_match(_Candidate(resemblance.entry, resemblance.score, reason, {}),
                             prose_fields, message)
        match.kind = "similar"
        diagnosis.similar.append(match)
    diagnosis.question = similar.telling_question([r.entry for r in found])


def _build_match(candidate: _Candidate, prose_fields: dict, message: str) -> Match:
    fields = {**prose_fields, **candidate.fields}
    added = derived_facts.derive(_value(candidate.entry, "derive") or [], fields, message)
    sentences = added.pop(derived_facts.FACTS_KEY, [])
    fields.update(added)
    return Match(
        entry=candidate.entry,
        score=candidate.score,
        reason=candidate.reason,
        fields=fields,
        facts=sentences,
        hypotheses=render_hypotheses(candidate.entry, fields),
        kind=candidate.kind,
    )
