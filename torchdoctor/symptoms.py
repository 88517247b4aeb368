"""Prose symptoms: "loss stays at 2.30 with 10 classes", "NaN after epoch 6".

When there is no traceback, a person describes what they see. Two jobs
here: read the numbers out of the sentence into the same fields templates
and derived facts use (``loss``, ``classes``, ``epoch``, ``step``, ``lr``,
``num_workers``, ``accuracy``), and find the entries whose ``symptoms:``
regexes (case-insensitive) match the sentence.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from torchdoctor.linear_regex import RegexError, bounded, compile_linear

# Numbers start where a number starts (not inside one) and have bounded digit runs, so a
# run of 20,000 digits costs one short attempt at its start, not one per digit. Python's
# re is kept here for the lookaheads; the text is capped (see extract_numbers).
_NUMBER = r"(?<![\d.])(-?\d{1,18}(?:\.\d{1,18})?(?:[eE][-+]?\d{1,3})?)"
_COUNT = r"\b(\d{1,9})"
# Between a word and its number: no digits, and no "after"/"for" or counter word
# that would hand the number to something else ("loss is NaN after 300 steps",
# "loss is nan at step 0").
_GAP = (r"(?:(?!\b(?:after|for|every|within|by|steps?|epochs?|iter|iterations?|batch)\b)"
        r"[^0-9\n;]){0,30}?")
_NOT_A_COUNT = r"(?!\.?\d|\s*(?:steps?|iter|iterations?|epochs?|batch|classes|workers|%))"

# Each field is read by the first of its patterns that matches.
_FIELD_PATTERNS: dict[str, tuple[str, ...]] = {
    "loss": (
        rf"\bloss(?:es)?\b{_GAP}{_NUMBER}{_NOT_A_COUNT}",
        rf"{_NUMBER}\s+loss\b",
    ),
    "classes": (
        rf"{_COUNT}[\s-]*(?:output\s+)?(?:classes|class\b|categories|labels\b|-way)",
        rf"\b(?:num_classes|n_classes|classes)\s*[=:]\s*{_COUNT}",
    ),
    "epoch": (rf"\bepochs?\s*#?\s*{_COUNT}", rf"{_COUNT}(?:st|nd|rd|th)?\s+epochs?\b"),
    "step": (
        rf"\b(?:step|iteration|iter|batch)(?:es|s)?\s*#?\s*{_COUNT}",
        rf"{_COUNT}(?:st|nd|rd|th)?\s+(?:steps|iterations|iters|batches)\b",
    ),
    "lr": (rf"\b(?:lr|learning[\s_]rate)\s*(?:of|=|:|is|at|to)?\s*{_NUMBER}",),
    "num_workers": (rf"\bnum_workers\s*=?\s*{_COUNT}", rf"{_COUNT}\s+workers\b"),
    "accuracy": (
        rf"\b(?:accuracy|acc)\b{_GAP}{_NUMBER}(?!\s*(?:steps?|epochs?|classes))",
        rf"{_NUMBER}\s*%\s+accuracy",
    ),
}
_COMPILED_FIELDS = {
    name: tuple(re.compile(pattern, re.IGNORECASE) for pattern in patterns)
    for name, patterns in _FIELD_PATTERNS.items()
}


def extract_numbers(text: str) -> dict[str, str]:
    """The numbers a sentence gives, as strings (like regex-captured fields)."""
    found: dict[str, str] = {}
    text = bounded(text)
    for name, patterns in _COMPILED_FIELDS.items():
        for pattern in patterns:
            match = pattern.search(text)
            if match:
                found[name] = match.group(1)
                break
    return found


# A name a log prints a value under: "mask_loss:  nan", "val_acc=0.12", "train_loss 2.3".
_LOGGED_NAME = re.compile(r"\b[A-Za-z]{1,30}(?:_[A-Za-z]{1,30}){1,4}\b(?=[ \t]{0,3}[:=]?[ \t]{0,3}"
                          r"(?:[-+]?\d|nan\b|inf\b))", re.IGNORECASE)


@dataclass
class SymptomMatch:
    """An entry whose symptom regexes matched, and how well."""

    entry: object
    matched: list[str]
    total: int
    specificity: float
    fields: dict[str, str] = field(default_factory=dict)


def _compile(regex: object) -> Any:
    """Symptoms are case-insensitive whatever the pattern object says."""
    try:
        return compile_linear(str(getattr(regex, "regex", regex)), ignore_case=True)
    except RegexError:
        return None


def symptom_regexes(entry: object) -> list[object]:
    return list(getattr(entry, "symptoms", None) or [])


@functools.lru_cache(maxsize=4096)
def phrases(regex: str) -> tuple[str, ...]:
    """The top-level alternatives of a symptom regex, each a phrase of its own.

    ``a|b`` written as one regex says as much as ``a`` and ``b`` written as two: an
    entry that packs its phrases into one alternation must not score a full share
    of its symptoms whichever single phrase a text happens to hit.
    """
    branches, depth, start, escaped, in_class = [], 0, 0, False, False
    for position, char in enumerate(regex):
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif in_class:
            in_class = char != "]"
        elif char == "[":
            in_class = True
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        elif char == "|" and depth == 0:
            branches.append(regex[start:position])
            start = position + 1
    branches.append(regex[start:])
    return tuple(branches) if all(b.strip() for b in branches) else (regex,)


def match_symptoms(text: str, entries: Iterable[object]) -> list[SymptomMatch]:
    """Entries whose symptoms match ``text``, best first.

    Better means more of the entry's symptom regexes matched, then longer
    matched text (a long specific phrase beats a bare keyword), then id.
    """
    results: list[SymptomMatch] = []
    seen = bounded(text)
    # A log names its numbers with identifiers ("mask_loss: nan", "val_acc 0.1"): those
    # are read as words too, so a phrase about the loss finds "mask_loss" as "mask loss".
    words = _LOGGED_NAME.sub(lambda found: found.group(0).replace("_", " "), seen) if (
        "_" in seen) else None
    for entry in entries:
        regexes = symptom_regexes(entry)
        if not regexes:
            continue
        matched: list[str] = []
        captured: dict[str, str] = {}
        matched_chars = total = 0
        for regex in regexes:
            branches = phrases(str(getattr(regex, "regex", regex)))
            total += len(branches)
            if len(branches) > 1 and (whole := _compile(regex)) is not None and not (
                    whole.search(seen) or (words and whole.search(words))):
                continue  # one search settles a miss; branches are only read on a hit
            hits = [(branch, found) for branch in branches
                    if (compiled := _compile(branch)) is not None
                    and (found := compiled.search(seen) or (
                        words and compiled.search(words))) is not None]
            if hits:
                # One phrase of the alternation counts, the longest hit: an entry's
                # phrases that all say the same thing in other words are one symptom.
                branch, found = max(hits, key=lambda hit: len(hit[1].group(0)))
                matched.append(branch)
                matched_chars += len(found.group(0))
                captured.update({k: v for k, v in found.groupdict().items() if v is not None})
        if matched:
            specificity = matched_chars / (matched_chars + 20)
            results.append(SymptomMatch(entry, matched, total, specificity, captured))
    results.sort(key=lambda m: (-len(m.matched), -m.specificity, str(getattr(m.entry, "id", ""))))
    return results
