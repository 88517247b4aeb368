"""Rank entries by how well a report's facets and words fit their reports' profiles.

Naive Bayes over the facets: an entry's likelihood multiplies, for each facet, the
share of its reports that show it when the report shows it, and the share that do
not when it does not. Absence says much less than presence (a person names what
they see and leaves out most of what they did not), so a facet not shown counts
``ABSENT_WEIGHT`` of its log-odds. The prior, how many reports an entry has, counts
``PRIOR_WEIGHT`` of its log: common causes are common, but a report's facets
should decide.

Most entries have a handful of reports, too few to say how often each facet comes
with them. Their shares are drawn toward their category's, as if
``CATEGORY_REPORTS`` reports of the category were theirs too (memory entries'
reports speak of memory, whatever else they say), and the category's toward
every report's, by ``ALL_REPORTS``. Settings chosen by five-fold cross-validation
on the corpus's prose reports (``tests/perf/bench_corpus.py`` prints the figure),
never on one report.

The words (``words.py``) tell apart what the facets cannot: a report's log-likelihood
gains ``WORDS_WEIGHT`` times the cosine between its words and the entry's reports'
words. Chosen the same way: the facets alone place the right entry first for about
six cross-validated reports in ten, the two together for seven.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass

from torchdoctor.facets.profiles import OWN_WORDS_AS_REPORTS, Profile, load_reports, profiles_for
from torchdoctor.facets.vocabulary import tells_a_symptom
from torchdoctor.facets.words import WordIndex

CATEGORY_REPORTS = 2.0
ALL_REPORTS = 5.0
ABSENT_WEIGHT = 0.4
PRIOR_WEIGHT = 0.3
WORDS_WEIGHT = 40.0
SHOWN = 3


@dataclass(frozen=True)
class Resemblance:
    """An entry whose reports read like this one: its share of the likelihood among
    the entries ranked, and the report's facets its reports show most often."""

    entry: object
    probability: float
    typical: tuple[str, ...]


class FacetIndex:
    """The profiles of a knowledge base's symptom entries, facets and words, built once."""

    def __init__(self, entries: list[object], reports: dict[str, Profile] | None = None) -> None:
        self.entries = {str(entry.id): entry for entry in entries if getattr(entry, "symptoms", None)}
        self.profiles = profiles_for(self.entries.values(),
                                     load_reports() if reports is None else reports)
        self.vocabulary = sorted({name for profile in self.profiles.values() for name in profile.seen})
        self.words = WordIndex(self.profiles, OWN_WORDS_AS_REPORTS)
        total = sum(profile.reports for profile in self.profiles.values()) or 1
        self._prior = {entry_id: PRIOR_WEIGHT * math.log(profile.reports / total)
                       for entry_id, profile in self.profiles.items()}
        categories = self._category_shares(total)
        # Per entry and facet: the log-share shown, and ABSENT_WEIGHT of the log-share not.
        self._shown: dict[str, dict[str, float]] = {}
        self._absent: dict[str, float] = {}
        for entry_id, profile in self.profiles.items():
            category = categories[self._category(entry_id)]
            shown, absent = {}, 0.0
            for name in self.vocabulary:
                share = ((profile.seen[name] + CATEGORY_REPORTS * category[name])
                         / (profile.reports + CATEGORY_REPORTS))
                shown[name] = math.log(share) - ABSENT_WEIGHT * math.log(1 - share)
                absent += ABSENT_WEIGHT * math.log(1 - share)
            self._shown[entry_id], self._absent[entry_id] = shown, absent

    def _category(self, entry_id: str) -> str:
        return str(getattr(self.entries[entry_id], "category", ""))

    def _category_shares(self, total: int) -> dict[str, dict[str, float]]:
        """Each category's share of reports showing each facet, drawn toward every
        report's share (itself kept off 0 and 1 by half a report each way)."""
        every = Counter()
        for profile in self.profiles.values():
            every.update(profile.seen)
        overall = {name: (every[name] + 0.5) / (total + 1) for name in self.vocabulary}
        reports: Counter = Counter()
        seen: dict[str, Counter] = {}
        for entry_id, profile in self.profiles.items():
            category = self._category(entry_id)
            reports[category] += profile.reports
            seen.setdefault(category, Counter()).update(profile.seen)
        return {category: {name: (seen[category][name] + ALL_REPORTS * overall[name])
                           / (reports[category] + ALL_REPORTS) for name in self.vocabulary}
                for category in reports}

    def rank(self, found: frozenset[str], words: frozenset[str] = frozenset()) -> list[Resemblance]:
        """The entries whose reports read most like a report with the facets ``found``
        (``vocabulary.facets_of``) and the ``words`` (``words.report_words``), best
        first; none when the facets tell no symptom."""
        if not tells_a_symptom(found) or not self.profiles:
            return []
        known = [name for name in found if name in self.vocabulary]
        closeness = self.words.closeness(words)
        scores = {entry_id: self._prior[entry_id] + self._absent[entry_id]
                  + sum(self._shown[entry_id][name] for name in known)
                  + WORDS_WEIGHT * closeness[entry_id]
                  for entry_id in self.profiles}
        top = max(scores.values())
        weights = {entry_id: math.exp(score - top) for entry_id, score in scores.items()}
        whole = sum(weights.values())
        ranked = sorted(scores, key=lambda entry_id: (-scores[entry_id], entry_id))[:SHOWN]
        return [Resemblance(self.entries[entry_id], weights[entry_id] / whole,
                            self._typical(entry_id, known)) for entry_id in ranked]

    def _typical(self, entry_id: str, known: list[str]) -> tuple[str, ...]:
        """The report's facets most of the entry's reports show, most shown first."""
        profile = self.profiles[entry_id]
        typical = [name for name in known if 2 * profile.seen[name] >= profile.reports]
        return tuple(sorted(typical, key=lambda name: (-profile.seen[name], name)))
