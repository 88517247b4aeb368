"""The checkup: which silent-failure probes apply to a harness, and what their results mean.

A training run that does not learn raises nothing, so the checkup runs every
training-sanity probe that applies, cheapest first, and turns each result
into a finding. A failing check is tied to the knowledge-base hypotheses
whose own ``confirm`` criteria its result meets, so the person sees the
named cause and its fix, not just a red mark. A check is judged by the
same rules as every verdict (``verdicts``): a check that passed confirms
nothing. Torch-free: probes run in the patient.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from torchdoctor.investigation.findings import Finding
from torchdoctor.investigation.hypotheses import judged_finding
from torchdoctor.investigation.probing import factory_for, run_probe
from torchdoctor.investigation.verdicts import fact_names, settle_across
from torchdoctor.investigation.verdicts import judge as judge_one
from torchdoctor.patient.client import PatientClient
from torchdoctor.probes_manifest import PROBES

# Cheapest first, so a broken harness shows its first problem within a second.
CHECK_ORDER = (
    "census", "loss_at_init", "output_head", "grad_flow", "weights_update", "loop_order",
    "determinism", "memory_phases", "dataloader", "nonfinite_steps", "memory_growth",
    "lr_range", "overfit_batch",
)
# Checks that may take more than a second, and the parameter that bounds them.
SLOW = {"dataloader": "timeout", "nonfinite_steps": None, "memory_growth": None,
        "lr_range": None, "overfit_batch": "seconds"}
STEP_PARAMS = ("memory_growth", "nonfinite_steps")
SYMBOLS = {"pass": "✓", "warn": "⚠", "fail": "✗", "error": "✗", "inconclusive": "–"}


@dataclass
class Check:
    """One check's finding, with the knowledge-base entry and hypothesis it confirms."""

    finding: Finding
    entry: Any = None
    hypothesis: Any = None
    fields: dict[str, Any] = field(default_factory=dict)  # read from the error it reproduced


def plan(found: dict[str, str], only: Iterable[str] | None = None, steps: int | None = None,
         ) -> list[tuple[str, dict[str, Any]]]:
    """(probe, params) to run on a harness whose parts the patient ``found``, in order."""
    wanted = list(only) if only else list(CHECK_ORDER)
    unknown = [name for name in wanted if name not in PROBES]
    if unknown:
        raise ValueError(f"unknown check {', '.join(unknown)}; choose from "
                         f"{', '.join(CHECK_ORDER)}")
    names = [n for n in CHECK_ORDER if n in wanted] + [n for n in wanted if n not in CHECK_ORDER]
    if not only and "loader" not in found:
        names.remove("dataloader")
    planned = []
    for name in names:
        params: dict[str, Any] = {}
        if steps is not None and name in STEP_PARAMS:
            params["steps"] = steps
        planned.append((name, params))
    return planned


def expected_bound(name: str, params: dict[str, Any]) -> str | None:
    """'up to 20 s' for the checks that may take more than a second, else None."""
    if name not in SLOW:
        return None
    key = SLOW[name]
    spec = PROBES[name]
    if key and spec.param(key) is not None:
        return f"up to {params.get(key, spec.param(key).default):g} s"
    return "a few seconds"


def hypotheses_for(probe_name: str, kb: Any) -> list[tuple[Any, Any]]:
    """(entry, hypothesis) for every hypothesis in the knowledge base tested by this probe.

    Symptom entries come first: their hypotheses explain a training run that
    raised nothing, which is what a checkup looks at, while a pattern entry's
    hypotheses assume its error was seen. Within each kind, an entry's first
    (most likely) hypotheses come before its later ones, then knowledge-base order.
    """
    if kb is None:
        return []
    ranked = [((not entry.symptoms, index, order), entry, hyp)
              for order, entry in enumerate(kb.entries)
              for index, hyp in enumerate(entry.hypotheses) if hyp.probe == probe_name]
    ranked.sort(key=lambda item: item[0])
    return [(entry, hyp) for _, entry, hyp in ranked]


def _candidates(name: str, result: dict[str, Any], kb: Any) -> list[tuple[Any, Any, dict]]:
    """The hypotheses a result may confirm, with the fields their criteria may read.

    When the probe reproduced an exception (trace, anomaly_rerun), only the
    entries that explain that very error qualify, with the numbers read from
    its message; otherwise any hypothesis tested by this probe without an
    error to go on would be judged on empty fields.
    """
    facts = result.get("facts") or {}
    if kb is not None and facts.get("raised") and facts.get("error_message"):
        from torchdoctor.match import diagnose

        error = f"{facts.get('error_type') or 'Error'}: {facts['error_message']}"
        return [(match.entry, hyp, match.fields) for match in diagnose(error, kb).matches[:3]
                for hyp in match.entry.hypotheses if hyp.probe == name]
    return [(entry, hyp, {}) for entry, hyp in hypotheses_for(name, kb)]


