"""The app records verdicts one probe at a time; the session still ends with one cause.

A missing ``zero_grad`` is exactly what makes a model fail to fit one batch, so when
both are confirmed in a session, the generic symptom is set aside with the reason,
as ``run`` and ``check`` do with the findings they hold.
"""

from __future__ import annotations

from torchdoctor.investigation.settling import settle_session
from torchdoctor.knowledge import load_knowledge
from torchdoctor.match import render_hypotheses
from torchdoctor.session import Session

GENERIC = "training.cannot_overfit_batch/optimisation_bug"
SPECIFIC = "training.missing_zero_grad/no_zero_grad"


def _session(tmp_path, *keys: str) -> tuple[Session, object]:
    kb = load_knowledge(include_user=False, use_cache=False, report=False)
    matches = []
    for entry_id in dict.fromkeys(key.split("/")[0] for key in keys):
        entry = kb.by_id[entry_id]
        matches.append({"entry": entry_id, "title": entry.title, "fields": {},
                        "hypotheses": render_hypotheses(entry, {})})
    session = Session.start(tmp_path, kind="app")
    session.record_diagnosis({"matches": matches})
    return session, lambda key: _spec(session, key)


def _spec(session: Session, key: str) -> tuple[dict | None, dict]:
    entry, _, hyp_id = key.rpartition("/")
    for match in session.state.matches:
        for hyp in match.get("hypotheses", []):
            if match["entry"] == entry and hyp.get("id") == hyp_id:
                return hyp, {}
    return None, {}


def test_a_generic_symptom_is_set_aside_once_the_cause_that_explains_it_is_confirmed(tmp_path):
    session, spec = _session(tmp_path, GENERIC, SPECIFIC)
    session.set_state(GENERIC, "confirmed", "the batch was not fitted")
    session.set_state(SPECIFIC, "confirmed", "no zero_grad between steps")
    assert settle_session(session, spec) == [GENERIC]
    states = {key: (h.state, h.reason) for key, h in session.state.hypotheses.items()}
    assert states[SPECIFIC][0] == "confirmed"
    assert states[GENERIC][0] == "inconclusive"
    assert SPECIFIC in states[GENERIC][1]


def test_a_lone_confirmation_stays(tmp_path):
    session, spec = _session(tmp_path, GENERIC, SPECIFIC)
    session.set_state(GENERIC, "confirmed", "the batch was not fitted")
    assert settle_session(session, spec) == []
    assert session.state.hypotheses[GENERIC].state == "confirmed"
