"""The fix site of a script's crash, for a probe that found the cause but not where it began.

A probe that judges a crash (the trace of the failing forward, the census of
the failing batch) sees the value that broke the failing op, not the line
that made it so. The replay's recording does: ``provenance.trace_back`` walks
from the failing op back to that line, and where the walk ends at a tensor
made from an array, ``arrays`` follows the array into the user's reader. A
probe result that found something (``fail``/``warn``) and names no ``fix_at``
of its own gets that one, so the finding shows where the person edits. Only a
replay that raised the very error of the first run counts: a replay that
failed elsewhere says nothing about it.
"""

from __future__ import annotations

from typing import Any

from torchdoctor.patient.context import ProbeContext
from torchdoctor.patient.recorder.arrays import array_origin
from torchdoctor.patient.recorder.replay import recording_for
from torchdoctor.provenance import trace_back
from torchdoctor.provenance.sites import site

_CACHE_KEY = "traced_back"
_FOUND = ("fail", "warn")
# Out-of-range values (a class index past the head) are wrong on one side or the other: the
# labels, or the layer built too narrow. Where the value was made is the fix only for the
# first, and a probe shared by both cannot say which it found, so no site is given.
_TWO_SIDED = ("value",)


def traced_failure(ctx: ProbeContext, recording: dict[str, Any]) -> dict[str, Any]:
    """``trace_back`` of the recording, followed into the reader when it ends at an array."""
    cached = recording.get(_CACHE_KEY)
    if cached is not None:
        return cached
    found = trace_back(recording)
    source, script = found.get("data_source"), ctx.extras.get("script")
    if source and script and recording.get("replay") == "script":
        origin = array_origin(script, source)
        if origin is not None and (origin["file"], origin["line"]) != (source["file"],
                                                                       source["line"]):
            found["fix_at"] = site(origin)
            found["why"] = (f"{found['why']}; the array took that shape at line"
                            f" {origin['line']}")
    recording[_CACHE_KEY] = found
    return found


def with_fix_site(ctx: ProbeContext, answer: dict[str, Any]) -> dict[str, Any]:
    """``answer`` with the crash's fix site added, when it lacks one and can have one."""
    if (answer.get("fix_at") or answer.get("status") not in _FOUND
            or ctx.source != "script" or not ctx.error or not ctx.extras.get("script")):
        return answer
    try:
        recording = recording_for(ctx)
        traced = traced_failure(ctx, recording) if recording.get("reproduced") else {}
    except Exception:  # noqa: BLE001 - the site is an addition; the probe's answer stands
        traced = {}
    if traced.get("fix_at") and traced.get("property") not in _TWO_SIDED:
        answer["fix_at"] = traced["fix_at"]
        answer.setdefault("raised_at", traced.get("raised_at"))
        answer.setdefault("facts", {})["fix_why"] = traced.get("why")
    return answer