def _reads(hypothesis: Any, flagged: set[str]) -> bool:
    """Whether the hypothesis's confirm criteria read one of the facts a probe flagged."""
    return bool({name.split(".")[0] for name in fact_names(hypothesis.confirm or [])}
                & flagged)


def judge(name: str, result: dict[str, Any], kb: Any) -> Check:
    """A finding for one probe result: the best-supported hypothesis it confirms, or, for a
    check that passed, one it rejects; judged by the same rules as every verdict."""
    candidates = _candidates(name, result, kb)
    judged = [(entry, hyp, fields, judge_one(hyp, result, fields))
              for entry, hyp, fields in candidates]
    confirmed = [item for item in judged if item[3].verdict == "confirmed"]
    flagged = set((result.get("facts") or {}).get("flagged") or ())
    if flagged:
        # A check that warns about one thing confirms only the causes that read it: "the
        # model is in train mode" holds of every model whose census warned of anything.
        confirmed = [item for item in confirmed if _reads(item[1], flagged)]
    rejected = [item for item in judged if item[3].verdict == "rejected"]
    chosen = None
    if confirmed:
        # A symptom entry's cause outranks a pattern entry's: with no error seen, the
        # latter's criteria often only rule its rivals out ("the loader works with
        # workers" is evidence for a killed worker only once one was killed).
        chosen = max(confirmed, key=lambda item: (bool(item[0].symptoms) and not
                                                  item[0].patterns, item[3].support))
    elif rejected and result.get("status") == "pass":
        chosen = rejected[0]
    if chosen is not None:
        entry, hyp, fields, judgement = chosen
        finding = judged_finding(name, result, f"{entry.id}/{hyp.id}", hyp, fields, None)
        if judgement.verdict == "confirmed":
            return Check(finding, entry, hyp, fields)
        return Check(finding)
    finding = judged_finding(name, result, None, None, {}, None)
    own = judge_one(None, result, {})  # error and untested speak for themselves
    if own.verdict in ("error", "untested"):
        finding.verdict, finding.reason = own.verdict, own.reason
    else:
        finding.verdict = "inconclusive" if judged else "untested"
        finding.reason = "" if judged else "no knowledge-base hypothesis reads this check"
        if judged and result.get("status") == "inconclusive":
            finding.reason = next((item[3].reason for item in judged if item[3].reason
                                   .startswith("the probe could not tell")), "")
    return Check(finding)


def run_checkup(client: PatientClient, planned: list[tuple[str, dict[str, Any]]], kb: Any,
                timeout: float | None = None,
                progress: Callable[[str], None] = lambda line: None,
                on_check: Callable[[Check], None] = lambda check: None) -> list[Check]:
    """Run each planned probe; a hung or dead patient is replaced and the checkup goes on.
    ``on_check`` is told each check as soon as it is judged (the session journals it then)."""
    checks: list[Check] = []
    for name, params in planned:
        bound = expected_bound(name, params)
        if bound:
            progress(f"running {name} ({bound})…")
        result = run_probe(name, params, factory_for(client), timeout=timeout)
        checks.append(judge(name, result, kb))
        on_check(checks[-1])
        for demoted in settle(checks, kb):
            if demoted is not checks[-1]:
                on_check(demoted)  # told again: a later check named the cause it showed
    return checks


def settle(checks: list[Check], kb: Any) -> list[Check]:
    """One cause per checkup: the confirmed checks that a confirmed cause explains, or that
    lose to a better-supported cause they exclude, become inconclusive (``verdicts``).
    Returns the checks demoted now."""
    before = [c for c in checks if c.finding.verdict == "confirmed"]
    settle_across([c.finding for c in checks], lambda key: relations(key, kb),
                  lambda finding: finding.support)
    demoted = [c for c in before if c.finding.verdict != "confirmed"]
    for check in demoted:
        check.entry = check.hypothesis = None
    return demoted


def relations(key: str, kb: Any) -> tuple[list[str], list[str]]:
    """The ``explained_by`` and ``excludes`` ids the knowledge base declares for ``key``."""
    entry_id, _, hyp_id = key.partition("/")
    entry = kb.by_id.get(entry_id) if kb is not None else None
    hyp = next((h for h in getattr(entry, "hypotheses", []) if h.id == hyp_id), None)
    return (list(hyp.explained_by), list(hyp.excludes)) if hyp is not None else ([], [])


EXIT_OK, EXIT_FAILED, EXIT_INCOMPLETE = 0, 1, 3


def exit_status(checks: list[Check]) -> int:
    """1 when any check failed; else 3 when any could not run (it raised, it hung); else 0.

    Warnings do not fail a checkup; checks that never ran do not pass one.
    """
    if any(c.finding.status == "fail" for c in checks):
        return EXIT_FAILED
    if any(c.finding.status == "error" for c in checks):
        return EXIT_INCOMPLETE
    return EXIT_OK
