"""How often each entry's reports show each facet and use each word.

Two sources. The prose reports of the corpus of real pastes (``tests/corpus``),
each labelled with the entry its thread settled on, counted once into
``reports.json`` beside this module by ``python -m torchdoctor.facets.profiles
tests/corpus`` (a test keeps the file in step with the corpus). And each entry's
own words (its title, its hypotheses' statements and the words its symptom
phrases spell), counted as ``OWN_WORDS_AS_REPORTS`` reports, so an entry no
report has reached yet, or one from a user's directory, still has a profile.

``reports.json`` is data: it is read as JSON, checked for its shape, and an entry
it names that the knowledge base lacks is ignored.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from torchdoctor.facets.reading import report_reading
from torchdoctor.facets.vocabulary import NAMES, facets_of
from torchdoctor.facets.words import report_words
from torchdoctor.symptoms import phrases, spelled_words

REPORTS_FILE = Path(__file__).resolve().parent / "reports.json"
# An entry's own words count as this many reports: what the knowledge base says of
# a symptom weighs more than one person's account of it, and less than a family's.
OWN_WORDS_AS_REPORTS = 2
_PROSE_ONLY = "prose_only"


@dataclass
class Profile:
    """An entry's reports: ``reports`` of them, ``seen[facet]`` showing a facet,
    ``words[word]`` using a word; and the words of the entry's own account of its
    symptom (``own``), which the ranking weighs as ``OWN_WORDS_AS_REPORTS`` reports
    but counts once among the reports that use a word (one entry's vocabulary, not a
    word many reports share)."""

    reports: int = 0
    seen: Counter = field(default_factory=Counter)
    words: Counter = field(default_factory=Counter)
    own: frozenset[str] = frozenset()

    def add(self, found: Iterable[str], words: Iterable[str] = (), times: int = 1) -> None:
        self.reports += times
        for name in found:
            self.seen[name] += times
        for word in words:
            self.words[word] += times


def own_words(entry: object) -> str:
    """What an entry says of its symptom in its own words."""
    parts = [str(getattr(entry, "title", ""))]
    parts += [str(getattr(h, "statement", "")) for h in getattr(entry, "hypotheses", None) or []]
    for regex in getattr(entry, "symptoms", None) or []:
        parts += [" ".join(spelled_words(branch))
                  for branch in phrases(str(getattr(regex, "regex", regex)))]
    return "\n".join(parts)


def profiles_for(entries: Iterable[object], reports: dict[str, Profile]) -> dict[str, Profile]:
    """Each entry with symptoms: its real reports' facets and words, and its own words'
    (English already, and without a report's numbers, so read as they are)."""
    built = {}
    for entry in entries:
        if not getattr(entry, "symptoms", None):
            continue
        known = reports.get(str(entry.id))
        profile = (Profile(known.reports, Counter(known.seen), Counter(known.words)) if known
                   else Profile())
        own = own_words(entry)
        profile.add(facets_of(own), times=OWN_WORDS_AS_REPORTS)
        profile.own = report_words(own)
        built[str(entry.id)] = profile
    return built


def count_reports(labelled: Iterable[tuple[str, str]]) -> dict[str, Profile]:
    """Profiles from ``(entry id, report text)`` pairs."""
    counted: dict[str, Profile] = {}
    for entry_id, text in labelled:
        counted.setdefault(entry_id, Profile()).add(*report_reading(text))
    return counted


def load_reports(path: Path = REPORTS_FILE) -> dict[str, Profile]:
    """The counted reports; a missing or malformed file reads as none (every entry then
    keeps the profile of its own words)."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    entries = raw.get("entries") if isinstance(raw, dict) else None
    if not isinstance(entries, dict):
        return {}
    known = set(NAMES)
    loaded = {}
    for entry_id, counts in entries.items():
        if not (isinstance(counts, dict) and _a_count(counts.get("reports"))
                and isinstance(counts.get("seen"), dict)):
            continue
        seen = Counter({name: count for name, count in counts["seen"].items()
                        if name in known and _a_count(count) and count <= counts["reports"]})
        words = counts.get("words")
        words = Counter({word: count for word, count in words.items()
                         if isinstance(word, str) and _a_count(count) and count <= counts["reports"]}
                        if isinstance(words, dict) else {})
        loaded[str(entry_id)] = Profile(counts["reports"], seen, words)
    return loaded


def _a_count(value: object) -> bool:
    """A number of reports: a whole number above zero (JSON's true is no count; none or
    fewer reports would leave the ranking a share it cannot take the log of)."""
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def dumps(reports: dict[str, Profile]) -> str:
    """``reports.json``'s text: stable order, so a rebuild of the same corpus is the same
    file. Every word is kept, even one a single report uses: the entries' own words,
    which the ranking counts beside them, may use it too."""
    return json.dumps({
        "facets": list(NAMES),
        "entries": {entry_id: {"reports": profile.reports, "seen": dict(sorted(profile.seen.items())),
                               "words": dict(sorted(profile.words.items()))}
                    for entry_id, profile in sorted(reports.items())},
    }, indent=1, ensure_ascii=True) + "\n"


def corpus_reports(folder: Path) -> list[tuple[str, str]]:
    """The labelled prose-only reports of a corpus folder (``<group>/<case>.yaml``)."""
    import yaml

    labelled = []
    for path in sorted(folder.glob("*/*.yaml")):
        case = yaml.safe_load(path.read_text(encoding="utf-8"))
        if not (isinstance(case, dict) and _PROSE_ONLY in (case.get("form") or [])
                and isinstance(case.get("paste"), str)):
            continue
        # A case whose entry was still missing names the one it wanted; once that entry
        # exists, its reports are that entry's (profiles_for ignores ids it lacks).
        wanted = case.get("wanted_entry")
        entry_id = case.get("entry") or (wanted.get("id") if isinstance(wanted, dict) else None)
        if isinstance(entry_id, str):
            labelled.append((entry_id, case["paste"]))
    return labelled


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m torchdoctor.facets.profiles CORPUS_FOLDER", file=sys.stderr)
        return 2
    REPORTS_FILE.write_text(dumps(count_reports(corpus_reports(Path(argv[0])))), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
