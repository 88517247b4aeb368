"""For every confirmed cause of a session: its patches, each tried on a copy until one holds.

Causes are taken in the order the session confirmed them; a cause's
rewrites in the order its knowledge-base fix lists them, and each
rewrite's candidate places nearest the fix site first. The first patch
that verifies ends the search for that cause; one that trades the error
for another is kept in the list with the new error, and the next is tried.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from torchdoctor.fixes.causes import Cause, Target, patchable, read_session
from torchdoctor.fixes.verification import (
    EXTRA_STEPS,
    Run,
    Verification,
    judge_script,
    run_script,
    run_side_by_side,
)
from torchdoctor.fixes.workspace import Workspace
from torchdoctor.rewrites.operations import AT_FAILING_CALL, NotApplicable
from torchdoctor.rewrites.patch import Patch, make_patches

# Patches tried per cause before giving up on it.
MAX_TRIES = 4


@dataclass
class Attempt:
    """One patch for one cause, and what its verification showed (or why there is none)."""

    cause: Cause
    patch: Patch | None
    verification: Verification | None
    reason: str = ""  # why no patch could be written, when patch is None

    @property
    def verified(self) -> bool:
        return self.verification is not None and self.verification.verified

    def to_dict(self) -> dict:
        return {
            "entry": self.cause.entry, "hypothesis": self.cause.hypothesis,
            "file": self.patch.file if self.patch else None,
            "line": self.patch.line if self.patch else None,
            "what": self.patch.what if self.patch else None,
            "diff": self.patch.diff if self.patch else "",
            "verified": self.verified,
            "verification": self.verification.to_dict() if self.verification else None,
            "reason": self.reason,
        }


Progress = Callable[[str], None]


@dataclass
class Proposal:
    """A confirmed cause and its candidate patches, best first (none: ``reason`` says why)."""

    cause: Cause
    patches: list[Patch]
    reason: str = ""


def propose(directory: Path, kb: Any, target: Target | None = None,
            causes: list[Cause] | None = None) -> tuple[Target | None, list[Proposal]]:
    """The patches for every confirmed cause of a session (or for ``causes``), without
    running anything."""
    recorded, _error, confirmed = read_session(directory)
    target = target or recorded
    causes = confirmed if causes is None else causes
    if target is None:
        return None, []
    proposals = []
    for cause in causes:
        patches, reason = _patches(cause, target, kb)
        proposals.append(Proposal(cause, patches, "" if patches else reason))
    return target, proposals


def verify_proposals(target: Target, proposals: list[Proposal], *, timeout: float = 300.0,
                     progress: Progress = lambda line: None,
                     stop: threading.Event | None = None) -> list[Attempt]:
    """Try each cause's patches on a copy until one verifies; ``stop`` ends it between runs."""
    attempts: list[Attempt] = []
    baseline: dict[str, Any] = {}
    for proposal in proposals:
        if not proposal.patches:
            attempts.append(Attempt(proposal.cause, None, None, proposal.reason))
            continue
        for patch in proposal.patches[:MAX_TRIES]:
            if stop is not None and stop.is_set():
                return attempts
            progress(f"verifying {patch.what} ({Path(patch.file).name}:{patch.line})")
            verification = _verify(patch, proposal.cause, target, timeout, baseline, progress,
                                   stop)
            attempts.append(Attempt(proposal.cause, patch, verification))
            if verification.verified:
                break
    return attempts


def attempt_fixes(directory: Path, kb: Any, *, timeout: float = 300.0,
                  progress: Progress = lambda line: None) -> tuple[Target | None, list[Attempt]]:
    """Patch and verify every confirmed cause of the session in ``directory``."""
    target, proposals = propose(directory, kb)
    if target is None:
        return None, []
    return target, verify_proposals(target, proposals, timeout=timeout, progress=progress)


def _patches(cause: Cause, target: Target, kb: Any) -> tuple[list[Patch], str]:
    entry = kb.by_id.get(cause.entry)
    hypothesis = next((h for h in entry.hypotheses if h.id == cause.hypothesis), None) if entry \
        else None
    fix = hypothesis.fix if hypothesis else None
    if fix is None or not fix.rewrites:
        summary = fix.summary if fix else "no fix is recorded for it"
        return [], f"no rewrite is known for this fix; do it by hand: {summary}"
    patches, reasons = [], []
    for rewrite in fix.rewrites:
        # An operation on the arguments of a call rewrites the call that failed; the
        # others start from the fix site.
        site = cause.raised if rewrite["op"] in AT_FAILING_CALL and cause.raised else cause.site
        files = [site.file] if site else []
        if str(target.file) not in files:
            files.append(str(target.file))
        for name in files:
            path = patchable(name, target)
            if path is None:
                reasons.append(f"{name} is not a file of the target's project")
                continue
            line = site.line if site and Path(site.file).resolve() == path else None
            try:
                made = make_patches(str(path), path.read_text(encoding="utf-8"), rewrite, line,
                                    cause.fields)
            except NotApplicable as problem:
                reasons.append(str(problem))
                continue
            for patch in made:
                patch.label = str(path.relative_to(target.root))
            patches.extend(made)
            break
    # A patch of the very line the evidence names comes before one elsewhere, whichever
    # rewrite the fix lists first; otherwise the fix's own order stands.
    sites = {(Path(s.file).name, s.line) for s in (cause.site, cause.raised) if s and s.line}
    patches.sort(key=lambda patch: (Path(patch.file).name, patch.line) not in sites)
    return patches, "; ".join(dict.fromkeys(reasons)) or "no rewrite applies"


def _verify(patch: Patch, cause: Cause, target: Target, timeout: float,
            baseline: dict[str, Any], progress: Progress,
            stop: threading.Event | None = None) -> Verification:
    if target.kind == "script":
        return _verify_script(patch, target, timeout, baseline, progress, stop)
    from torchdoctor.fixes.harness import verify_harness

    return verify_harness(patch, cause, target, timeout, baseline, progress)


def _verify_script(patch: Patch, target: Target, timeout: float, baseline: dict[str, Any],
                   progress: Progress, stop: threading.Event | None = None) -> Verification:
    with Workspace(target.root) as space:
        script = space.path(target.file)
        cwd = _run_folder(space, target)
        space.write(patch.file, patch.patched)
        if "before" in baseline:
            before: Run = baseline["before"]
            progress(f"running the patched copy: python {script.name}")
            after = run_script(script, cwd, target.argv, before.steps + EXTRA_STEPS, timeout,
                               stop)
            return judge_script(before, after)
        # The first patch runs beside the unpatched copy: the two start together, so the
        # proof costs about one run to the failure, not two.
        with Workspace(target.root) as unpatched:
            progress(f"running the unpatched and the patched copy: python {script.name}")
            before, after = run_side_by_side(
                (unpatched.path(target.file), _run_folder(unpatched, target)), (script, cwd),
                target.argv, timeout, stop)
        if before.ended != "cancelled":
            baseline["before"] = before
    return judge_script(before, after)


def _run_folder(space: Workspace, target: Target) -> Path:
    """Where the copy runs: its root when the user's run started in the project's root, else
    the script's own folder (as the user's run did)."""
    started_in_root = bool(target.cwd) and Path(target.cwd).resolve() == target.root
    return space.copy if started_in_root else space.path(target.file).parent
