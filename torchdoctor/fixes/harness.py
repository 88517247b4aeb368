"""Verifying a patch to a harness: the check that failed must pass on the patched copy.

A silent failure has no error to make go away; what the session confirmed
came from one checkup probe (the weights did not move, one batch could not
be overfitted). The same probe runs on the unpatched copy first, so that a
pass afterwards is the patch's doing.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

from torchdoctor.fixes.causes import FOUND, Cause, Target
from torchdoctor.fixes.verification import Run, Verification
from torchdoctor.fixes.workspace import Workspace
from torchdoctor.investigation.checkup import plan
from torchdoctor.patient.client import PatientClient, PatientError
from torchdoctor.rewrites.patch import Patch


def verify_harness(patch: Patch, cause: Cause, target: Target, timeout: float,
                   baseline: dict[str, Any], progress) -> Verification:
    check = cause.check
    if not check:
        return Verification("could_not_run", "the session does not say which check found this "
                            "cause, so there is nothing to rerun")
    name = target.spec.rsplit(":", 1)[1]
    with Workspace(target.root) as space, Workspace(target.root) as unpatched:
        space.write(patch.file, patch.patched)
        spec = f"{space.path(target.file)}:{name}"
        if check in baseline:
            progress(f"running the {check} check on the patched copy")
            before: Run = baseline[check]
            after = _run_check(spec, check, space.copy, timeout)
        else:
            # Both copies at once: the proof costs one check's time, not two.
            progress(f"running the {check} check on the unpatched and the patched copy")
            runs: dict[str, Run] = {}
            thread = threading.Thread(target=lambda: runs.setdefault("before", _run_check(
                f"{unpatched.path(target.file)}:{name}", check, unpatched.copy, timeout)),
                name="torchdoctor-baseline", daemon=True)
            thread.start()
            after = _run_check(spec, check, space.copy, timeout)
            thread.join()
            before = baseline[check] = runs["before"]
    if before.ended not in FOUND:
        return Verification("could_not_run", f"the {check} check did not fail on the unpatched "
                            f"copy ({before.ended}), so a pass cannot prove a fix", before, after)
    if after.ended == "pass":
        return Verification("verified", f"the {check} check now passes: "
                            f"{after.output_tail}", before, after)
    if after.ended == "error":
        return Verification("new_error", f"the {check} check could not run on the patched copy: "
                            f"{after.output_tail}", before, after)
    return Verification("same_error", f"the {check} check still {after.ended}s: "
                        f"{after.output_tail}", before, after)


def _run_check(spec: str, check: str, cwd: Path, timeout: float) -> Run:
    """One checkup probe on a harness, in a fresh patient; ``ended`` is the probe's status."""
    command = f"torchdoctor check {Path(spec.rsplit(':', 1)[0]).name}:{spec.rsplit(':', 1)[1]}" \
              f" --only {check}"
    started = time.perf_counter()
    try:
        with PatientClient.start(cwd=str(cwd), timeout=timeout) as client:
            found = client.load_harness(spec).get("found") or {}
            (name, params), = plan(found, only=[check])
            result = client.probe(name, params, timeout=timeout)
    except (PatientError, ValueError) as problem:
        return Run(command, "error", round(time.perf_counter() - started, 3),
                   output_tail=str(problem)[:500])
    facts = result.get("facts") or {}
    losses = [v for v in facts.get("losses", []) if isinstance(v, (int, float))] \
        if isinstance(facts.get("losses"), list) else []
    return Run(command, str(result.get("status")), round(time.perf_counter() - started, 3),
               losses=losses, output_tail=str(result.get("summary", ""))[:500])
