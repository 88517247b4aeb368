"""The Test phase of a symptom: the whole checkup on the harness, judged in the session.

A described symptom ("loss stays at 2.30") names candidate causes, but the
cause is often one the description did not suggest (gradients never cleared).
So a symptom with a harness is tested by every training check that applies,
as ``torchdoctor check`` runs them, and each result is judged twice: against
the session's own hypotheses that name that probe, and by the checkup, whose
confirmed cause joins the session with its fix when it was not there yet.
Blocking; the app runs it in a worker.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable
from typing import Any

from torchdoctor.investigation.settling import settle_session
from torchdoctor.investigation.walk import Cancelled, PatientFactory
from torchdoctor.session import Session

# Progress: (checks done, checks planned, the check now running).
Progress = Callable[[int, int, str], None]
_SUPPORTED_FIRST = {"confirmed": 0, "testing": 1, "proposed": 1, "untested": 1,
                    "inconclusive": 2, "error": 3, "rejected": 4}


class SymptomCheckup:
    """Runs the checkup on ``harness`` and records every finding in ``session``."""

    def __init__(self, session: Session, harness: str, client_factory: PatientFactory,
                 kb: Any, hypothesis_spec: Callable[[str], tuple[dict | None, dict]]) -> None:
        self.session = session
        self.harness = harness
        self.client_factory = client_factory
        self.kb = kb
        self.hypothesis_spec = hypothesis_spec
        self._client: Any = None
        self._cancelled = threading.Event()

    def run(self, progress: Progress) -> dict:
        """Every check, in order; returns the counts and the confirmed hypotheses' keys."""
        from torchdoctor.investigation import checkup

        self._cancelled.clear()
        progress(0, 0, "starting a patient and loading the harness")
        self._client = self.client_factory(None)
        try:
            self._stop_if_cancelled()
            reply = self._client.load_harness(self.harness)
            planned = checkup.plan(reply.get("found") or {})
            failed = 0
            for done, item in enumerate(planned):
                progress(done, len(planned), item[0])
                checks = checkup.run_checkup(self._client, [item], self.kb)
                self._stop_if_cancelled()
                for check in checks:
                    failed += check.finding.status == "fail"
                    self._record(check)
            progress(len(planned), len(planned), "done")
        finally:
            self._client.close()
            self._client = None
        self._rank()
        confirmed = [h.key for h in self.session.state.hypotheses.values()
                     if h.state == "confirmed"]
        return {"checks": len(planned), "failed": failed, "confirmed": confirmed}

    def cancel(self) -> None:
        """Kill the patient running a check; ``run`` stops once the check returns."""
        self._cancelled.set()
        process = getattr(self._client, "process", None)
        if process is not None and process.poll() is None:
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass

    def _stop_if_cancelled(self) -> None:
        if self._cancelled.is_set():
            raise Cancelled("stopped")

    def _record(self, check: Any) -> None:
        from torchdoctor.criteria import verdict

        finding = check.finding.to_dict()
        result = {k: finding[k] for k in ("status", "summary", "facts", "location")}
        judged_here = set()
        for hyp in list(self.session.state.hypotheses.values()):
            if hyp.probe != finding["probe"]:
                continue
            spec, fields = self.hypothesis_spec(hyp.key)
            if spec is None:
                continue
            judged_here.add(hyp.key)
            self.session.record_probe({**finding, "hypothesis": hyp.key,
                                       "verdict": verdict(spec, result, fields)})
        key = finding.get("hypothesis")
        if check.entry is not None and key not in self.session.state.hypotheses:
            self._adopt(check)
        if key in judged_here or key not in self.session.state.hypotheses:
            # Already judged by its own criteria above, or a rejection of a cause the
            # session never proposed: the result stands without a verdict.
            finding = {**finding, "hypothesis": None, "verdict": None}
        self.session.record_probe(finding)
        settle_session(self.session, self.hypothesis_spec)

    def _adopt(self, check: Any) -> None:
        """The cause a check confirmed, added to the session's matches with its fix."""
        from torchdoctor.match import render_hypotheses

        entry = check.entry
        match = {"entry": entry.id, "category": getattr(entry, "category", ""),
                 "title": getattr(entry, "title", ""), "score": None,
                 "reason": f"confirmed by the {check.finding.probe} check",
                 "fields": dict(check.fields), "facts": [],
                 "hypotheses": [h for h in render_hypotheses(entry, check.fields)
                                if h["id"] == check.hypothesis.id],
                 "references": list(getattr(entry, "references", None) or [])}
        self.session.record_diagnosis({"matches": [*self.session.state.matches, match]})

    def _rank(self) -> None:
        """Causes the evidence supports first, then the untested, then the ruled out."""
        keys = list(self.session.state.hypotheses)
        states = {k: h.state for k, h in self.session.state.hypotheses.items()}
        ranked = sorted(keys, key=lambda k: _SUPPORTED_FIRST.get(states[k], 1))
        if ranked != keys:
            self.session.reorder(ranked)
