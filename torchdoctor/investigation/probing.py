"""Running one probe, whatever happens to the patient that runs it.

Every way a probe can fail to produce evidence becomes a result with status
``error`` (or, when it cannot run at all here, ``untested``), so the verdict
code never has to handle exceptions: a dead patient is replaced, a hung one
stopped, and probes that need a clean process (``fresh_envs`` in the
manifest) get a new patient per environment, their runs merged into one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from torchdoctor.investigation.findings import error_result, untested_result
from torchdoctor.patient.client import (
    PatientClient,
    PatientDied,
    PatientError,
    PatientRequestError,
    PatientTimeout,
)
from torchdoctor.probes_manifest import PROBES

# ``factory(None)`` is the shared patient holding the target (the caller owns it);
# ``factory(env)`` is a fresh patient with ``env`` and the same target, which the
# caller of the factory closes.
ClientFactory = Callable[[Mapping[str, str] | None], PatientClient]
_SEVERITY = ("fail", "warn", "inconclusive", "pass", "error")


def factory_for(client: PatientClient) -> ClientFactory:
    """The usual factory: the given patient, or fresh ones made like it."""

    def make(env: Mapping[str, str] | None = None) -> PatientClient:
        return client if env is None else client.fresh(env)

    return make


def run_probe(name: str, params: dict[str, Any], client_factory: ClientFactory,
              timeout: float | None = None) -> dict:
    """One probe's result; a failure to run it becomes a result with status ``error``."""
    spec = PROBES.get(name)
    if spec is not None and spec.fresh_envs:
        return _run_in_fresh_patients(name, params, spec.fresh_envs, client_factory)
    client = client_factory(None)
    try:
        return client.probe(name, params, timeout=timeout)
    except PatientTimeout as exc:
        revive(client)
        return error_result(name, f"timed out after {exc.seconds:g} s: the probe hung",
                            facts={"timeout": True})
    except PatientDied as exc:
        revive(client)
        return error_result(name, str(exc).splitlines()[0], facts={"timeout": False})
    except PatientError as exc:
        return result_of_refusal(name, exc)


def result_of_refusal(name: str, exc: PatientError) -> dict:
    """The patient answered, but ran nothing: it had no target for this probe, or broke."""
    if isinstance(exc, PatientRequestError) and exc.type == "NoTarget":
        return untested_result(name, exc.message)
    return error_result(name, explain(exc))


def _run_in_fresh_patients(name: str, params: dict[str, Any], envs: tuple[dict[str, str], ...],
                           client_factory: ClientFactory) -> dict:
    main = client_factory(None)
    runs: list[tuple[dict[str, str], dict]] = []
    for env in envs:
        env = dict(env)
        only_if = env.pop("TORCHDOCTOR_ONLY_IF", None)
        if only_if == "cuda" and not main.cuda_available:
            continue
        try:
            fresh = client_factory(env)
        except PatientError as exc:
            runs.append((env, error_result(name, f"could not start a patient with {env}: "
                                                 f"{explain(exc)}")))
            continue
        try:
            runs.append((env, fresh.probe(name, params)))
        except PatientError as exc:
            runs.append((env, result_of_refusal(name, exc)))
        finally:
            fresh.close()
    if not runs:
        return untested_result(name, "no environment of this probe applies here")
    return merge_runs(name, runs)


def merge_runs(name: str, runs: list[tuple[dict[str, str], dict]]) -> dict:
    """One result from several environments: the first run's facts win, all are listed."""
    results = [result for _, result in runs]
    usable = [r for r in results if r.get("status") != "error"] or results
    facts: dict[str, Any] = {}
    for result in usable:
        for fact, value in (result.get("facts") or {}).items():
            facts.setdefault(fact, value)
    facts["runs"] = [
        {"env": env, "status": result.get("status"), "summary": result.get("summary")}
        for env, result in runs
    ]
    status = min((r.get("status", "error") for r in usable),
                 key=lambda s: _SEVERITY.index(s) if s in _SEVERITY else len(_SEVERITY))
    merged = {
        "probe": name,
        "status": status,
        "summary": "; ".join(r.get("summary", "") for r in usable if r.get("summary")),
        "facts": facts,
        "location": next((r["location"] for r in usable if r.get("location")), None),
        "seconds": round(sum(float(r.get("seconds") or 0) for r in results), 4),
    }
    fix = next((r["fix_at"] for r in usable if r.get("fix_at")), None)
    if fix is not None:
        merged["fix_at"] = fix
    if all(r.get("untested") for r in results):
        merged["untested"] = True
    return merged


def revive(client: PatientClient) -> None:
    """A dead patient is replaced so the next probe has a target to work on."""
    try:
        client.restart()
    except PatientError:
        pass


def explain(exc: PatientError) -> str:
    if isinstance(exc, PatientRequestError):
        return f"{exc.type}: {exc.message}"
    return str(exc)
