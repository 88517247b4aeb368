"""A session's report, from its journal alone: ``build_report`` (JSON) and ``render_markdown``.

The report is what a person hands on (to a colleague, a maintainer, a bug
tracker), so the Markdown is written to read well on GitHub as it is: a
summary paragraph first, the traceback folded away, the hypothesis log as a
table, and the repro only when it was seen to fail the same way. Everything
comes from the journal; nothing here runs probes or imports torch, so writing
a report is instant and works for a session killed half-way.

A session folder is data that may come from anyone: the report reads only
the session's own files (``session_folder.paths``), never a path a journal
names, and runs nothing recorded in it unless the person asks (``rerun``).
"""

from __future__ import annotations

import json
import os
from contextlib import nullcontext
from pathlib import Path
from typing import Any

from torchdoctor.journal import JOURNAL_NAME, read_events
from torchdoctor.location import describe_location, site_lines
from torchdoctor.redact import Redactor
from torchdoctor.render import how_many_match
from torchdoctor.repro import REPRO_NAME, pending_repro, verify_pending
from torchdoctor.session import PHASE_TITLES, Session
from torchdoctor.session_folder.lock import session_lock
from torchdoctor.session_folder.paths import inside, is_plain_name, read_bytes, write_bytes

REDACTED_FOLDER = "redacted"  # where --redact writes inside a session, beside the originals

REPORT_SCHEMA = 1
ENV_HINT = ("No environment was recorded in this session. `torchdoctor run SCRIPT` records it;"
            " in the app, run the `env` probe.")
_ENV_ROWS = (("torch", "PyTorch"), ("cuda", "CUDA"), ("cudnn", "cuDNN"), ("python", "Python"),
             ("os", "OS"), ("cuda_available", "CUDA available"))


def build_report(session_dir: str | os.PathLike,
                 redact: bool | Redactor = False) -> dict[str, Any]:
    """The report's content as JSON-ready data; ``render_markdown`` prints the same.

    ``redact`` is True or a ``Redactor`` (whose ``summary()`` then counts what it took out).
    """
    session_dir = Path(session_dir)
    events, warnings = read_events(inside(session_dir, JOURNAL_NAME))
    session = Session(None)  # type: ignore[arg-type] - replay only, never appends
    for event in events:
        session.apply(event)
    state = session.state
    start = next((e for e in events if e["type"] == "session"), {})
    repro = next((e for e in reversed(events) if e["type"] == "repro"), None)
    report = {
        "schema": REPORT_SCHEMA,
        "session": {"id": session_dir.name, "started": events[0]["t"] if events else None,
                    "kind": start.get("kind"), "target": state.target,
                    "argv": start.get("argv") or [], "torchdoctor": start.get("torchdoctor"),
                    "events": len(events)},
        "error": _error(state.error, state.input_text),
        "environment": _environment(events),
        "timeline": _timeline(events),
        "hypotheses": [_hypothesis(h) for h in state.hypotheses.values()],
        "fix": _fix(state),
        "repro": _repro(repro, session_dir) if repro else _pending(session_dir),
        "notes": list(state.notes),
        "warnings": warnings,
    }
    report["summary"] = _summary(report, state)
    if not redact:
        return report
    return (redact if isinstance(redact, Redactor) else Redactor()).value(report)


def _error(error: dict | None, text: str | None) -> dict[str, Any] | None:
    if not error:
        return None
    return {"type": error.get("type"), "message": error.get("message") or "",
            "phase": error.get("phase"), "user_frame": error.get("user_frame"),
            "traceback": text or ""}


def _environment(events: list[dict]) -> dict[str, Any] | None:
    probe = next((e for e in reversed(events)
                  if e["type"] == "probe" and e.get("probe") == "env"), None)
    if probe is None:
        return None
    facts = probe.get("facts") or {}
    env = {key: facts.get(key) for key, _ in _ENV_ROWS}
    devices = facts.get("devices")
    env["devices"] = [d.get("name") for d in (devices if isinstance(devices, list) else [])
                      if isinstance(d, dict)]
    return env


def _timeline(events: list[dict]) -> list[dict[str, Any]]:
    phases: list[dict[str, Any]] = [{"phase": "reproduce", "steps": []}]
    for event in events:
        if event["type"] == "phase":
            if phases[-1]["phase"] != event["phase"]:
                phases.append({"phase": event["phase"], "steps": []})
            continue
        line = _describe(event)
        if line:
            phases[-1]["steps"].append({"t": event.get("t"), "type": event["type"],
                                        "text": line})
    return [p for p in phases if p["steps"]]


