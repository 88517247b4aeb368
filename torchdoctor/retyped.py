"""A message retyped by hand, read as the stored wording it follows word by word.

People copy an error out of a screenshot or retell it from memory: "Attempting
todeserialize object …", "Trying to deserialize object on CUDA device 1 …",
"scaLar type FLoat for argument #2 ' target' in call to_ thnn_ nLL Loss_
forward". No pattern matches such a text, yet nearly all of a known wording's
words are there in its order. ``restore(message, wordings)`` aligns the words
of the message with each stored wording (``messages:`` of the knowledge base)
and, where most of them line up, returns the message with the stretch that
follows the wording rewritten in the wording's own words, keeping the
message's numbers and names wherever its words agree (``device 1`` stays
``device 1``: the numbers decide between sibling entries, and each pattern's
``unless`` still sees them). The patterns, not this module, then say which
entry it is, so a rewrite that follows no pattern recognises nothing.

Words are compared without letter case, numbers and the punctuation around
them; a word split or joined by a missing space ("todeserialize",
"to_ thnn_") is compared by its letters too.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from difflib import SequenceMatcher

# Of the words in the stretch of a stored wording that the message follows, at
# least this share must be the message's own: one word in five may be retyped.
LINED_UP_SHARE = 0.8
# And at least this many words must line up: a short phrase ("out of memory")
# lies in too many wordings to name one.
LINED_UP_WORDS = 7
# Only messages of a sentence or a few: a log is not a retyped message.
MESSAGE_WORDS = 80

_WORD = re.compile(r"\S+")
_NUMBER = re.compile(r"\d+")
_EDGES = "'\"`.,;:!?()[]{}<>"
_LETTERS = re.compile(r"[^0-9a-z#]+")


def _key(word: str) -> str:
    """A word as compared: lower case, numbers as '#', no punctuation at its edges."""
    return _NUMBER.sub("#", word.lower()).strip(_EDGES) or word


def _letters(words: list[str]) -> str:
    return _LETTERS.sub("", "".join(_NUMBER.sub("#", w.lower()) for w in words))


def restore(message: str, wordings: Iterable[str]) -> list[str]:
    """The message rewritten along the stored wordings it follows best, when it follows
    one closely enough; [] when it follows none."""
    words = _WORD.findall(message)
    if len(words) < LINED_UP_WORDS or len(words) > MESSAGE_WORDS:
        return []
    keys = [_key(w) for w in words]
    present = set(keys)
    found: list[tuple[float, str]] = []
    seen: set[str] = set()
    for wording in wordings:
        stored = _WORD.findall(wording)
        stored_keys = [_key(w) for w in stored]
        if len(present.intersection(stored_keys)) < LINED_UP_WORDS // 2:
            continue
        rewritten = _along(words, keys, stored, stored_keys)
        if rewritten is not None and rewritten[1] not in seen:
            seen.add(rewritten[1])
            found.append(rewritten)
    # Only the wordings it follows best: a looser one may have its own word where the
    # message had another ('index' where the message said ' target').
    best = max((share for share, _ in found), default=0.0)
    return [text for share, text in found if share == best]


def _along(words: list[str], keys: list[str], stored: list[str],
           stored_keys: list[str]) -> tuple[float, str] | None:
    """The message rewritten along one stored wording, with the share of the
    stretch's words that lined up; None when too few did."""
    ops = SequenceMatcher(None, keys, stored_keys, autojunk=False).get_opcodes()
    equal = [i for i, op in enumerate(ops) if op[0] == "equal"]
    if not equal:
        return None
    first, last = equal[0], equal[-1]
    pieces: list[tuple[str, list[str], list[str], bool]] = []  # (tag, words, wording, lined up)
    if first > 0:
        _, a1, a2, b1, b2 = ops[first - 1]
        if _letters(words[a1:a2]) == _letters(stored[b1:b2]):
            pieces.append(("same", words[:a1], [], False))
            pieces.append(("letters", words[a1:a2], stored[b1:b2], True))
        elif b1 == 0 and 0 < a2 - a1 <= 2 and 0 < b2 - b1 <= 2:
            # The wording's opening word retold ("Trying" for "Attempting").
            pieces.append(("same", words[:a1], [], False))
            pieces.append(("retold", words[a1:a2], stored[b1:b2], False))
        else:
            pieces.append(("same", words[:a2], [], False))
    for tag, a1, a2, b1, b2 in ops[first:last + 1]:
        same_letters = tag != "equal" and _letters(words[a1:a2]) == _letters(stored[b1:b2])
        pieces.append((tag if not same_letters else "letters", words[a1:a2], stored[b1:b2],
                       tag == "equal" or same_letters))
    if last + 1 < len(ops):
        _, a1, a2, b1, b2 = ops[last + 1]
        joined = _letters(stored[b1:b2])
        cut = next((k for k in range(1, a2 - a1 + 1) if _letters(words[a1:a1 + k]) == joined),
                   None) if joined else None
        if cut is not None:
            # The words after the stretch split or joined differently ("to_ thnn_ nLL Loss_").
            pieces.append(("letters", words[a1:a1 + cut], stored[b1:b2], True))
            pieces.append(("same", words[a1 + cut:], [], False))
        else:
            pieces.append(("same", words[a1:], [], False))
    inside = [p for p in pieces if p[0] != "same"]
    lined_up = sum(max(len(w), len(s)) for tag, w, s, ok in inside if ok)
    stretch = sum(max(len(w), len(s)) for tag, w, s, ok in inside)
    if lined_up < LINED_UP_WORDS or lined_up < LINED_UP_SHARE * stretch:
        return None
    if all(tag == "equal" and w == s for tag, w, s, ok in inside):
        return None  # nothing was retyped: the patterns already saw this text
    rewritten: list[str] = []
    for tag, own, wording, _ in pieces:
        if tag == "same":
            rewritten.extend(own)
        elif tag in ("equal", "replace") and len(own) == len(wording):
            rewritten.extend(_own_values(own, wording))
        else:
            rewritten.extend(wording)
    return lined_up / stretch, " ".join(rewritten)


def _own_values(words: list[str], stored: list[str]) -> list[str]:
    """Word for word: the stored word, except where the message states a value of its
    own (a number; a dtype or a device in place of another), which is what it reports
    about this run."""
    return [word if _NUMBER.search(word) or (_key(word) != _key(wording)
                                             and _key(word) in _VALUE_WORDS) else wording
            for word, wording in zip(words, stored)]


# Values a message reports that differ from run to run: dtypes and device kinds.
_VALUE_WORDS = frozenset(
    "float double half bfloat16 long int short byte bool char complexfloat complexdouble "
    "cpu cuda mps xpu meta float16 float32 float64 int8 int16 int32 int64 uint8".split())
