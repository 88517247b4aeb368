"""The five phases' steps against real patients, recorded in a Session.

This is what the app runs in its thread workers and what ``demo --no-tui``
runs in order: reproduce the failure, gather the census, test one
hypothesis, bisect, verify a fix. Each step may wait seconds on a patient;
none knows any screen. Every outcome goes through the Session, so what a
front end shows is what the journal holds.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from torchdoctor.investigation.findings import Finding, untested_result
from torchdoctor.investigation.hypotheses import judged_finding, support
from torchdoctor.investigation.sameness import describe_error, same_error
from torchdoctor.investigation.settling import confirm_facts, settle_session
from torchdoctor.session import Session

# ``factory(env)`` starts a fresh patient with those environment overrides and
# no target loaded; the caller closes it. Tests pass a real one, or a fake for
# screens alone.
PatientFactory = Callable[[Mapping[str, str] | None], Any]
SEED = 0


def default_client_factory(cwd: str | None = None) -> PatientFactory:
    """Real patients started in ``cwd`` (the target's folder, as ``python script.py`` would)."""

    def make(env: Mapping[str, str] | None = None) -> Any:
        from torchdoctor.patient.client import PatientClient

        return PatientClient.start(dict(env or {}), cwd)

    return make


@dataclass
class Target:
    """What torchdoctor reruns: a script, a harness, or both (the demo has both)."""

    script: str | None = None
    argv: list[str] = field(default_factory=list)
    harness: str | None = None

    @property
    def label(self) -> str:
        if self.script:
            return " ".join([os.path.basename(self.script), *self.argv])
        return self.harness or "no target"

    @property
    def directory(self) -> str | None:
        where = self.script or (self.harness or "").rsplit(":", 1)[0]
        return os.path.dirname(os.path.abspath(where)) if where else None

    @classmethod
    def parse(cls, text: str) -> Target:
        """``train.py [args]``, ``file.py:function`` or ``package.module:function``."""
        words = text.split()
        if not words:
            raise ValueError("name a script (train.py) or a harness (file.py:make)")
        first = words[0]
        if first.endswith(".py"):
            if not Path(first).is_file():
                raise ValueError(f"{first}: no such script")
            return cls(script=os.path.abspath(first), argv=words[1:])
        if ":" in first:
            path, _, name = first.rpartition(":")
            if path.endswith(".py") and not Path(path).is_file():
                raise ValueError(f"{path}: no such file")
            if not name.isidentifier():
                raise ValueError(f"{first}: the part after ':' must be a function name")
            spec = f"{os.path.abspath(path)}:{name}" if path.endswith(".py") else first
            return cls(harness=spec)
        raise ValueError(f"{first}: give a .py script or a harness such as file.py:make")

    def describe(self) -> dict:
        return {"script": self.script, "argv": self.argv, "harness": self.harness}


class Cancelled(Exception):
    """The person stopped the running step; the patient was killed."""


class Investigation:
    """Runs each phase's step against patients and records it in the session."""

    def __init__(self, session: Session, target: Target | None,
                 client_factory: PatientFactory, kb_dirs: tuple[str, ...] = ()) -> None:
        self.session = session
        self.target = target
        self.client_factory = client_factory
        self.kb_dirs = kb_dirs
        self.shared: Any = None  # the patient holding the live objects of the last rerun
        self._running: list[Any] = []
        self._cancelled = threading.Event()
        self._kb: Any = None
        self._repro_recorded = False

    # -- knowledge -------------------------------------------------------------

    def knowledge(self) -> Any:
        if self._kb is None:
            from torchdoctor.knowledge import load_knowledge

            self._kb = load_knowledge(self.kb_dirs)
        return self._kb

    def diagnose_text(self, text: str, source: str) -> dict:
        """Diagnose pasted text or a symptom and record both in the journal."""
        from torchdoctor.match import diagnose

        diagnosis = diagnose(text, self.knowledge()).to_dict()
        self.session.record_input(text, source)
        self.session.record_diagnosis(diagnosis)
        return diagnosis

    @property
    def error(self) -> dict | None:
        """The failure being explained; None for a silent symptom or nothing yet."""
        error = self.session.state.error
        return error if error and error.get("type") else None

    # -- patients ----------------------------------------------------------------

    def _start(self, env: Mapping[str, str] | None) -> Any:
        self._check_cancel()
        client = self.client_factory(env)
        self._running.append(client)
        self._check_cancel()
        return client

    def _done(self, client: Any, keep: bool = False) -> None:
        if client in self._running:
            self._running.remove(client)
        if not keep:
            client.close()

    def _check_cancel(self) -> None:
        if self._cancelled.is_set():
            raise Cancelled("stopped")

    def cancel(self) -> None:
        """Kill every patient in use; the worker waiting on it sees it die and stops."""
        self._cancelled.set()
        for client in list(self._running):
            process = getattr(client, "process", None)
            if process is not None and process.poll() is None:
                try:
                    os.killpg(process.pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            elif process is None:
                client.close()

    def begin(self) -> None:
        """Called before each step so an earlier cancel does not stop the next one."""
        self._cancelled.clear()

    def close(self) -> None:
        if self.shared is not None:
            self.shared.close()
            self.shared = None

    def _replace_shared(self, client: Any) -> None:
        old, self.shared = self.shared, client
        if old is not None and old is not client:
            old.close()

    def _require_target(self) -> Target:
        if self.target is None or not (self.target.script or self.target.harness):
            raise ValueError("no target to run: give a script or a harness on the intake"
                             " screen (i)")
        return self.target

    # -- Reproduce ------------------------------------------------------------------

    def reproduce(self, seed: int = SEED) -> dict:
        """Rerun the target in a fresh patient with a fixed seed; was it the same failure?

        The answer carries ``error`` and ``traceback`` of what came back, so a
        front end can offer to diagnose a different error as its own problem.
        """
        target = self._require_target()
        client = self._start({"TORCHDOCTOR_SEED": str(seed)})
        try:
            failure = self._run_target(client, target)
        except BaseException:
            self._done(client)
            raise
        self._done(client, keep=True)
        self._replace_shared(client)
        previous = self.session.state.error
        if failure["error"] is None:
            # A symptom (a loss stuck at 2.30) raises nothing: running clean is its repro,
            # and the Test phase checks the training behaviour itself.
            symptom = bool(previous) and not previous.get("type")
            detail = failure["detail"] + ("; a silent symptom: the tests check the training"
                                          if symptom else "")
            self.session.record_reproduction(symptom, None, seed, detail)
            return {"same": symptom, "error": None, "detail": detail, "captured": False,
                    "traceback": None}
        captured = previous is None or not previous.get("type")
        if captured and failure.get("traceback"):
            self.diagnose_text(failure["traceback"], "script")
            error = self.session.state.error
        else:
            error = failure["error"]
        sameness = same_error(previous, error) if not captured else None
        same = captured or sameness.same
        detail = ("captured the failure" if captured else
                  "the same error came back" if same else
                  f"a different error came back: {describe_error(error)} "
                  f"({sameness.difference})")
        self.session.record_reproduction(same, error, seed, detail)
        if same and target.script and not self._repro_recorded:
            # Cut while this patient still holds the failing frames' live objects.
            from torchdoctor.repro import record_repro_from_patient

            record_repro_from_patient(self.session, client, error, target.script, target.argv)
            self._repro_recorded = True
        return {"same": same, "error": error, "detail": detail, "captured": captured,
                "traceback": failure.get("traceback")}

    def _run_target(self, client: Any, target: Target) -> dict:
        if target.script:
            reply = client.run_script(target.script, target.argv, cwd=target.directory)
            if reply.get("exited") == "raised":
                traceback = reply.get("traceback") or (reply.get("error") or {}).get("traceback")
                return {"error": _with_frame(reply.get("error"), traceback),
                        "traceback": traceback, "detail": "raised"}
            return {"error": None, "traceback": None,
                    "detail": f"{target.label} ended without an exception "
                              f"({reply.get('exited')}, exit code {reply.get('exit_code')})"}
        client.load_harness(target.harness)
        result = client.probe("trace", {"backward": True})
        facts = result.get("facts") or {}
        if facts.get("raised"):
            frame = ({"file": facts.get("failing_file"), "line": facts.get("failing_line"),
                      "function": facts.get("failing_function"),
                      "code": facts.get("failing_code")} if facts.get("failing_file") else None)
            return {"error": {"type": facts.get("error_type"),
                              "message": facts.get("error_message"), "user_frame": frame},
                    "traceback": None, "detail": result.get("summary", "")}
        return {"error": None, "traceback": None,
                "detail": f"one training step of {target.label} ran without an exception"}

    def _reproduced_elsewhere(self) -> str | None:
        """Why the live objects are not the failing run's: the target failed differently
        (or not at all) on its last rerun, so what a probe finds there is about another run."""
        if self.error is None or not self.session.state.reproductions:
            return None
        last = self.session.state.reproductions[-1]
        if last.get("same"):
            return None
        return (f"the target does not reproduce this error ({last.get('detail')}): a probe on "
                "it would test another run")

    # -- Gather -----------------------------------------------------------------------

    def gather(self) -> list[dict]:
        """The census of the live objects and the environment, recorded as probe runs."""
        findings = []
        names = ("census", "env") if self.shared is not None else ("env",)
        for name in names:
            self._check_cancel()
            client = self.shared if self.shared is not None else self._start(None)
            self._track(client)
            try:
                result = self._probe(client, name, {})
            finally:
                self._untrack(client)
                if client is not self.shared:
                    self._done(client)
            self._check_cancel()
            finding = judged_finding(name, result, None, None, {}, self.error).to_dict()
            self.session.record_probe(finding)
            findings.append(finding)
        return findings

    # -- Test -------------------------------------------------------------------------

    def hypothesis_spec(self, key: str) -> tuple[dict | None, dict]:
        """The knowledge-base hypothesis (with its criteria) behind a key, and its fields."""
        entry, _, hyp_id = key.rpartition("/")
        for match in self.session.state.matches:
            if match.get("entry") != entry:
                continue
            for hyp in match.get("hypotheses", []):
                if hyp.get("id") == hyp_id:
                    return hyp, match.get("fields") or {}
        return None, {}

    def test(self, key: str) -> dict:
        """Run the probe a hypothesis names and judge it against the failing run."""
        hyp = self.session.state.hypotheses.get(key)
        if hyp is None:
            raise ValueError(f"no hypothesis {key}")
        spec, fields = self.hypothesis_spec(key)
        if spec is None or not hyp.probe:
            raise ValueError("this hypothesis names no probe: confirm (y) or reject (x) it"
                             " from what you know")
        if self.shared is None or not getattr(self.shared, "alive", True):
            self.reproduce()
        elsewhere = self._reproduced_elsewhere()
        if elsewhere:
            finding = judged_finding(hyp.probe, untested_result(hyp.probe, elsewhere), key,
                                     spec, fields, self.error).to_dict()
            self.session.record_probe(finding)
            return finding
        self.session.set_state(key, "testing")
        client = self.shared
        self._track(client)
        try:
            result = self._probe(client, hyp.probe, dict(hyp.params))
            self._check_cancel()
        except Cancelled:
            self.session.set_state(key, "untested", "cancelled")
            raise
        finally:
            self._untrack(client)
        finding = judged_finding(hyp.probe, result, key, spec, fields, self.error)
        self._settle_rival(finding)
        self.session.record_probe(finding.to_dict())
        settle_session(self.session, self.hypothesis_spec)
        return finding.to_dict()

    def _settle_rival(self, finding: Finding) -> None:
        """One confirmed hypothesis per entry: a new confirmation meets an earlier one."""
        if finding.verdict != "confirmed":
            return
        entry = finding.hypothesis.rpartition("/")[0]
        for other in self.session.state.hypotheses.values():
            if other.key == finding.hypothesis or other.entry != entry \
                    or other.state != "confirmed" or not other.evidence:
                continue
            earlier = self.hypothesis_spec(other.key)[0] or {}
            if confirm_facts(earlier) >= support(finding):
                finding.verdict = "inconclusive"
                finding.reason = (f"its criteria hold, but it rivals {other.key}, which the "
                                  "evidence supports at least as well")
            else:
                self.session.set_state(other.key, "inconclusive",
                                       f"it rivals {finding.hypothesis}, which the evidence "
                                       "supports better")

    def bisect(self, lo: int = 0, hi: int = -1) -> dict:
        """The ``bisect`` probe over leaf modules, from the person's own range when given."""
        if self.shared is None:
            self.reproduce()
        client = self.shared
        self._track(client)
        try:
            result = self._probe(client, "bisect", {"over": "modules", "lo": lo, "hi": hi})
        finally:
            self._untrack(client)
        self._check_cancel()
        self.session.record_probe(judged_finding("bisect", result, None, None, {},
                                                 self.error).to_dict())
        if (result.get("facts") or {}).get("first_bad") and not self._traced():
            # The shapes and dtypes that reached the first bad module come from the trace.
            self._track(client)
            try:
                trace = self._probe(client, "trace", {"backward": True})
            finally:
                self._untrack(client)
            self._check_cancel()
            self.session.record_probe(judged_finding("trace", trace, None, None, {},
                                                     self.error).to_dict())
        return result

    def _traced(self) -> bool:
        return any(p.get("probe") == "trace" and (p.get("facts") or {}).get("input_shapes")
                   for p in self.session.state.probes)

    # -- Fix & verify -----------------------------------------------------------------

    def verify(self) -> dict:
        """Rerun the target in a fresh patient; for a harness, also overfit one batch."""
        target = self._require_target()
        client = self._start({"TORCHDOCTOR_SEED": str(SEED)})
        try:
            failure = self._run_target(client, target)
        finally:
            self._done(client)
        if failure["error"] is not None:
            sameness = same_error(self.error, failure["error"]) if self.error else None
            raised = describe_error(failure["error"])
            if sameness is None:
                detail = f"the rerun raised {raised}"
            elif sameness.same:
                detail = f"the rerun still fails the same way: {raised}"
            else:
                detail = f"the rerun fails with a different error: {raised} ({sameness.difference})"
            self.session.record_verification(False, detail, {"error": failure["error"]})
            return {"passed": False, "detail": detail, "overfit": None}
        overfit = None
        if target.harness:
            client = self._start({"TORCHDOCTOR_SEED": str(SEED)})
            try:
                client.load_harness(target.harness)
                overfit = client.probe("overfit_batch", {})
            finally:
                self._done(client)
        passed = overfit is None or overfit.get("status") == "pass"
        detail = "the rerun ran clean"
        if overfit is not None:
            detail += f"; overfit_batch: {overfit.get('summary')}"
        self.session.record_verification(passed, detail,
                                         {"overfit": (overfit or {}).get("facts")})
        return {"passed": passed, "detail": detail, "overfit": overfit}

    # -- helpers ------------------------------------------------------------------------

    def _probe(self, client: Any, name: str, params: dict) -> dict:
        """One probe's result; a patient that died (or was cancelled) becomes an error result.

        Probes that need fresh patients go through ``probing.run_probe``; the
        others are asked directly so a cancel does not restart the patient.
        """
        from torchdoctor.investigation.findings import error_result
        from torchdoctor.investigation.probing import factory_for, result_of_refusal, run_probe
        from torchdoctor.patient.client import PatientError, PatientRequestError
        from torchdoctor.probes_manifest import PROBES

        spec = PROBES.get(name)
        if spec is not None and spec.fresh_envs:
            return run_probe(name, params, factory_for(client))
        try:
            return client.probe(name, params)
        except PatientRequestError as exc:
            return result_of_refusal(name, exc)
        except PatientError as exc:
            if self._cancelled.is_set():
                raise Cancelled("stopped") from None
            return error_result(name, str(exc))

    def _track(self, client: Any) -> None:
        if client is not None and client not in self._running:
            self._running.append(client)

    def _untrack(self, client: Any) -> None:
        if client in self._running:
            self._running.remove(client)


def _with_frame(error: Mapping[str, Any] | None, traceback: str | None) -> dict | None:
    """The patient's error with the user frame its traceback names, for comparing failures."""
    if error is None:
        return None
    error = dict(error)
    if traceback and not error.get("user_frame"):
        from torchdoctor.parse import parse_traceback

        parsed = parse_traceback(traceback)
        if parsed is not None and parsed.user_frame is not None:
            error["user_frame"] = parsed.user_frame.location()
    return error
