"""The fix site of a script's crash, for a probe that found the cause but not where it began.

A probe that judges a crash (the trace of the failing forward, the census of
the failing batch) sees the value that broke the failing op, not the line
that made it so. The replay's recording does: ``provenance.trace_back`` walks
from the failing op back to that line. A probe result that found something
(``fail``/``warn``) and names no ``fix_at`` of its own gets that one, so the
finding shows where the person edits. Only a replay that raised the very error
of the first run counts: a replay that failed elsewhere says nothing about it.
"""

from __future__ import annotations

from typing import Any

from torchdoctor.patient.context import ProbeContext
from torchdoctor.patient.recorder.replay import recording_for
from torchdoctor.provenance import trace_back

_CACHE_KEY = "traced_back"
_FOUND = ("fail", "warn")
# Out-of-range values (a class index past the head) are wrong on one side or the other: the
# labels, or the layer built too narrow. Where the value was made is the fix only for the
# first, and a probe shared by both cannot say which it found, so no site is given.
_TWO_SIDED = ("value",)


def with_fix_site(ctx: ProbeContext, answer: dict[str, Any]) -> dict[str, Any]:
    """``answer`` with the crash's fix site added, when it lacks one and can have one."""
    if (answer.get("fix_at") or answer.get("status") not in _FOUND
            or ctx.source != "script" or not ctx.error or not ctx.extras.get("script")):
        return answer
    traced = ctx.extras.get(_CACHE_KEY)
    if traced is None:
        try:
            recording = recording_for(ctx)
            traced = trace_back(recording) if recording.get("reproduced") else {}
        except Exception:  # noqa: BLE001 - the site is an addition; the probe's answer stands
            traced = {}
        ctx.extras[_CACHE_KEY] = traced
    if traced.get("fix_at") and traced.get("property") not in _TWO_SIDED:
        answer["fix_at"] = traced["fix_at"]
        answer.setdefault("raised_at", traced.get("raised_at"))
        answer.setdefault("facts", {})["fix_why"] = traced.get("why")
    return answer
