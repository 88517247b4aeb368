"""The ``provenance`` probe: replay the failing run under the recorder, then walk back.

The verdicts that lean on it are judged against what the failing run did:
the replay is the user's own script (or its failing step, or the harness's
step) with every op recorded, and ``torchdoctor.provenance`` walks from the
value that broke the failing op back to the line that made it wrong. A
replay that did not reach the failing code is no evidence, and says so.
"""

from __future__ import annotations

from typing import Any

from torchdoctor.patient.context import ProbeContext
from torchdoctor.patient.probes import probe, result
from torchdoctor.patient.probes._errors import never_raises
from torchdoctor.patient.probes._frames import file_name
from torchdoctor.patient.recorder.fix_site import traced_failure
from torchdoctor.patient.recorder.replay import recording_for

PROBE_FACTS = (
    "replay", "reproduced", "recorded", "kept", "dropped", "ring", "optimizer_steps",
    "could_not_see", "error_type", "error_message", "property", "raised_at", "fix_at", "why",
    "write_kind", "write_op", "written_param", "saved_at", "batch_merged", "batch_size",
    "merged_by", "called_at", "odd_value", "operands", "offending_argument", "made_noncontiguous_at", "cut_by",
    "chain", "recording_tail", "last_batch", "last_batch_size", "dataset_len", "loaded_at",
    "carried_shape", "made_at", "read_at", "input_shape", "size_set_at", "odd_shape",
    "common_shape", "channels_expected", "channels_got", "data_source",
)


@probe("provenance")
@never_raises
def provenance(ctx: ProbeContext, ring: int = 0, budget: float = 0.0, events: int = 0) -> dict:
    recording = recording_for(ctx, ring or None, budget or None)
    facts: dict[str, Any] = dict.fromkeys(PROBE_FACTS)
    facts.update({key: recording.get(key) for key in (
        "replay", "reproduced", "recorded", "kept", "dropped", "ring", "optimizer_steps",
        "could_not_see")})
    replayed_error = recording.get("error") or {}
    facts["error_type"] = replayed_error.get("type")
    facts["error_message"] = replayed_error.get("message")
    if events:
        facts["recording_tail"] = recording["events"][-int(events):]
    what = _what_replayed(recording)
    if recording["replay"] == "none":
        return _answer("inconclusive", f"nothing could be replayed: {recording['why']}", facts)
    if recording["error"] is None:
        if ctx.error:
            return _answer("inconclusive", f"{what} ran clean: it did not reach the failing"
                           f" code, so it is no evidence either way", facts)
        return _answer("pass", f"{what} ran clean", facts)
    if recording["reproduced"] is False:
        return _answer("error", f"{what} failed for another reason"
                       f" ({replayed_error['type']}: {replayed_error['message'][:120]}),"
                       " so nothing is concluded from it", facts)
    found = traced_failure(ctx, recording)
    facts.update({key: value for key, value in found.items() if key in facts})
    fix, raised = found.get("fix_at"), found.get("raised_at")
    modules = recording.get("modules")
    if fix is None:
        return _answer("inconclusive", f"{what} reproduced the error at {_at(raised)}; no"
                       f" earlier line made it wrong ({found.get('why')})", facts, modules)
    return _answer("fail", f"{what} reproduced the error at {_at(raised)}; the fix belongs at"
                   f" {_at(fix)}: {found.get('why')}", facts, modules)


def _answer(status: str, summary: str, facts: dict[str, Any],
            modules: dict[str, Any] | None = None) -> dict:
    where = _location(facts.get("fix_at") or facts.get("raised_at"), modules or {})
    answer = result(status, summary, facts, where)
    answer["raised_at"] = facts.get("raised_at")
    answer["fix_at"] = facts.get("fix_at")
    return answer


def _location(site: dict | None, modules: dict[str, Any]) -> dict | None:
    """Where the probe points, with the module by its path as every probe names it."""
    if not site:
        return None
    label = site.get("module")
    path = (modules.get(label) or {}).get("path", label)
    return {"module": path, "op": None, "file": site["file"], "line": site["line"]}


def _what_replayed(recording: dict) -> str:
    kind = {"script": "the script, replayed from the start,",
            "failing_step": "the failing step, replayed from the failing frames,",
            "harness_step": "the harness's step, replayed,"}.get(recording["replay"],
                                                                 "the replay")
    return f"{kind} ({recording['recorded']} events recorded, {recording['dropped']} dropped)"


def _at(site: dict | None) -> str:
    if not site:
        return "an unknown line"
    code = f" `{site['code']}`" if site.get("code") else ""
    module = f" in {site['module']}" if site.get("module") else ""
    return f"{file_name(site['file'])}:{site['line']}{code}{module}"
