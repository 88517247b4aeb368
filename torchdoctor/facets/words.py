"""The words a report uses, and which entries' reports use the same ones.

The facets say what a report is about, a few dozen broad questions; they cannot
tell "GPU memory grows during validation" (tensors kept alive) from "GPU memory
grows every epoch" (the caching allocator) or a run that hangs in the loader from
one that hangs at a barrier. The words can: "validation", "workers", "barrier",
"dropout", "resume" are what separate entries within one category. Each entry's
word profile is how many of its real reports use each word (and each pair of
neighbouring words), plus its own words (``profiles.own_words``); a report is
compared with every profile by the cosine of their tf-idf vectors, so a word every
report uses ("training", "loss") counts little and one a few entries' reports use
counts much.

A word seen in a single report says nothing about an entry (it is that one
person's), so only words at least two reports or entries use are counted. The
words are read off the English copy of the report (``symptoms.described``), so
reports in the languages the glossary reads are compared in its words.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from itertools import pairwise
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # profiles reads words with report_words: only the type comes back
    from torchdoctor.facets.profiles import Profile

# Seen in fewer reports and entries than this, a word is one person's, not an entry's.
FEWEST_USES = 2
_WORD = re.compile(r"[a-z][a-z0-9_]+")
# Words of every sentence: they tell nothing of a symptom, and their pairs
# ("of the", "it is") would crowd out the pairs that do ("val loss").
_COMMON = frozenset({
    "the", "an", "and", "or", "to", "of", "in", "on", "at", "for", "is", "it", "my", "me", "we",
    "this", "that", "with", "be", "was", "are", "have", "has", "but", "not", "no", "so", "as", "by",
    "from", "if", "when", "after", "while", "then", "than", "do", "does", "did", "can", "could",
    "would", "will", "just", "also", "all", "any", "some", "its", "our", "you", "your", "they",
    "them", "there", "here", "what", "which", "who", "how", "why", "one", "two", "been", "being",
    "were", "into", "out", "up", "down", "over", "very", "more", "most", "only", "same", "other",
    "such"})


def report_words(text: str) -> frozenset[str]:
    """The words of an English text and each pair of neighbouring ones."""
    words = [word for word in _WORD.findall(text.lower()) if word not in _COMMON]
    return frozenset(words) | {f"{first} {second}" for first, second in pairwise(words)}


class WordIndex:
    """Every entry's words as a tf-idf vector, built once from its profile
    (``Profile.words``: how many of its reports use each word; ``Profile.own``: its own
    words, weighed as ``own_weight`` reports)."""

    def __init__(self, profiles: Mapping[str, Profile], own_weight: int) -> None:
        using: Counter = Counter()
        for profile in profiles.values():
            using.update(profile.words)
            using.update(profile.own)
        reports = sum(profile.reports for profile in profiles.values()) or 1
        self.weight = {word: math.log(reports / count)
                       for word, count in using.items() if count >= FEWEST_USES}
        self.vectors = {}
        for entry_id, profile in profiles.items():
            counts = Counter(profile.words)
            counts.update(dict.fromkeys(profile.own, own_weight))
            self.vectors[entry_id] = _unit({word: count * self.weight[word]
                                            for word, count in counts.items() if word in self.weight})

    def closeness(self, words: Iterable[str]) -> dict[str, float]:
        """Each entry's cosine with a report of these words (0 when they share none)."""
        query = _unit({word: self.weight[word] for word in words if word in self.weight})
        return {entry_id: sum(weight * vector.get(word, 0.0) for word, weight in query.items())
                for entry_id, vector in self.vectors.items()}


def _unit(vector: dict[str, float]) -> dict[str, float]:
    length = math.sqrt(sum(value * value for value in vector.values()))
    return {word: value / length for word, value in vector.items()} if length else {}
