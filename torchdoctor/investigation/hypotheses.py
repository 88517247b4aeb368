"""Testing the hypotheses of a diagnosis against the failing run.

For the best matches of a diagnosis, each hypothesis has the probe it names
run in the patient that holds the failing run's objects (a probe shared by
several hypotheses runs once) and is judged by ``verdicts.judge`` against
the error being explained. A hypothesis no probe can test here is listed as
``untested`` with the reason, so the person sees what is still open.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from torchdoctor.investigation.findings import Finding, fix_at, raised_at
from torchdoctor.investigation.probing import ClientFactory, run_probe
from torchdoctor.investigation.verdicts import judge, settle_across, settle_rivals


def test_hypotheses(diagnosis: Any, client_factory: ClientFactory, top: int = 3,
                    only: Iterable[str] | None = None,
                    on_finding: Callable[[Finding], None] | None = None) -> list[Finding]:
    """Findings for every hypothesis of the ``top`` matches, in ranked order; ``only``
    names the probes allowed to run (all when None; the others are left out).

    ``on_finding`` is told each finding as soon as it is judged (the session journals
    it then, not at the end), and told again of an earlier one that a better-supported
    rival has since demoted.
    """
    allowed = set(only) if only else None
    tell = on_finding or (lambda finding: None)
    error = _error_of(diagnosis)
    results: dict[str, dict] = {}
    findings: list[Finding] = []
    declared: dict[str, tuple[list[str], list[str]]] = {}
    for match in list(getattr(diagnosis, "matches", []))[:top]:
        entry_id = getattr(match.entry, "id", str(match.entry))
        for hypothesis in match.hypotheses:
            key = f"{entry_id}/{hypothesis.get('id')}"
            declared[key] = (list(hypothesis.get("explained_by") or []),
                             list(hypothesis.get("excludes") or []))
            probe = hypothesis.get("probe") or {}
            if not probe.get("name"):
                if allowed is None:
                    findings.append(Finding(
                        probe=None, status="untested", summary="", hypothesis=key,
                        verdict="untested", location=None, facts={},
                        reason="no probe tests it: judge it from what you know",
                        raised_at=raised_at(error)))
                    tell(findings[-1])
                continue
            name, params = probe["name"], dict(probe.get("params") or {})
            if allowed is not None and name not in allowed:
                continue
            cache = json.dumps([name, params], sort_keys=True, default=repr)
            if cache not in results:
                results[cache] = run_probe(name, params, client_factory)
            finding = judged_finding(name, results[cache], key, hypothesis, match.fields,
                                     error)
            confirmed_before = [f for f in findings if f.verdict == "confirmed"]
            findings.append(finding)
            settle_rivals(findings, entry_of, support)
            settle_across(findings, lambda key: declared.get(key, ([], [])), support)
            tell(finding)
            for earlier in confirmed_before:
                if earlier.verdict != "confirmed":
                    tell(earlier)
    return findings


def judged_finding(name: str, result: Mapping[str, Any], key: str | None, hypothesis: Any,
                   fields: Mapping[str, Any], error: Mapping[str, Any] | None) -> Finding:
    """One result judged on one hypothesis (or, without one, recorded as evidence only)."""
    judgement = judge(hypothesis, result, fields, error) if hypothesis is not None else None
    return Finding(
        probe=name, status=result.get("status", "error"), summary=result.get("summary", ""),
        hypothesis=key, verdict=judgement.verdict if judgement else None,
        location=result.get("location"), facts=result.get("facts") or {},
        evidence=dict(judgement.evidence or {}) if judgement else {},
        reason=judgement.reason if judgement else "",
        raised_at=raised_at(error, result), fix_at=fix_at(result),
        support=judgement.support if judgement else 0)


def entry_of(finding: Finding) -> str | None:
    """The entry a finding's hypothesis belongs to (``entry.id/hyp`` → ``entry.id``)."""
    if not finding.hypothesis or "/" not in finding.hypothesis:
        return None
    return finding.hypothesis.split("/", 1)[0]


def support(finding: Finding) -> int:
    """How many observed facts decided it: the measure rival confirmations are weighed by."""
    return finding.support


def order_by_evidence(matches: list[dict], findings: list[Finding]) -> tuple[list[dict],
                                                                            list[Finding]]:
    """Entries with a confirmed hypothesis first, findings in the same order.

    The text match ranks entries before anything is tested; once a probe has
    confirmed one of them on the user's own run, that evidence outranks a
    closer wording match whose hypotheses were not confirmed. The order is
    otherwise kept.
    """
    confirmed = {entry_of(f) for f in findings if f.verdict == "confirmed"}
    ranked = sorted(matches, key=lambda match: match["entry"] not in confirmed)
    position = {match["entry"]: index for index, match in enumerate(ranked)}
    ordered = sorted(findings, key=lambda f: position.get(entry_of(f) or "", len(position)))
    return ranked, ordered


def _error_of(diagnosis: Any) -> dict | None:
    """The parsed error as a mapping (type, message, user_frame), or None for a symptom."""
    error = getattr(diagnosis, "error", None)
    if error is None:
        return None
    if isinstance(error, Mapping):
        return dict(error)
    return error.to_dict() if hasattr(error, "to_dict") else None


test_hypotheses.__test__ = False  # a name pytest would otherwise collect where it is imported