def _describe(event: dict) -> str:
    kind = event["type"]
    if kind == "session":
        kind = event.get("kind") or "app"
        return (f"started {_a(kind)} {kind} session"
                + (f" on {event['target']}" if event.get("target") else ""))
    if kind == "input":
        return f"read the error ({event.get('source')})"
    if kind == "parse":
        error = event.get("error") or {}
        if not error.get("type"):
            return f"read the symptom: {_first(error.get('message'))}"
        return f"parsed {error.get('type')}: {_first(error.get('message'))}"
    if kind == "matches":
        matches = event.get("matches") or []
        names = [m.get("entry") for m in matches]
        return how_many_match(matches) + (f": {', '.join(names[:3])}" if names else "")
    if kind == "hypothesis":
        if event.get("statement"):
            return f"proposed: {_first(event['statement'])}"
        return f"{event.get('key')} → {event.get('state')}"
    if kind == "probe":
        return f"ran {event.get('probe')}: {event.get('status')} — {_first(event.get('summary'))}"
    if kind == "reproduce":
        said = "reproduced" if event.get("same") else "did not reproduce"
        return f"{said}: {_first(event['detail'])}" if event.get("detail") else said
    if kind == "note":
        return f"note: {_first(event.get('text'))}"
    if kind == "fix":
        return f"fix: {_first(event.get('summary'))}"
    if kind == "verify":
        return f"verification {'passed' if event.get('passed') else 'failed'}:" \
               f" {_first(event.get('detail'))}"
    if kind == "repro":
        if event.get("verified"):
            return f"repro verified at the {event.get('level')} level ({event.get('lines')} lines)"
        return f"no verified repro: {_first(event.get('reason'))}"
    return ""


def _hypothesis(h: Any) -> dict[str, Any]:
    evidence = h.evidence[-1] if h.evidence else None
    return {"key": h.key, "statement": h.statement, "title": h.title, "probe": h.probe,
            "verdict": h.state, "reason": h.reason,
            "evidence": evidence.get("summary") if evidence else h.reason,
            "location": evidence.get("location") if evidence else None,
            "fix_at": evidence.get("fix_at") if evidence else None,
            "raised_at": evidence.get("raised_at") if evidence else None,
            "fix": (h.fix or {}).get("summary")}


def _fix(state: Any) -> dict[str, Any] | None:
    if state.fix is None:
        return None
    hypothesis = state.hypotheses.get(state.fix.get("hypothesis") or "")
    fix = (hypothesis.fix or {}) if hypothesis else {}
    patches = [p for p in state.patches if isinstance(p, dict)]
    patch = next((p for p in patches if p.get("verified")), patches[-1] if patches else None)
    return {"summary": state.fix.get("summary"), "hypothesis": state.fix.get("hypothesis"),
            "before": fix.get("before"), "after": fix.get("after"),
            # The before/after is the knowledge base's pattern for the cause; the change
            # applied may be worded (and made) differently.
            "pattern": fix.get("summary") != state.fix.get("summary"),
            "verified": state.verified, "patch": patch,
            "applied": bool(state.verified and (state.fix_facts or {}).get("applied"))}


def _repro(event: dict, session_dir: Path) -> dict[str, Any]:
    repro = {k: v for k, v in event.items() if k not in ("v", "seq", "type")}
    repro["files"] = [f for f in repro.get("files") or [] if is_plain_name(f)]
    if repro.get("verified"):
        # The session's own repro.py, never the file the journal's ``path`` names.
        repro["source"] = repro_source(session_dir)
    return repro


def repro_source(session_dir: str | os.PathLike) -> str | None:
    """The text of the session's verified ``repro.py``, read only from inside the session."""
    try:
        return read_bytes(session_dir, REPRO_NAME).decode("utf-8", errors="replace")
    except FileNotFoundError:
        return None


def _pending(session_dir: Path) -> dict[str, Any] | None:
    pending = pending_repro(session_dir)
    if pending is None:
        return None
    return {"verified": False, "pending": True, "would_run": pending.describe(),
            "reason": (f"repro sources were recorded but never run; they are code from the"
                       f" session's journal, so they run only when asked:"
                       f" `torchdoctor report {session_dir.name} --rerun`")}


