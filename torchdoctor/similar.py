"""Entries that resemble an error or a symptom no pattern recognises.

A paste that no regex, older wording or symptom phrase matches is still
about something: its words, the op it names, its exception type and the
phase it failed in overlap with some entries more than others. Rather than
a dead end, ``diagnose`` shows the closest three as "similar, not
recognised", with a score kept below every recognised tier, and the one
question whose answer tells them apart.

Plain TF-IDF over each entry's words (title, the literal text of its
patterns and symptom phrases, older wordings, hypothesis statements) is
enough here: an unrecognised message shares its rare words ("collate",
"state_dict", "cudnn") with the entry it belongs to, and the common ones
("tensor", "error") weigh little. The vectors are built once per knowledge
base and only when a paste goes unrecognised, so recognised pastes pay
nothing for them.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass

# Similar entries score at most this: below the lowest recognised tier (a report's
# facets, match.TIER_RESEMBLANCE), so a guess from resemblance never outranks a recognition.
SCORE_CEILING = 0.4
# Below this cosine the paste shares nothing but chance words with any entry:
# then there is no error and no symptom in it, and nothing is shown.
MIN_SIMILARITY = 0.06
SHOWN = 3

_WORD = re.compile(r"[a-z][a-z0-9_]{2,}")
_REGEX_ESCAPE = re.compile(r"\\[a-zA-Z]")
_STOP = frozenset("""
the and for with that this from was were are but not you your have has had its into
when while then than there their they them what which who how why all any can could
would should does did done get got use used using one two also only just more most some
such very out after before over under again same other each both here where been being
will may might error errors exception traceback file line recent call last self name
module args kwargs return def none true false torch errno
""".split())  # noqa: SIM905 - a word list reads best as words
# The words a parsed phase shares with the SITUATION of its categories.
_PHASE_WORDS = {
    "forward": "forward pass shapes",
    "backward": "backward gradients",
    "data_loading": "dataloader batch",
    "checkpoint_load": "loading checkpoint",
    "optimizer_step": "training",
}

# Where a category's errors happen, worded for a question to the person.
SITUATION = {
    "shape": "in the forward pass, where two shapes meet",
    "index": "on an index or a label out of range",
    "dtype": "where two dtypes meet (float, half, long)",
    "device": "moving the model or a batch to a device",
    "autograd": "in backward() or while computing gradients",
    "numerics": "when the loss or outputs turned NaN or inf",
    "memory": "when memory ran out",
    "dataloader": "while a DataLoader built a batch",
    "state_dict": "while saving or loading a checkpoint",
    "training": "while training ran without an error but did not learn",
    "distributed": "in multi-GPU or multi-process training",
    "compile": "under torch.compile, TorchScript or an export",
    "other": "somewhere else (setup, installation, an API call)",
}


def tokens(text: str) -> list[str]:
    """The informative words of a text, lower-cased; identifiers stay whole
    (``state_dict``) and also give their parts (``state``, ``dict``)."""
    words = []
    for word in _WORD.findall(text.lower()):
        if word in _STOP:
            continue
        words.append(word)
        if "_" in word:
            words.extend(part for part in word.split("_") if len(part) > 2 and part not in _STOP)
    return words


def _entry_text(entry: object) -> str:
    parts = [str(getattr(entry, "title", "")), str(getattr(entry, "id", "")).replace(".", " "),
             SITUATION.get(str(getattr(entry, "category", "")), "")]
    for pattern in list(getattr(entry, "patterns", None) or []) + list(
            getattr(entry, "symptoms", None) or []):
        parts.append(_REGEX_ESCAPE.sub(" ", str(pattern.regex)))
        if pattern.type:
            parts.append(str(pattern.type))
    parts += [str(message) for message in getattr(entry, "messages", None) or []]
    parts += [str(h.statement) for h in getattr(entry, "hypotheses", None) or []]
    return "\n".join(parts)


@dataclass
class Resemblance:
    entry: object
    similarity: float  # cosine, 0..1
    shared: list[str]  # the paste's words that weighed most in it, best first

    @property
    def score(self) -> float:
        return round(SCORE_CEILING * self.similarity, 4)


class SimilarityIndex:
    """TF-IDF vectors of the entries, unit length."""

    def __init__(self, entries: list[object]) -> None:
        self.entries = entries
        counts = [Counter(tokens(_entry_text(entry))) for entry in entries]
        frequency = Counter(word for count in counts for word in count)
        total = len(entries) or 1
        self.idf = {word: math.log((1 + total) / (1 + df)) + 1.0 for word, df in frequency.items()}
        self.vectors = [self._unit(count) for count in counts]

    def _unit(self, count: Counter) -> dict[str, float]:
        vector = {word: (1.0 + math.log(n)) * self.idf[word]
                  for word, n in count.items() if word in self.idf}
        norm = math.sqrt(sum(v * v for v in vector.values())) or 1.0
        return {word: v / norm for word, v in vector.items()}

    def rank(self, text: str, limit: int = SHOWN) -> list[Resemblance]:
        query = self._unit(Counter(tokens(text)))
        found = []
        for entry, vector in zip(self.entries, self.vectors):
            shared = {word: weight * vector[word] for word, weight in query.items()
                      if word in vector}
            similarity = sum(shared.values())
            if similarity >= MIN_SIMILARITY:
                words = sorted(shared, key=lambda w: -shared[w])[:4]
                found.append(Resemblance(entry, round(similarity, 4), words))
        found.sort(key=lambda r: (-r.similarity, str(r.entry.id)))
        return found[:limit]


# The innermost frames of a traceback name the op that failed (``mse_loss``,
# ``_worker_loop``, ``symbolic_convert``): read so many of them.
FRAMES_READ = 4


def query_text(error: object | None, text: str) -> str:
    """What of the paste is compared: the error's type and message and the
    innermost frames' functions, files and code (op names live there) count
    twice, the rest of the paste (the prose around it) once; of a path, only its
    file's name."""
    if error is None:
        return _PATH.sub(_file_stem, text)
    parts = [str(getattr(error, "type", None) or ""), str(getattr(error, "message", "") or ""),
             _PHASE_WORDS.get(str(getattr(error, "phase", "") or ""), "")]
    for frame in (getattr(error, "frames", None) or [])[-FRAMES_READ:]:
        parts += [str(frame.function or ""), str(frame.code or ""),
                  re.split(r"[\\/]", str(frame.file or ""))[-1].removesuffix(".py")]
    for link in getattr(error, "chain", None) or []:
        if getattr(link, "message", None) and link.message != parts[1]:
            parts.append(str(link.message))
    return "\n".join(parts + [_PATH.sub(_file_stem, text)])


