"""Phase five's patch, for the app: propose it, verify it on a copy, write it when asked.

The work is ``torchdoctor.fixes``; this keeps what the app shows between key
presses (the proposals, the attempts, the one that was verified) and turns
the app's target into the fix's own. It runs in the app's step worker, so
everything that blocks lives in ``verify``; ``write`` happens only after
the person confirmed it.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

from torchdoctor.fixes.attempts import Attempt, Proposal, propose, verify_proposals
from torchdoctor.fixes.causes import Target as FixTarget
from torchdoctor.fixes.journaling import record_attempts, record_written
from torchdoctor.fixes.writing import StaleFile, write_patch
from torchdoctor.session import Session


class PatchStep:
    def __init__(self, session: Session, kb: Any) -> None:
        self.session = session
        self.kb = kb
        self.proposals: list[Proposal] | None = None
        self.attempts: list[Attempt] = []
        self.written: Path | None = None
        self._target: FixTarget | None = None
        self._stop = threading.Event()

    def prepare(self, target: Any) -> None:
        """The patches for the confirmed causes (parsing only, no run); once per target."""
        fix_target = _fix_target(target)
        if fix_target is None or (self.proposals is not None and fix_target == self._target):
            return
        self._target = fix_target
        _, self.proposals = propose(self.session.journal.directory, self.kb, fix_target)
        self.attempts = []

    @property
    def first(self) -> Any:
        """The patch to show: the verified one, else the first proposed."""
        verified = self.verified
        if verified is not None:
            return verified.patch
        return next((p.patches[0] for p in self.proposals or () if p.patches), None)

    @property
    def verified(self) -> Attempt | None:
        return next((a for a in self.attempts if a.verified), None)

    @property
    def can_verify(self) -> bool:
        return self.first is not None

    def ran(self) -> str:
        """What ``v`` ran, said after it ran."""
        if self._target is None or not self.attempts:
            return ""
        if self._target.kind == "script":
            return (f"python {self._target.file.name} in a scratch copy of "
                    f"{self._target.root.name}/, before and after the patch")
        return f"the failed check on a scratch copy of {self._target.root.name}/, before and after"

    def describe(self) -> str:
        """What ``v`` will run, said before it runs."""
        if self._target is None:
            return ""
        if self._target.kind == "script":
            return (f"v verifies it: python {self._target.file.name} in a scratch copy of "
                    f"{self._target.root.name}/, before and after the patch; it holds if the "
                    "error is gone and the run gets further")
        return (f"v verifies it: the check that failed, on a scratch copy of "
                f"{self._target.root.name}/, before and after the patch")

    def verify(self, progress: Any) -> dict:
        """In the worker: every proposal until one verifies; journaled in the session."""
        self._stop.clear()
        self.attempts = verify_proposals(self._target, self.proposals or [], progress=progress,
                                         stop=self._stop)
        record_attempts(self.session, self.attempts, None)
        chosen = self.verified
        last = next((a for a in reversed(self.attempts) if a.verification), None)
        detail = (chosen or last).verification.detail if (chosen or last) else \
            "no patch could be written for the confirmed cause"
        return {"passed": chosen is not None, "detail": detail}

    def cancel(self) -> None:
        self._stop.set()

    def write(self) -> str:
        """Into the user's file, with a backup; only for a verified patch."""
        chosen = self.verified
        if chosen is None:
            raise ValueError("no verified patch to write")
        path = Path(chosen.patch.file)
        try:
            backup = write_patch(chosen.patch, path)
        except StaleFile as problem:
            raise ValueError(str(problem)) from problem
        record_written(self.session, chosen, backup)
        self.written = path
        return f"Wrote {path}; the original is kept as {backup.name}"


def _fix_target(target: Any) -> FixTarget | None:
    """What a verification copies and reruns: the app runs a target in its own folder
    (``Target.directory``), so the copy starts there too, not wherever the app was opened
    (the user's home or /tmp would be copied whole)."""
    if target is None:
        return None
    folder = target.directory or os.getcwd()
    if target.script:
        return FixTarget("script", target.script, list(target.argv), folder)
    if target.harness and target.harness.rsplit(":", 1)[0].endswith(".py"):
        return FixTarget("harness", target.harness, [], folder)
    return None