def _summary(report: dict[str, Any], state: Any) -> str:
    error = report["error"]
    target = os.path.basename(report["session"]["target"] or "") or "The program"
    if error is None:
        checks = [h for h in report["hypotheses"] if h["verdict"] == "confirmed"]
        return (f"{target}: no exception was recorded in this session"
                + (f"; {len(checks)} hypotheses were confirmed." if checks else "."))
    if not error.get("type"):  # a described symptom raises nothing
        parts = [f"The symptom described: “{_first(error['message'])}”"]
    else:
        parts = [f"{target} raised `{error['type']}: {_first(error['message'])}`"]
    frame = error.get("user_frame") or {}
    if frame.get("file"):
        parts[0] += f" at `{os.path.basename(frame['file'])}:{frame.get('line')}`"
    if error.get("phase"):
        parts[0] += f" during {error['phase'].replace('_', ' ')}"
    confirmed = [h for h in report["hypotheses"] if h["verdict"] == "confirmed"]
    if confirmed:
        cause = confirmed[0]
        parts.append(f"The confirmed cause: {cause['statement']}"
                     + (f" ({cause['probe']}: {cause['evidence']})" if cause["probe"] else ""))
        parts += [line[0].upper() + line[1:] for line in site_lines(cause)]
        where = _md_where(cause.get("location"))
        if where:
            parts.append(f"Where: {where}")
    elif state.matches:
        best = state.matches[0]
        closest = ("the description reads most like the reports of" if best.get("kind") == "reads_like"
                   else "the closest match is")
        parts.append(f"No hypothesis was confirmed; {closest} {best.get('title')} (`{best.get('entry')}`)")
    else:
        parts.append("No knowledge-base entry matched this error")
    fix = report["fix"]
    if fix:
        verified = " (verified)" if fix.get("verified") else " (not verified yet)"
        parts.append(f"The fix: {fix['summary']}{verified}")
    repro = report["repro"]
    if repro and repro.get("verified"):
        parts.append(f"{_a(str(repro.get('lines'))).capitalize()} {repro.get('lines')}-line"
                     f" repro at the {repro.get('level')} level fails the same way in"
                     f" {_seconds(repro.get('seconds'), 1)} s")
    return ". ".join(p.rstrip(".") for p in parts) + "."


def _a(word: str) -> str:
    """The article a word takes when read aloud: an app, an 8-line, an 11-line, a 12-line."""
    spoken = word.lstrip()
    if spoken[:1].isdigit():
        digits = spoken.split("-")[0].split(".")[0]
        return "an" if digits.startswith("8") or (len(digits) in (2, 5) and digits[:2] in
                                                   ("11", "18")) else "a"
    return "an" if spoken[:1].lower() in "aeio" else "a"


def _first(text: Any, limit: int = 160) -> str:
    lines = str(text or "").strip().splitlines()
    line = lines[0] if lines else ""
    return line if len(line) <= limit else line[: limit - 1] + "…"


# ---------------------------------------------------------------- Markdown


def render_markdown(report: dict[str, Any]) -> str:
    session = report["session"]
    error = report["error"]
    title = f"{error['type'] or 'symptom'}: {_first(error['message'], 90)}" if error else (
        session["target"] or session["id"])
    on = (f"on `{session['target']}`" if session["target"] else
          "on a described symptom" if error and not error.get("type") else
          "on a pasted error" if error and error.get("traceback") else "with no target")
    out = [f"# torchdoctor report: {_cell(title)}", "",
           (f"Session `{session['id']}` · started {session['started']} ·"
           f" {session['kind'] or 'app'} {on}"
           f" · torchdoctor {session['torchdoctor'] or '?'}"), "",
           "## Summary", "", report["summary"], ""]
    out += _environment_md(report["environment"])
    out += _error_md(error)
    out += _timeline_md(report["timeline"])
    out += _hypotheses_md(report["hypotheses"])
    out += _fix_md(report["fix"])
    out += _repro_md(report["repro"], error, session["target"])
    if report["notes"]:
        out += ["## Notes", ""] + [f"- {_first(n, 400)}" for n in report["notes"]] + [""]
    if report["warnings"]:
        out += ["## Journal warnings", ""] + [f"- {w}" for w in report["warnings"]] + [""]
    return "\n".join(out).rstrip() + "\n"


def _environment_md(env: dict | None) -> list[str]:
    out = ["## Environment", ""]
    if env is None:
        return out + [ENV_HINT, ""]
    out += ["| | |", "|---|---|"]
    out += [f"| {label} | {_cell(_env_value(env, key))} |" for key, label in _ENV_ROWS]
    out.append(f"| devices | {_cell(', '.join(d for d in env.get('devices') or [] if d))} |")
    return out + [""]


