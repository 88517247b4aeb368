"""Recording fix attempts in the session, so the report and the app show the diff and its proof."""

from __future__ import annotations

from pathlib import Path

from torchdoctor.fixes.attempts import Attempt
from torchdoctor.session import Session


def record_attempts(directory: Path, attempts: list[Attempt], applied: dict | None) -> None:
    session, _warnings = Session.resume(directory)
    try:
        if attempts:
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
    finally:
        session.close()