# A path's folders say where things are installed (site-packages, anaconda3, a home
# folder), not what failed; its file name may ("serialization", "grad_scaler"). A whole
# run of path characters is read at once, so the scan is linear however long it is.
_PATH = re.compile(r"[\w.~:/\\-]+")


def _file_stem(found: re.Match[str]) -> str:
    token = found.group(0)
    if "/" not in token and "\\" not in token:
        return token
    return re.split(r"[\\/]", token.rstrip(":"))[-1].removesuffix(".py")


def telling_question(entries: list[object]) -> str | None:
    """The question whose answer picks one of these entries.

    Entries of different categories differ in where the failure happened, so
    the question asks about that; entries of one category differ in what
    they are about, so it names each.
    """
    if len(entries) < 2:
        return None
    categories = list(dict.fromkeys(str(getattr(e, "category", "")) for e in entries))
    if len(categories) > 1:
        places = [SITUATION.get(c, c) for c in categories]
        return f"Did this happen {_either(places)}?"
    titles = [str(getattr(e, "title", e.id)).rstrip(".") for e in entries]
    return f"Which describes it: {_either(titles, joiner='; ')}?"


def _either(options: list[str], joiner: str = ", ") -> str:
    if len(options) == 2:
        return f"{options[0]} or {options[1]}"
    return joiner.join(options[:-1]) + f"{joiner.rstrip()} or {options[-1]}"