def _env_value(env: dict, key: str) -> Any:
    """A cell never left empty: a CPU build has no CUDA or cuDNN version to show."""
    value = env.get(key)
    if key == "cuda_available":
        return "yes" if value else "no"
    if value is None and key in ("cuda", "cudnn"):
        return "no CUDA build" if key == "cuda" else "not available"
    return value


def _error_md(error: dict | None) -> list[str]:
    out = ["## Error", ""]
    if error is None:
        return out + ["No exception was recorded in this session.", ""]
    if not error.get("type"):
        return out + [(f"No exception: the symptom described was"
                       f" “{_first(error['message'], 400)}”."), ""]
    out += [f"**{error['type']}**: {_first(error['message'], 400)}", ""]
    frame = error.get("user_frame") or {}
    if frame.get("file"):
        out += [f"Raised at `{frame['file']}:{frame.get('line')}` in"
                f" `{frame.get('function')}`" + (f": `{frame['code']}`" if frame.get("code")
                                                 else "")
                + (f" (phase: {error['phase']})" if error.get("phase") else ""), ""]
    if error.get("traceback"):
        out += ["<details><summary>Traceback</summary>", "", _fence(error["traceback"], ""),
                "", "</details>", ""]
    return out


def _timeline_md(timeline: list[dict]) -> list[str]:
    out = ["## Timeline", ""]
    for phase in timeline:
        out += [f"### {PHASE_TITLES.get(phase['phase'], phase['phase'])}", ""]
        out += [f"- `{(step['t'] or '')[11:19]}` {step['text']}" for step in phase["steps"]]
        out.append("")
    return out


def _hypotheses_md(hypotheses: list[dict]) -> list[str]:
    out = ["## Hypothesis log", ""]
    if not hypotheses:
        return out + ["No hypotheses were recorded.", ""]
    out += ["| Hypothesis | Probe | Verdict | Evidence |", "|---|---|---|---|"]
    for h in hypotheses:
        verdict = f"**{h['verdict']}**" if h["verdict"] == "confirmed" else h["verdict"]
        out.append(f"| {_cell(h['statement'])} | {_cell(h['probe'] or '—')} | {verdict} |"
                   f" {_cell(h['evidence'] or '—')} |")
    return out + [""]


def _fix_md(fix: dict | None) -> list[str]:
    out = ["## Fix and verification", ""]
    if fix is None:
        return out + ["No fix was recorded.", ""]
    out += [fix["summary"] or "", ""]
    if fix.get("patch"):
        return out + _patch_md(fix["patch"], fix.get("applied", False))
    if fix.get("pattern") and (fix.get("before") or fix.get("after")):
        out += ["The general pattern of this fix, from the knowledge base:", ""]
    if fix.get("before"):
        out += ["Before:", "", _fence(fix["before"], "python"), ""]
    if fix.get("after"):
        out += ["After:", "", _fence(fix["after"], "python"), ""]
    if fix.get("verified") is None:
        out += ["Not verified yet: apply the fix and rerun (`torchdoctor run SCRIPT`).", ""]
    else:
        out += [f"Verification: {'passed' if fix['verified'] else 'failed'}.", ""]
    return out


def _patch_md(patch: dict, applied: bool) -> list[str]:
    """The diff of the user's own file and what the rerun of a patched copy showed."""
    out = [f"The patch ({patch.get('what')}):", "", _fence(str(patch.get("diff", "")), "diff"), ""]
    check = patch.get("verification") or {}
    before, after = check.get("before") or {}, check.get("after") or {}
    verdict = "Verified" if patch.get("verified") else "Not verified"
    out += [f"{verdict}: {check.get('detail', '')}.", ""]
    if after:
        out += [(f"- ran `{after.get('command')}` on a scratch copy of the project, before and "
                f"after the patch ({before.get('seconds', 0):.1f} s and "
                f"{after.get('seconds', 0):.1f} s)")]
        losses = [x for x in after.get("losses") or [] if isinstance(x, (int, float))]
        if losses and "loss" not in str(check.get("detail", "")):
            out += [(f"- the loss went {losses[0]:.4g} → {losses[-1]:.4g} over {len(losses)} "
                    "backward passes")]
        out += [""]
    if applied:
        out += [("The patch was written to your file; the original is kept beside it "
                "(`.orig`)."), ""]
    elif patch.get("verified"):
        out += [("Left to you: apply it with `torchdoctor fix --apply` (a backup is kept), then "
                "run the full training."), ""]
    return out


