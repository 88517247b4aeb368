"""Sessions for the commands that run without the app: run, check and diagnose.

``run`` and ``check`` open their session before anything runs and journal
each step as it happens (``start_run``, ``record_failure``, ``record_finding``,
``finish_run``; ``start_check``), so a kill at any moment leaves a session.
``record_run`` journals a finished outcome in one call. Either way,
``torchdoctor report`` and ``--resume`` work the same whichever front end
started the session.
"""

from __future__ import annotations

import os
from typing import Any

from torchdoctor.session import Session


def start_run(target: str, argv: list[str] | None = None,
              root: str | os.PathLike | None = None) -> Session:
    """Open a ``torchdoctor run`` session before the script starts.

    Opened first and written as things happen, so a run killed at any moment
    (even SIGKILL) leaves a session holding everything up to that moment.
    """
    return Session.start(root, kind="run", target=target, argv=list(argv or []))


def record_failure(session: Session, traceback: str, diagnosis: dict,
                   caught: bool = True) -> None:
    """The script's traceback and its diagnosis, as soon as the script has failed.

    ``caught``: the script raised it while run watched, which reproduces it.
    """
    session.record_input(traceback, source="script")
    if caught and diagnosis.get("error"):
        session.record_reproduction(True, diagnosis["error"], None,
                                    "captured while torchdoctor run ran the script")
    record_diagnosed(session, diagnosis.get("error"), diagnosis.get("matches") or [])


def finish_run(session: Session, outcome: dict, client: Any = None) -> None:
    """What is left once the findings are in: the fix, and the verified repro while the
    patient lives (the ``repro`` probe needs the live failure)."""
    error = outcome.get("error")
    if error and session.state.input_text is None:
        # The failure was not diagnosed as it happened (the patient died, or the
        # knowledge base did not load): journal what is known of it now.
        record_failure(session, outcome.get("traceback") or traceback_text(error),
                       {"error": error, "matches": outcome.get("matches") or []},
                       caught=outcome.get("exited") == "raised")
    ranked = [f"{m.get('entry')}/{h.get('id')}" for m in outcome.get("matches") or []
              for h in m.get("hypotheses") or []]
    if ranked and [k for k in session.state.hypotheses if k in ranked] != ranked:
        session.reorder(ranked)  # the findings reranked the matches: evidence first
    record_confirmed_fix(session, outcome.get("findings") or [])
    if outcome.get("exited") == "raised" and client is not None and error:
        from torchdoctor.repro import record_repro_from_patient

        record_repro_from_patient(session, client, error, outcome.get("target"),
                                  list(outcome.get("argv") or []))
    elif outcome.get("exited") in ("died", "timeout") and error:
        session.record_repro(verified=False, reason=f"the patient {outcome['exited']}:"
                             f" {error.get('message', '')}"[:300])


def record_run(outcome: dict, client: Any = None,
               root: str | os.PathLike | None = None) -> Session:
    """Journal a whole ``torchdoctor run`` outcome in one call; returns the closed session."""
    session = start_run(outcome.get("target"), outcome.get("argv"), root)
    try:
        error = outcome.get("error")
        if error:
            record_failure(session, outcome.get("traceback") or traceback_text(error),
                           {"error": error, "matches": outcome.get("matches") or []},
                           caught=outcome.get("exited") == "raised")
        for finding in outcome.get("findings") or []:
            record_finding(session, finding)
        finish_run(session, outcome, client)
    finally:
        session.close()
    return session


def start_check(target: str, root: str | os.PathLike | None = None) -> Session:
    """Open a ``torchdoctor check`` session before the harness loads; each check is
    journaled as it finishes (``record_finding``)."""
    session = Session.start(root, kind="check", target=target)
    session.record_input(target, source="harness")
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
    record_diagnosed(session, error, matches)
    for finding in findings:
        record_finding(session, finding)
    record_confirmed_fix(session, findings)


def record_diagnosed(session: Session, error: dict | None, matches: list[dict]) -> None:
    if error or matches:
        session.goto("gather")
        session.record_diagnosis({"error": error, "matches": matches})
        session.goto("hypothesize")


def record_finding(session: Session, finding: dict) -> None:
    """One probe's finding, journaled the moment it is in."""
    if session.state.phase != "test":
        session.goto("test")
    session.record_probe(finding)


def record_confirmed_fix(session: Session, findings: list[dict]) -> None:
    """The fix of the first confirmed hypothesis, in the order the findings are ranked."""
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
