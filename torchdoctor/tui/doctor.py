"""The blocking work of each phase, kept apart from any screen.

Every method here may wait seconds on a patient process, so the app calls
them from thread workers; the text walk of ``torchdoctor demo --no-tui``
calls the same methods in order. All state goes through the Session, so
what the screens show is what the journal holds.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from torchdoctor.session import Session

# ``factory(env)`` starts a fresh patient with those environment overrides and
# no target loaded; the caller closes it. Tests pass a real one, or a fake for
# screens alone.
ClientFactory = Callable[[Mapping[str, str] | None], Any]
SEED = 0


def default_client_factory(cwd: str | None = None) -> ClientFactory:
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


def signature(error: Mapping[str, Any] | None) -> str | None:
    """What makes two failures 'the same': the parser's signature, or type and message."""
    if not error:
        return None
    return error.get("signature") or f"{error.get('type')}: {error.get('message')}"


class Doctor:
    """Runs each phase's step against patients and records it in the session."""

    def __init__(self, session: Session, target: Target | None,
                 client_factory: ClientFactory, kb_dirs: tuple[str, ...] = ()) -> None:
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
        """Rerun the target in a fresh patient with a fixed seed; was it the same failure?"""
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
            return {"same": symptom, "error": None, "detail": detail, "captured": False}
        captured = previous is None or not previous.get("type")
        if captured and failure.get("traceback"):
            self.diagnose_text(failure["traceback"], "script")
            error = self.session.state.error
        else:
            error = failure["error"]
        same = captured or signature(previous) == signature(error)
        detail = ("captured the failure" if captured else
                  "the same error came back" if same else
                  f"a different error came back: {signature(error)}")
        self.session.record_reproduction(same, error, seed, detail)
        if same and target.script and not self._repro_recorded:
            # Cut while this patient still holds the failing frames' live objects.
            from torchdoctor.repro import record_repro_from_patient

            record_repro_from_patient(self.session, client, error, target.script, target.argv)
            self._repro_recorded = True
        return {"same": same, "error": error, "detail": detail, "captured": captured}

    def _run_target(self, client: Any, target: Target) -> dict:
        if target.script:
            reply = client.run_script(target.script, target.argv, cwd=target.directory)
            if reply.get("exited") == "raised":
                return {"error": reply.get("error"), "traceback": reply.get("traceback")
                        or (reply.get("error") or {}).get("traceback"),
                        "detail": "raised"}
            return {"error": None, "traceback": None,
                    "detail": f"{target.label} ended without an exception "
                              f"({reply.get('exited')}, exit code {reply.get('exit_code')})"}
        client.load_harness(target.harness)
        result = client.probe("trace", {"backward": True})
        facts = result.get("facts") or {}
        if facts.get("raised"):
            return {"error": {"type": facts.get("error_type"),
                              "message": facts.get("error_message")},
                    "traceback": None, "detail": result.get("summary", "")}
        return {"error": None, "traceback": None,
                "detail": f"one training step of {target.label} ran without an exception"}

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
            finding = _finding(name, result, None, None)
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
        """Run the probe a hypothesis names and judge it by its own criteria."""
        from torchdoctor.criteria import verdict

        hyp = self.session.state.hypotheses.get(key)
        if hyp is None:
            raise ValueError(f"no hypothesis {key}")
        spec, fields = self.hypothesis_spec(key)
        if spec is None or not hyp.probe:
            raise ValueError("this hypothesis names no probe: confirm (y) or reject (x) it"
                             " from what you know")
        if self.shared is None or not getattr(self.shared, "alive", True):
            self.reproduce()
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
        finding = _finding(hyp.probe, result, key, verdict(spec, result, fields))
        self.session.record_probe(finding)
        return finding

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
        self.session.record_probe(_finding("bisect", result, None, None))
        if (result.get("facts") or {}).get("first_bad") and not self._traced():
            # The shapes and dtypes that reached the first bad module come from the trace.
            self._track(client)
            try:
                trace = self._probe(client, "trace", {"backward": True})
            finally:
                self._untrack(client)
            self._check_cancel()
            self.session.record_probe(_finding("trace", trace, None, None))
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
            detail = f"the rerun still fails: {signature(failure['error'])}"
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

        Probes that need fresh patients go through ``investigate.run_probe``;
        the others are asked directly so a cancel does not restart the patient.
        """
        from torchdoctor.investigate import factory_for, run_probe
        from torchdoctor.patient.client import PatientError, PatientRequestError
        from torchdoctor.probes_manifest import PROBES

        spec = PROBES.get(name)
        if spec is not None and spec.fresh_envs:
            return run_probe(name, params, factory_for(client))
        try:
            return client.probe(name, params)
        except PatientRequestError as exc:
            return {"probe": name, "status": "error", "summary": f"{exc.type}: {exc.message}",
                    "facts": {}, "location": None}
        except PatientError as exc:
            if self._cancelled.is_set():
                raise Cancelled("stopped") from None
            return {"probe": name, "status": "error", "summary": str(exc), "facts": {},
                    "location": None}

    def _track(self, client: Any) -> None:
        if client is not None and client not in self._running:
            self._running.append(client)

    def _untrack(self, client: Any) -> None:
        if client in self._running:
            self._running.remove(client)


def _finding(probe: str, result: Mapping[str, Any], key: str | None,
             verdict: str | None) -> dict:
    return {"probe": probe, "status": result.get("status", "error"),
            "summary": result.get("summary", ""), "hypothesis": key, "verdict": verdict,
            "location": result.get("location"), "facts": result.get("facts") or {}}
