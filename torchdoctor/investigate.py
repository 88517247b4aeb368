"""Testing hypotheses: run the probe each one names, and judge it by its own criteria.

This is where torchdoctor stops guessing. For the best matches of a
diagnosis, every hypothesis that names a probe has that probe run against
the user's own model in a patient, and its declarative ``confirm``/``reject``
criteria decide the verdict. A probe shared by several hypotheses runs once.
Probes that need a clean process (``fresh_envs`` in the manifest) get a new
patient per environment, and their runs are merged into one result.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from torchdoctor.criteria import cited_facts, verdict
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
# caller of the factory (here: ``test_hypotheses``) closes.
ClientFactory = Callable[[Mapping[str, str] | None], PatientClient]
_SEVERITY = ("fail", "warn", "inconclusive", "pass", "error")


@dataclass
class Finding:
    """One probe result judged against one hypothesis (the ``--json`` shape)."""

    probe: str | None
    status: str
    summary: str
    hypothesis: str | None
    verdict: str
    location: dict | None
    facts: dict
    # The facts the deciding criteria read ("inputs.shape.1": 3), shown as the evidence.
    evidence: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return asdict(self)


def factory_for(client: PatientClient) -> ClientFactory:
    """The usual factory: the given patient, or fresh ones made like it."""

    def make(env: Mapping[str, str] | None = None) -> PatientClient:
        return client if env is None else client.fresh(env)

    return make


def test_hypotheses(diagnosis: Any, client_factory: ClientFactory, top: int = 3,
                    only: Iterable[str] | None = None,
                    on_finding: Callable[[Finding], None] | None = None) -> list[Finding]:
    """Findings for every probe-tested hypothesis of the ``top`` matches, in ranked order;
    ``only`` names the probes allowed to run (all when None). ``on_finding`` is told each
    finding as soon as it is in (the session journals it then, not at the end)."""
    allowed = set(only) if only else None
    results: dict[str, dict] = {}
    findings: list[Finding] = []
    for match in list(getattr(diagnosis, "matches", []))[:top]:
        entry_id = getattr(match.entry, "id", str(match.entry))
        for hypothesis in match.hypotheses:
            probe = hypothesis.get("probe")
            if not probe or not probe.get("name"):
                continue
            name, params = probe["name"], dict(probe.get("params") or {})
            if allowed is not None and name not in allowed:
                continue
            key = json.dumps([name, params], sort_keys=True, default=repr)
            if key not in results:
                results[key] = run_probe(name, params, client_factory)
            result = results[key]
            judged = verdict(hypothesis, result, match.fields)
            deciding = {"confirmed": "confirm", "rejected": "reject"}.get(judged)
            findings.append(Finding(
                probe=name,
                status=result.get("status", "error"),
                summary=result.get("summary", ""),
                hypothesis=f"{entry_id}/{hypothesis.get('id')}",
                verdict=judged,
                location=result.get("location"),
                facts=result.get("facts") or {},
                evidence=cited_facts(hypothesis.get(deciding) or [], result) if deciding else {},
            ))
            if on_finding is not None:
                on_finding(findings[-1])
    return findings


def order_by_evidence(matches: list[dict], findings: list[Finding]) -> tuple[list[dict],
                                                                            list[Finding]]:
    """Entries with a confirmed hypothesis first, findings in the same order.

    The text match ranks entries before anything is tested; once a probe has
    confirmed one of them on the user's own model, that evidence outranks a
    closer wording match whose hypotheses were not confirmed (a NaN loss at
    step 0 is worded like a diverging learning rate, but log(0) was found).
    The order is otherwise kept.
    """
    confirmed = {f.hypothesis.split("/", 1)[0] for f in findings
                 if f.verdict == "confirmed" and f.hypothesis}
    ranked = sorted(matches, key=lambda match: match["entry"] not in confirmed)
    position = {match["entry"]: index for index, match in enumerate(ranked)}
    ordered = sorted(findings, key=lambda f: position.get(
        (f.hypothesis or "").split("/", 1)[0], len(position)))
    return ranked, ordered


def run_probe(name: str, params: dict[str, Any], client_factory: ClientFactory) -> dict:
    """One probe's result; a failure to run it becomes a result with status ``error``."""
    spec = PROBES.get(name)
    if spec is not None and spec.fresh_envs:
        return _run_in_fresh_patients(name, params, spec.fresh_envs, client_factory)
    client = client_factory(None)
    try:
        return client.probe(name, params)
    except (PatientDied, PatientTimeout) as exc:
        _revive(client)
        return _error_result(name, str(exc))
    except PatientError as exc:
        return _error_result(name, _explain(exc))


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
            runs.append((env, _error_result(name, f"could not start a patient with {env}: "
                                                  f"{_explain(exc)}")))
            continue
        try:
            runs.append((env, fresh.probe(name, params)))
        except PatientError as exc:
            runs.append((env, _error_result(name, _explain(exc))))
        finally:
            fresh.close()
    if not runs:
        return _error_result(name, "no environment of this probe applies here")
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
    return {
        "probe": name,
        "status": status,
        "summary": "; ".join(r.get("summary", "") for r in usable if r.get("summary")),
        "facts": facts,
        "location": next((r["location"] for r in usable if r.get("location")), None),
        "seconds": round(sum(float(r.get("seconds") or 0) for r in results), 4),
    }


def _revive(client: PatientClient) -> None:
    """A dead patient is replaced so the next probe has a target to work on."""
    try:
        client.restart()
    except PatientError:
        pass


def _explain(exc: PatientError) -> str:
    if isinstance(exc, PatientRequestError):
        return f"{exc.type}: {exc.message}"
    return str(exc)


def _error_result(name: str, summary: str) -> dict:
    return {"probe": name, "status": "error", "summary": summary, "facts": {},
            "location": None}


test_hypotheses.__test__ = False  # a name pytest would otherwise collect where it is imported
