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

The stored wordings are the older releases' messages and, for today's wordings
that only a pattern holds, the pattern written out (``wordings_of``): its fixed
text, with a ``PLACEHOLDER`` where it captures or allows a value, which any word
of the message fills.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from difflib import SequenceMatcher

from torchdoctor.linear_regex import sre_parse

# Of the words in the stretch of a stored wording that the message follows, at
# least this share must be the message's own: one word in five may be retyped.
LINED_UP_SHARE = 0.8
# And at least this many words must line up: a short phrase ("out of memory")
# lies in too many wordings to name one.
LINED_UP_WORDS = 7
# A word mistyped by a letter or two ("Attenpting", "uscale") still lines up: its
# letters agree this much with the wording's word (difflib's ratio), which is this long.
NEAR_WORD_RATIO = 0.8
NEAR_WORD_LENGTH = 5
# Only messages of a sentence or a few: a log is not a retyped message.
MESSAGE_WORDS = 80

_WORD = re.compile(r"\S+")
_NUMBER = re.compile(r"\d+")
_EDGES = "'\"`.,;:!?()[]{}<>"
_LETTERS = re.compile(r"[^0-9a-z#]+")
# Stands for a value a pattern captures or allows (a size, a dtype, a name).
PLACEHOLDER = "\x00"


def wordings_of(regex: str) -> list[str]:
    """A pattern written out as wordings: its fixed text in order, the first of each
    set of alternatives, a PLACEHOLDER for each value, and its optional parts left out
    in one wording and written in the other; [] when the regex cannot be read."""
    try:
        tree = list(sre_parse.parse(regex))
        return list(dict.fromkeys("".join(_written(tree, optional)) for optional in (False, True)))
    except (re.error, RecursionError, TypeError, ValueError):
        return []


def _written(items: list, optional: bool) -> list[str]:
    out: list[str] = []
    for op, argument in items:
        name = str(op)
        if name == "LITERAL":
            out.append(chr(argument))
        elif name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
            if argument[0] >= 1 or (optional and argument[1] == 1):
                inner = _written(list(argument[2]), optional)
                # A run of one kind of character is one value, however long.
                out.extend(inner if any(c != PLACEHOLDER for c in inner) else [PLACEHOLDER])
        elif name == "SUBPATTERN":
            out.extend(_written(list(argument[-1]), optional))
        elif name == "ATOMIC_GROUP":
            out.extend(_written(list(argument), optional))
        elif name == "BRANCH":
            out.extend(_written(list(argument[1][0]), optional))
        elif name in ("IN", "ANY", "NOT_LITERAL", "CATEGORY"):
            out.append(PLACEHOLDER)
    return out


def _fills(word: str, wording: str) -> bool:
    """Whether a word of the message is what a written-out pattern's word allows: its
    fixed letters around values (a PLACEHOLDER takes one or more characters)."""
    if PLACEHOLDER not in wording:
        return False
    shape = ".+".join(re.escape(part) for part in wording.split(PLACEHOLDER))
    return re.fullmatch(shape, word, re.IGNORECASE | re.DOTALL) is not None


def _key(word: str) -> str:
    """A word as compared: lower case, numbers (and a pattern's values) as '#', no
    punctuation at its edges, a contraction spelt out ("can't" is "cannot")."""
    key = _NUMBER.sub("#", word.lower()).replace(PLACEHOLDER, "#").strip(_EDGES) or word
    return _spelt_out(key)


def _letters(words: list[str]) -> str:
    return _LETTERS.sub("", "".join(_spelt_out(_NUMBER.sub("#", w.lower()).replace(
        PLACEHOLDER, "#")) for w in words))


# torch says "can't" in one message and "cannot" in the next, and a person retelling
# either writes whichever comes to mind: a negation is compared spelt out, so "can't"
# lines up with "cannot" and "doesn't" with "does not" (by its letters, two words).
# Read off the word's end, not searched for: a word may be thousands of letters long.
_NEGATIONS = ("n't", "n\u2019t")
_IRREGULAR = {"ca": "can", "wo": "will", "sha": "shall"}


def _spelt_out(word: str) -> str:
    core = word.rstrip(_EDGES)
    if len(core) > 3 and core.endswith(_NEGATIONS):
        stem = core[:-3]
        return _IRREGULAR.get(stem, stem) + "not" + word[len(core):]
    return word


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
            # The wording's opening word retold ("Trying" for "Attempting") or mistyped.
            pieces.append(("same", words[:a1], [], False))
            pieces.append(("retold", words[a1:a2], stored[b1:b2],
                           _near_words(words[a1:a2], stored[b1:b2])))
        else:
            pieces.append(("same", words[:a2], [], False))
    for tag, a1, a2, b1, b2 in ops[first:last + 1]:
        same_letters = tag != "equal" and _letters(words[a1:a2]) == _letters(stored[b1:b2])
        filled = tag == "replace" and a2 - a1 == b2 - b1 and all(
            _fills(w, s) or _near(w, s) for w, s in zip(words[a1:a2], stored[b1:b2]))
        pieces.append((tag if not same_letters else "letters", words[a1:a2], stored[b1:b2],
                       tag == "equal" or same_letters or filled))
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


def _near(word: str, wording: str) -> bool:
    """A word mistyped by a letter or two: a plain word, long enough, most letters in
    order, and no value of its own (a dtype or device is what a message reports)."""
    key, stored_key = _key(word), _key(wording)
    if min(len(key), len(stored_key)) < NEAR_WORD_LENGTH or not (key.isalpha()
                                                                 and stored_key.isalpha()):
        return False  # a name (torch.cuda.x, a_b) may differ by the value it holds
    if key in _VALUE_WORDS or stored_key in _VALUE_WORDS:
        return False
    return SequenceMatcher(None, key, stored_key, autojunk=False).ratio() >= NEAR_WORD_RATIO


def _near_words(words: list[str], stored: list[str]) -> bool:
    return len(words) == len(stored) and all(_near(w, s) for w, s in zip(words, stored))


def _own_values(words: list[str], stored: list[str]) -> list[str]:
    """Word for word: the stored word, except where the message states a value of its
    own (a number; a dtype or a device in place of another), which is what it reports
    about this run."""
    return [word if _NUMBER.search(word) or PLACEHOLDER in wording or (
                _key(word) != _key(wording) and _key(word) in _VALUE_WORDS) else wording
            for word, wording in zip(words, stored)]


# Values a message reports that differ from run to run: dtypes and device kinds.
_VALUE_WORDS = frozenset(
    ["float", "double", "half", "bfloat16", "long", "int", "short", "byte", "bool", "char",
     "complexfloat", "complexdouble", "cpu", "cuda", "mps", "xpu", "meta", "float16", "float32",
     "float64", "int8", "int16", "int32", "int64", "uint8"])
