"""Rank entries by how well a report's facets fit their reports' profiles.

Naive Bayes over the facets: an entry's likelihood multiplies, for each facet, the
share of its reports that show it (smoothed by ``SMOOTHING`` reports each way) when
the report shows it, and the share that do not when it does not. Absence says much
less than presence (a person names what they see and leaves out most of what they
did not), so a facet not shown counts ``ABSENT_WEIGHT`` of its log-odds. The prior,
how many reports an entry has, counts ``PRIOR_WEIGHT`` of its log: common causes
are common, but a report's facets should decide. Settings chosen by five-fold
cross-validation on the corpus's prose reports (``tests/perf/bench_corpus.py``
prints the figure), never on one report.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from torchdoctor.facets.profiles import Profile, load_reports, profiles_for
from torchdoctor.facets.vocabulary import tells_a_symptom

SMOOTHING = 0.5
ABSENT_WEIGHT = 0.4
PRIOR_WEIGHT = 0.3
SHOWN = 3


@dataclass(frozen=True)
class Resemblance:
    """An entry whose reports read like this one: its share of the likelihood among
    the entries ranked, and the report's facets its reports show most often."""

    entry: object
    probability: float
    typical: tuple[str, ...]


class FacetIndex:
    """The profiles of a knowledge base's symptom entries, built once."""

    def __init__(self, entries: list[object], reports: dict[str, Profile] | None = None) -> None:
        self.entries = {str(entry.id): entry for entry in entries if getattr(entry, "symptoms", None)}
        self.profiles = profiles_for(self.entries.values(),
                                     load_reports() if reports is None else reports)
        self.vocabulary = sorted({name for profile in self.profiles.values() for name in profile.seen})
        total = sum(profile.reports for profile in self.profiles.values()) or 1
        self._prior = {entry_id: PRIOR_WEIGHT * math.log(profile.reports / total)
                       for entry_id, profile in self.profiles.items()}
        # Per entry and facet: the log-share shown, and ABSENT_WEIGHT of the log-share not.
        self._shown: dict[str, dict[str, float]] = {}
        self._absent: dict[str, float] = {}
        for entry_id, profile in self.profiles.items():
            shown, absent = {}, 0.0
            for name in self.vocabulary:
                share = (profile.seen[name] + SMOOTHING) / (profile.reports + 2 * SMOOTHING)
                shown[name] = math.log(share) - ABSENT_WEIGHT * math.log(1 - share)
                absent += ABSENT_WEIGHT * math.log(1 - share)
            self._shown[entry_id], self._absent[entry_id] = shown, absent

    def rank(self, found: frozenset[str]) -> list[Resemblance]:
        """The entries whose reports read most like a report with the facets ``found``
        (``vocabulary.facets_of``), best first; none when they tell no symptom."""
        if not tells_a_symptom(found) or not self.profiles:
            return []
        known = [name for name in found if name in self.vocabulary]
        scores = {entry_id: self._prior[entry_id] + self._absent[entry_id]
                  + sum(self._shown[entry_id][name] for name in known)
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