def _repro_md(repro: dict | None, error: dict | None = None,
              target: str | None = None) -> list[str]:
    out = ["## Minimal repro", ""]
    if repro is None and error and not error.get("type"):
        where = f"`{target}`" if target else "it was tested on (see Reproduce above)"
        return out + [(f"A symptom raises nothing to shrink into a script: the harness {where}"
                       " reproduces it, and `torchdoctor check` reruns its checks."), ""]
    if repro is None:
        return out + [("No repro was attempted: a repro needs a live failure, from"
                      " `torchdoctor run SCRIPT`."), ""]
    if not repro.get("verified"):
        out += [f"**No verified repro.** {repro.get('reason') or ''}", ""]
        if repro.get("would_run"):
            out += ["It would run:", ""]
            out += [f"- {_cell(line)}" for line in repro["would_run"]] + [""]
        return out
    error = repro.get("error") or {}
    out += [(f"Verified: `{repro.get('command')}` in a fresh process raised"
            f" `{error.get('type')}: {_first(error.get('message'), 200)}`,"
            f" the same error as the original."), "",
            f"- level: **{repro.get('level')}** ({repro.get('what')})",
            f"- size: {repro.get('lines')} lines",
            f"- run time: {_seconds(repro.get('seconds'), 2)} s"]
    if repro.get("files"):
        out.append(f"- needs beside it: {', '.join(f'`{f}`' for f in repro['files'])}")
    widened = [a for a in repro.get("attempts") or [] if not a.get("reproduced")]
    for attempt in widened:
        out.append(f"- widened past the {attempt.get('level')} level:"
                   f" {_first(attempt.get('why'))}")
    out.append("")
    if repro.get("source"):
        out += [_fence(repro["source"], "python"), ""]
    return out


def _seconds(value: Any, digits: int) -> str:
    return f"{value:.{digits}f}" if isinstance(value, (int, float)) else "?"


def _fence(text: str, lang: str) -> str:
    ticks = "```"
    while ticks in text:
        ticks += "`"
    return f"{ticks}{lang}\n{text.rstrip()}\n{ticks}"


def _cell(value: Any) -> str:
    return _first(value, 300).replace("|", "\\|") if value is not None else ""


def to_json(report: dict[str, Any]) -> str:
    return json.dumps(report, indent=2, ensure_ascii=False, default=str) + "\n"


def _md_where(location: dict | None) -> str:
    return describe_location(location, quote=lambda name: f"`{name}`", short_paths=True)


def write_report(session_dir: str | os.PathLike, output: str | os.PathLike | None = None,
                 as_json: bool = False, redact: bool | Redactor = False, rerun: bool = False,
                 announce: Any = None) -> Path:
    """Write the report with its verified repro beside it; returns the report's path.

    By default the report goes into the session (``report.md``, or
    ``redacted/report.md`` with ``redact``, so the session's own files stay
    whole). ``rerun`` first runs and verifies repro sources a killed session
    left unverified; that runs code from the journal, so only a person's
    explicit request sets it, and ``announce(line)`` is told each command.
    Writing into the session, or rerunning, holds the session's lock.
    """
    directory = Path(session_dir)
    redactor = redact if isinstance(redact, Redactor) else (Redactor() if redact else None)
    name = "report.json" if as_json else "report.md"
    into_session = output is None
    with session_lock(directory) if (into_session or rerun) else nullcontext():
        if rerun:
            verify_pending(directory, announce=announce)
        report = build_report(directory, redact=redactor or False)
        if into_session and redactor:
            inside(directory, REDACTED_FOLDER).mkdir(exist_ok=True)
            target = inside(directory, REDACTED_FOLDER, name)
        elif into_session:
            target = inside(directory, name)
        else:
            target = Path(output)
            target.parent.mkdir(parents=True, exist_ok=True)
        text = to_json(report) if as_json else render_markdown(report)
        write_bytes(target, text.encode("utf-8"))
        _copy_repro(directory, report.get("repro") or {}, target.parent, redactor)
    return target


def _copy_repro(directory: Path, repro: dict, destination: Path,
                redactor: Redactor | None) -> None:
    """The verified repro and the files it needs, beside the report (redacted with it)."""
    if not repro.get("verified") or destination.resolve() == directory.resolve():
        return
    for name in [REPRO_NAME, *(repro.get("files") or [])]:
        if not is_plain_name(name):
            continue
        try:
            data: bytes | None = read_bytes(directory, name)
        except FileNotFoundError:
            continue
        if redactor is not None:
            data = redactor.data(name, data)
        if data is not None:
            write_bytes(destination / name, data)

