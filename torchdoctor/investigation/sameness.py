"""When two failures are the same failure.

Reproduce asks it of a rerun, verify of the run after a fix, a probe of the
error its rerun raised. Same means: the same exception type, the same
message once the numbers that legitimately vary between runs are set aside,
and the same user frame. What varies: memory addresses, timings, amounts of
memory, process ids and temporary paths always; and one number substituted
consistently throughout the message, because that is what a changed batch
size does to a shape message (``64x57600`` → ``32x57600``). When two
numbers change, the shapes differ in more than the batch: another failure.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

_VARYING = (
    re.compile(r"0x[0-9a-fA-F]+"),                                          # addresses
    re.compile(r"(['\"])(?:[A-Za-z]:)?[\\/][^'\"]*\1"),                     # quoted paths
    re.compile(r"\d+(?:\.\d+)?\s*(?:[KMGTP]i?B|bytes)\b"),                  # memory amounts
    re.compile(r"\d+(?:\.\d+)?\s*(?:ms|us|µs|s|secs?|seconds?|minutes?)\b"),  # timings
    re.compile(r"\b(?:pid|PID|process|worker)\s+\d+"),                      # process ids
)
_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_SPACE = re.compile(r"\s+")
_MESSAGE_LINES = 3  # torch appends advice below the message; the message is what counts


@dataclass(frozen=True)
class Sameness:
    """The answer, and in one plain sentence what differs when it is not the same."""

    same: bool
    difference: str = ""


def same_error(expected: Mapping[str, Any] | None, got: Mapping[str, Any] | None) -> Sameness:
    """Is ``got`` the failure ``expected`` describes? Both are error mappings
    (``type``, ``message``, optionally ``user_frame``); a frame is compared
    only when both have one."""
    if not got or not got.get("message") and not got.get("type"):
        return Sameness(False, "no error came back")
    if not expected:
        return Sameness(False, "there is no earlier error to compare with")
    want_type, got_type = _short(expected.get("type")), _short(got.get("type"))
    if want_type and got_type and want_type != got_type:
        return Sameness(False, f"{got_type} instead of {want_type}")
    message = _compare_messages(expected.get("message") or "", got.get("message") or "")
    if message:
        return Sameness(False, message)
    frames = _compare_frames(expected.get("user_frame"), got.get("user_frame"))
    if frames:
        return Sameness(False, frames)
    return Sameness(True)


def describe_error(error: Mapping[str, Any] | None) -> str:
    """``RuntimeError: mat1 and mat2 shapes cannot be multiplied (…)``, on one line."""
    if not error:
        return "no error"
    lines = str(error.get("message") or "").strip().splitlines()
    first = lines[0] if lines else ""
    kind = error.get("type")
    return f"{kind}: {first}" if kind else first


def _compare_messages(want: str, got: str) -> str:
    want_text, want_numbers = _normalised(want)
    got_text, got_numbers = _normalised(got)
    if want_text != got_text or len(want_numbers) != len(got_numbers):
        return f"a different message: {_first_line(got)!r} instead of {_first_line(want)!r}"
    changed = {(a, b) for a, b in zip(want_numbers, got_numbers) if a != b}
    if not changed:
        return ""
    olds = {a for a, _ in changed}
    # One value replaced by one other everywhere it appears: a changed batch size.
    if len(changed) == 1 and all((a == next(iter(olds))) == (a != b)
                                 for a, b in zip(want_numbers, got_numbers)):
        return ""
    return f"different numbers: {_first_line(got)!r} instead of {_first_line(want)!r}"


def _normalised(message: str) -> tuple[str, list[str]]:
    head = "\n".join(message.strip().splitlines()[:_MESSAGE_LINES])
    for pattern in _VARYING:
        head = pattern.sub("<varies>", head)
    numbers = _NUMBER.findall(head)
    return _SPACE.sub(" ", _NUMBER.sub("N", head)).strip(), numbers


def _compare_frames(want: Any, got: Any) -> str:
    if not isinstance(want, Mapping) or not isinstance(got, Mapping):
        return ""
    if not want.get("file") or not got.get("file"):
        return ""
    same_file = os.path.basename(str(want["file"])) == os.path.basename(str(got["file"]))
    same_function = (want.get("function") or "") == (got.get("function") or "")
    same_line = want.get("line") == got.get("line") or (
        bool(want.get("code")) and _SPACE.sub(" ", str(want.get("code"))).strip()
        == _SPACE.sub(" ", str(got.get("code") or "")).strip())
    if same_file and same_function and same_line:
        return ""
    return f"raised at {_where(got)} instead of {_where(want)}"


def _where(frame: Mapping[str, Any]) -> str:
    where = os.path.basename(str(frame.get("file")))
    if frame.get("line"):
        where += f":{frame['line']}"
    if frame.get("function"):
        where += f" in {frame['function']}"
    return where


def _first_line(message: str) -> str:
    lines = message.strip().splitlines()
    line = lines[0] if lines else ""
    return line if len(line) <= 120 else line[:119] + "…"


def _short(name: Any) -> str:
    return str(name or "").rsplit(".", 1)[-1]
