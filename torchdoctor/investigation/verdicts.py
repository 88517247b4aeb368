"""Verdict discipline: what a probe result may and may not conclude about a hypothesis.

The knowledge base's ``confirm``/``reject`` criteria say what a result must
look like; this module says when a result is evidence at all. The rules,
all of them here and nowhere else:

* A probe that crashed (its own code, the patient, an error other than the
  one being explained) is ``error``: no verdict is drawn from it.
* A probe that cannot run here (no target with what it needs) is
  ``untested``, with the reason in one line.
* A rerun of an error that should raise, which did not raise, did not reach
  the failing code: it rejects nothing (``inconclusive``); only facts the
  probe read off the failing run itself (its frames) may still confirm.
* ``confirmed`` needs the confirm criteria met by a result that found
  something (status ``fail`` or ``warn``): a check that passed confirms nothing.
* ``rejected`` needs the reject criteria met by a probe that exercised the
  failing path (reproduced the error, or evaluated its predicate on the
  failing run's objects), and a status that decided (not ``inconclusive``).
  Facts that contradict a hypothesis reject it even when its confirm
  criteria also hold.
* Hypotheses of one knowledge-base entry are rival explanations of the same
  observation: at most one of them stays confirmed, the best supported.
* Across entries the knowledge base says which causes cannot stand together:
  a hypothesis ``explained_by`` a confirmed cause is set aside (a generic
  symptom such as "cannot fit one batch" is what the specific cause
  produces), and of two that ``exclude`` each other the better supported stays.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from torchdoctor.criteria import cited_facts, evaluate
from torchdoctor.investigation.sameness import describe_error, same_error

DECIDED = ("fail", "warn", "pass")
FOUND = ("fail", "warn")


@dataclass(frozen=True)
class Judgement:
    verdict: str
    reason: str = ""
    evidence: Mapping[str, Any] | None = None
    support: int = 0  # the facts the deciding criteria read, scalars or not


def judge(hypothesis: Any, result: Mapping[str, Any] | None, fields: Mapping[str, Any],
          error: Mapping[str, Any] | None = None) -> Judgement:
    """The verdict of one probe result on one hypothesis (an object or a mapping).

    ``error`` is the failure being explained (None for a silent symptom or a
    checkup): a result is judged against it, never against another one.
    """
    if result is None:
        return Judgement("untested", "no probe ran")
    status = result.get("status", "error")
    if result.get("untested"):
        return Judgement("untested", _first_line(result.get("summary")) or "the probe cannot run here")
    if status == "error":
        return Judgement("error", "the probe run crashed, so it is no evidence: "
                         + (_first_line(result.get("summary")) or "no result"))
    confirm, reject = _criteria(hypothesis, "confirm"), _criteria(hypothesis, "reject")
    unreached = _unreached(result, error)
    if unreached:
        # A rerun that never reached the failing code rejects nothing; a fact the probe
        # read off the failing run's own frames (not the rerun) may still confirm.
        if unreached[0] == "inconclusive" and fact_names(confirm) - {"raised"} \
                and evaluate(confirm, result, fields):
            return Judgement("confirmed", "", cited_facts(confirm, result),
                             len(fact_names(confirm)))
        return Judgement(*unreached)
    if status in DECIDED and evaluate(reject, result, fields):
        return Judgement("rejected", "", cited_facts(reject, result), len(fact_names(reject)))
    if evaluate(confirm, result, fields):
        if status in FOUND:
            return Judgement("confirmed", "", cited_facts(confirm, result),
                             len(fact_names(confirm)))
        if status == "inconclusive":
            return Judgement("inconclusive", "the probe could not tell: "
                             + (_first_line(result.get("summary")) or "no reason given"))
        return Judgement("inconclusive", f"the probe found nothing wrong ({status}); a check "
                         "that passes confirms nothing")
    return Judgement("inconclusive", "")


def _unreached(result: Mapping[str, Any], error: Mapping[str, Any] | None
               ) -> tuple[str, str] | None:
    """Why a rerun says nothing about ``error``: it never raised, or raised another error."""
    facts = result.get("facts") or {}
    if not error or not error.get("type") or "raised" not in facts:
        return None
    if not facts.get("raised"):
        return ("inconclusive", ("the rerun did not reach the failing code (it raised "
                "nothing), so it is no evidence either way"))
    got = {"type": facts.get("error_type"), "message": facts.get("error_message") or ""}
    if not got["message"] and not got["type"]:
        return None
    # The rerun's own frame may be a harness's, not the script's: compare type and message.
    sameness = same_error({"type": error.get("type"), "message": error.get("message") or ""},
                          got)
    if sameness.same:
        return None
    return ("error", (f"the rerun failed differently ({describe_error(got)}): "
            f"{sameness.difference}; no verdict is drawn from it"))


def settle_rivals(judged: list[Any], entry_of: Callable[[Any], str | None],
                  support: Callable[[Any], int]) -> list[Any]:
    """Keep one confirmed hypothesis per entry: the one whose criteria read the most
    facts (the most specific), then the first in the entry's own order. The others become inconclusive, saying
    which rival was preferred. ``judged`` items have ``verdict``, ``reason`` and
    ``hypothesis`` attributes (Findings)."""
    best: dict[str, Any] = {}
    for item in judged:
        entry = entry_of(item)
        if item.verdict != "confirmed" or entry is None:
            continue
        if entry not in best or support(item) > support(best[entry]):
            best[entry] = item
    for item in judged:
        entry = entry_of(item)
        if item.verdict == "confirmed" and entry in best and best[entry] is not item:
            item.verdict = "inconclusive"
            item.reason = (f"its criteria hold, but it rivals {best[entry].hypothesis}, "
                           "which the evidence supports better")
    return judged


def settle_across(judged: list[Any], relations: Callable[[str], tuple[list[str], list[str]]],
                  support: Callable[[Any], int]) -> list[Any]:
    """One confirmed cause per run, across entries, as the knowledge base declares it.

    ``relations(key)`` gives a hypothesis' ``explained_by`` and ``excludes`` ids
    (``entry.id`` or ``entry.id/hyp``). A confirmed hypothesis that a confirmed
    cause explains is set aside: the failure to fit one batch is what a missing
    ``zero_grad`` or a softmax before the loss produces, so it is no second cause.
    Of two confirmed hypotheses that exclude each other, the better supported
    stays (then the first judged). Demoted items become inconclusive, saying why.
    """
    confirmed = [item for item in judged if item.verdict == "confirmed" and item.hypothesis]

    def names(ref: str, key: str) -> bool:
        return key == ref or "/" not in ref and key.split("/", 1)[0] == ref

    explained: dict[int, str] = {}
    for item in confirmed:
        causes, _ = relations(item.hypothesis)
        by = next((other.hypothesis for other in confirmed if other is not item
                   and any(names(ref, other.hypothesis) for ref in causes)), None)
        if by is not None:
            explained[id(item)] = by
    kept = [item for item in confirmed if id(item) not in explained]
    beaten: dict[int, str] = {}
    for index, item in enumerate(kept):
        for other in kept[index + 1:]:
            if id(item) in beaten or id(other) in beaten:
                continue
            if any(names(ref, other.hypothesis) for ref in relations(item.hypothesis)[1]) or \
                    any(names(ref, item.hypothesis) for ref in relations(other.hypothesis)[1]):
                loser, winner = (item, other) if support(other) > support(item) else (other, item)
                beaten[id(loser)] = winner.hypothesis
    for item in confirmed:
        if id(item) in explained:
            item.verdict = "inconclusive"
            item.reason = (f"its criteria hold, but {explained[id(item)]} is confirmed and "
                           "explains what it names")
        elif id(item) in beaten:
            item.verdict = "inconclusive"
            item.reason = (f"its criteria hold, but it excludes {beaten[id(item)]}, which "
                           "the evidence supports better")
    return judged


def fact_names(conditions: list) -> set[str]:
    """The facts a criteria list reads, at the top level and inside ``any``."""
    names: set[str] = set()
    for condition in conditions:
        if isinstance(condition, Mapping):
            for part in condition.get("any") or [condition]:
                if isinstance(part, Mapping) and isinstance(part.get("fact"), str):
                    names.add(part["fact"].split(".")[0])
    return names


def _criteria(hypothesis: Any, name: str) -> list:
    if isinstance(hypothesis, Mapping):
        return hypothesis.get(name) or []
    return getattr(hypothesis, name, None) or []


def _first_line(text: Any) -> str:
    lines = str(text or "").strip().splitlines()
    return lines[0] if lines else ""
