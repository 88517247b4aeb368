"""One confirmed cause per session, across entries, for the session's own hypotheses.

``run`` and ``check`` settle the findings they hold in a list (``verdicts.settle_across``);
the app records each verdict in the session as it comes, one probe at a time, so the
settling has to read the session's hypotheses back. The relations come from the
knowledge base through the session's matches (``explained_by``, ``excludes``) and a
confirmation's support is the number of facts its criteria read, as between rivals of
one entry.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from torchdoctor.investigation.verdicts import fact_names, settle_across
from torchdoctor.session import Session

Spec = Callable[[str], tuple[dict | None, dict]]


@dataclass
class _Held:
    hypothesis: str
    verdict: str
    reason: str
    support: int


def confirm_facts(hypothesis: Mapping[str, Any]) -> int:
    """How many facts a hypothesis' confirm criteria read: its confirmation's support."""
    return len(fact_names(hypothesis.get("confirm") or []))


def settle_session(session: Session, hypothesis_spec: Spec) -> list[str]:
    """Demote the session's confirmed hypotheses that a confirmed cause explains or
    that lose to a better-supported cause they exclude; returns the demoted keys."""
    held = []
    for hyp in session.state.hypotheses.values():
        if hyp.state != "confirmed":
            continue
        spec = hypothesis_spec(hyp.key)[0] or {}
        held.append(_Held(hyp.key, "confirmed", "", confirm_facts(spec)))
    if len(held) < 2:
        return []

    def relations(key: str) -> tuple[list[str], list[str]]:
        spec = hypothesis_spec(key)[0] or {}
        return list(spec.get("explained_by") or []), list(spec.get("excludes") or [])

    settle_across(held, relations, lambda item: item.support)
    demoted = [item for item in held if item.verdict != "confirmed"]
    for item in demoted:
        session.set_state(item.hypothesis, item.verdict, item.reason)
    return [item.hypothesis for item in demoted]
