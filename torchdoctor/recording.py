"""Sessions for the commands that run without the app: run, check and diagnose.

Each command journals what it found in one call, so ``torchdoctor report``
and ``--resume`` work the same whichever front end started the session.
"""

from __future__ import annotations

import os
from typing import Any

from torchdoctor.session import Session


def record_run(outcome: dict, client: Any = None,
               root: str | os.PathLike | None = None) -> Session:
    """Journal a ``torchdoctor run`` outcome, and its verified repro while the patient lives.

    Called by ``run`` once the findings are in, inside its ``with client:``, so
    the ``repro`` probe still sees the live failure. Returns the closed session.
    """
    session = Session.start(root, kind="run", target=outcome.get("target"),
                            argv=list(outcome.get("argv") or []))
    try:
        error = outcome.get("error")
        if error:
            session.record_input(outcome.get("traceback") or traceback_text(error),
                                 source="script")
        if outcome.get("exited") == "raised" and error:  # run caught it live: reproduced
            session.record_reproduction(True, error, None,
                                        "captured while torchdoctor run ran the script")
        record_findings(session, error, outcome.get("matches") or [],
                         outcome.get("findings") or [])
        if outcome.get("exited") == "raised" and client is not None and error:
            from torchdoctor.repro import record_repro_from_patient

            record_repro_from_patient(session, client, error, outcome.get("target"),
                                      list(outcome.get("argv") or []))
        elif outcome.get("exited") in ("died", "timeout") and error:
            session.record_repro(verified=False, reason=f"the patient {outcome['exited']}:"
                                 f" {error.get('message', '')}"[:300])
    finally:
        session.close()
    return session


def record_check(target: str, findings: list[dict],
                 root: str | os.PathLike | None = None) -> Session:
    """Journal a ``torchdoctor check`` run: the harness and each check's finding."""
    session = Session.start(root, kind="check", target=target)
    try:
        session.record_input(target, source="harness")
        record_findings(session, None, [], findings)
    finally:
        session.close()
    return session


def record_diagnose(text: str, diagnosis: dict, source: str = "paste",
                    root: str | os.PathLike | None = None) -> Session:
    """Journal ``torchdoctor diagnose --session``: the pasted text and the ranked matches."""
    session = Session.start(root, kind="diagnose")
    try:
        session.record_input(text, source=source)
        record_findings(session, diagnosis.get("error"), diagnosis.get("matches") or [], [])
    finally:
        session.close()
    return session


def record_findings(session: Session, error: dict | None, matches: list[dict],
                     findings: list[dict]) -> None:
    if error or matches:
        session.goto("gather")
        session.record_diagnosis({"error": error, "matches": matches})
        session.goto("hypothesize")
    if findings:
        session.goto("test")
    for finding in findings:
        session.record_probe(finding)
    confirmed = [f for f in findings if f.get("verdict") == "confirmed" and f.get("hypothesis")]
    for finding in confirmed[:1]:
        hypothesis = session.state.hypotheses.get(finding["hypothesis"])
        fix = (hypothesis.fix or {}) if hypothesis else {}
        if fix.get("summary"):
            session.goto("fix")
            session.record_fix(fix["summary"], finding["hypothesis"])


def traceback_text(error: dict) -> str:
    """A traceback rebuilt from a parsed error's frames, for sessions that kept no raw text."""
    lines = ["Traceback (most recent call last):"]
    for frame in error.get("frames") or []:
        lines.append(f'  File "{frame.get("file")}", line {frame.get("line")},'
                     f' in {frame.get("function")}')
        if frame.get("code"):
            lines.append(f"    {frame['code']}")
    lines.append(f"{error.get('type') or 'Error'}: {error.get('message') or ''}")
    return "\n".join(lines)
