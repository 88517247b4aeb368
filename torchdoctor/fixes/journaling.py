"""Recording fix attempts in the session, so the report and the app show the diff and its proof."""

from __future__ import annotations

from pathlib import Path

from torchdoctor.fixes.attempts import Attempt
from torchdoctor.session import Session


def record_attempts_in(directory: Path, attempts: list[Attempt], applied: dict | None) -> None:
    """For a command that does not hold the session open: open it, record, close it."""
    session, _warnings = Session.resume(directory)
    try:
        record_attempts(session, attempts, applied)
    finally:
        session.close()


def record_attempts(session: Session, attempts: list[Attempt], applied: dict | None) -> None:
    """The patches tried, each with its verification, and the verified one as the session's fix."""
    if attempts and session.state.phase != "fix":
        session.goto("fix")
    for attempt in attempts:
        if attempt.patch is None:
            session.note(f"{attempt.cause.key}: no patch — {attempt.reason}")
            continue
        verification = attempt.verification
        session.record_patch(**attempt.to_dict(), summary=verification.detail)
    chosen = next((a for a in attempts if a.verified), None)
    if chosen is not None:
        session.record_fix(chosen.patch.what, chosen.cause.key)
        after = chosen.verification.after
        session.record_verification(True, chosen.verification.detail, {
            "command": after.command if after else None,
            "seconds": after.seconds if after else None,
            "steps": after.steps if after else None,
            "applied": bool(applied and applied.get("written")),
        })


def record_written(session: Session, attempt: Attempt, backup: Path) -> None:
    """The person had a verified patch written into their file."""
    verification = attempt.verification
    after = verification.after if verification else None
    session.note(f"wrote the verified patch to {attempt.patch.file}; the original is kept as "
                 f"{backup}")
    session.record_verification(True, verification.detail if verification else "", {
        "command": after.command if after else None,
        "seconds": after.seconds if after else None,
        "steps": after.steps if after else None,
        "applied": True,
    })
