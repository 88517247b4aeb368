"""Is a journal line an event whose shape the session, the report and the listing can trust?

A journal may be crafted or corrupted (a string version, an event without a
time, a string where an object belongs). Each event is checked here on read;
one that fails is skipped and counted, so one bad line never stops a replay,
a report or ``torchdoctor sessions``. Fields an event does not carry are
fine (older and newer torchdoctors write different ones); a field that is
there must have the type its readers use. Unknown event types pass the
common checks and are ignored by the readers.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

PHASES = ("reproduce", "gather", "hypothesize", "test", "fix")

NoneType = type(None)
TEXT = (str, NoneType)
NUMBER = (int, float, NoneType)
FLAG = (bool, NoneType)
OBJECT = (dict, NoneType)
LIST = (list, NoneType)

# The fields of each event type that a reader uses, and the types they may hold.
FIELDS: dict[str, dict[str, tuple[type, ...]]] = {
    "session": {"kind": TEXT, "target": TEXT, "argv": LIST, "cwd": TEXT, "torchdoctor": TEXT},
    "input": {"text": TEXT, "source": TEXT},
    "parse": {"error": OBJECT},
    "matches": {"matches": LIST},
    "hypothesis": {"key": (str,), "state": TEXT, "statement": TEXT, "entry": TEXT,
                   "title": TEXT, "probe": TEXT, "params": OBJECT, "fix": OBJECT,
                   "predicts": TEXT, "reason": TEXT},
    "reorder": {"keys": LIST},
    "probe": {"probe": TEXT, "status": TEXT, "summary": TEXT, "hypothesis": TEXT,
              "verdict": TEXT, "location": OBJECT, "facts": OBJECT, "evidence": OBJECT},
    "reproduce": {"same": FLAG, "error": OBJECT, "seed": NUMBER, "detail": TEXT},
    "note": {"text": TEXT},
    "fix": {"summary": TEXT, "hypothesis": TEXT},
    "verify": {"passed": FLAG, "detail": TEXT, "facts": OBJECT},
    "repro": {"verified": FLAG, "level": TEXT, "what": TEXT, "path": TEXT, "files": LIST,
              "lines": NUMBER, "seconds": NUMBER, "command": TEXT, "error": OBJECT,
              "expected": OBJECT, "attempts": LIST, "reason": TEXT},
    "phase": {"phase": (str,)},
}
REQUIRED = {"hypothesis": ("key",), "phase": ("phase",)}
# Lists whose items readers take apart: what each item must be.
ITEMS = {("session", "argv"): str, ("matches", "matches"): dict, ("reorder", "keys"): str,
         ("repro", "files"): str, ("repro", "attempts"): dict}
# Objects whose fields readers print or take apart (an error, a frame, a fix).
ERROR_FIELDS = {"type": TEXT, "message": TEXT, "phase": TEXT, "user_frame": OBJECT,
                "frames": LIST}
FRAME_FIELDS = {"file": TEXT, "line": NUMBER, "function": TEXT, "code": TEXT}
FIX_FIELDS = {"summary": TEXT, "before": TEXT, "after": TEXT}
MATCH_FIELDS = {"entry": (str,), "title": TEXT, "hypotheses": LIST}
ATTEMPT_FIELDS = {"level": TEXT, "why": TEXT, "reproduced": FLAG}


def problem(event: Any) -> str | None:
    """Why ``event`` cannot be used, or None when it can."""
    if not isinstance(event, dict):
        return "not an event (a JSON object)"
    kind = event.get("type")
    if not isinstance(kind, str):
        return "no event type"
    for name in ("v", "seq"):
        value = event.get(name)
        if not _is_int(value) or value < (1 if name == "v" else 0):
            return f"'{name}' is {_shown(value)}, not a whole number"
    if not isinstance(event.get("t"), str) or not _is_time(event["t"]):
        return f"'t' is {_shown(event.get('t'))}, not a time"
    for name in REQUIRED.get(kind, ()):
        if name not in event:
            return f"a {kind} event without '{name}'"
    for name, types in FIELDS.get(kind, {}).items():
        if name in event:
            found = _field_problem(kind, name, event[name], types)
            if found:
                return found
    if kind == "phase" and event["phase"] not in PHASES:
        return f"unknown phase {_shown(event['phase'])}"
    return None


def _field_problem(kind: str, name: str, value: Any, types: tuple[type, ...]) -> str | None:
    if not _has_type(value, types):
        return f"'{name}' of a {kind} event is {_shown(value)}"
    item = ITEMS.get((kind, name))
    if item is not None and value is not None and not all(isinstance(v, item) for v in value):
        return f"'{name}' of a {kind} event holds something other than {item.__name__}s"
    nested = _nested_problem(name, value)
    return f"'{name}' of a {kind} event: {nested}" if nested else None


def _nested_problem(name: str, value: Any) -> str | None:
    if value is None:
        return None
    if name in ("error", "expected"):
        return (_object_problem(value, ERROR_FIELDS)
                or _object_problem(value.get("user_frame") or {}, FRAME_FIELDS)
                or _items_problem(value.get("frames") or [], FRAME_FIELDS))
    if name == "fix":
        return _object_problem(value, FIX_FIELDS)
    if name == "matches":
        return _items_problem(value, MATCH_FIELDS)
    if name == "attempts":
        return _items_problem(value, ATTEMPT_FIELDS)
    return None


def _items_problem(items: list, fields: dict[str, tuple[type, ...]]) -> str | None:
    for item in items:
        if not isinstance(item, dict):
            return f"an item is {_shown(item)}"
        found = _object_problem(item, fields)
        if found:
            return found
    return None


def _object_problem(value: dict, fields: dict[str, tuple[type, ...]]) -> str | None:
    for name, types in fields.items():
        if name in value and not _has_type(value[name], types):
            return f"'{name}' is {_shown(value[name])}"
    return None


def _has_type(value: Any, types: tuple[type, ...]) -> bool:
    if isinstance(value, bool):
        return bool in types
    return isinstance(value, types)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_time(text: str) -> bool:
    try:
        datetime.fromisoformat(text)
    except ValueError:
        return False
    return True


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:39] + "…"
