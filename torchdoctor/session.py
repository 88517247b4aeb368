"""The five-phase method as a state machine whose every step is a journal event.

State is never changed directly: each action appends an event and then
applies it, and resuming replays the same events through the same ``apply``.
So what is on disk and what is on screen cannot drift apart.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from torchdoctor.journal import Journal
from torchdoctor.session_folder.events import PHASES

PHASE_TITLES = {
    "reproduce": "Reproduce",
    "gather": "Gather",
    "hypothesize": "Hypothesize",
    "test": "Test",
    "fix": "Fix & verify",
}
PHASE_PURPOSE = {
    "reproduce": "Make the failure happen on demand, with a fixed seed, as small as it can be.",
    "gather": "Read the error, the shapes, dtypes and devices, and the environment.",
    "hypothesize": "Rank the explanations that fit the evidence; add your own.",
    "test": "Run the probe that would tell each hypothesis true or false.",
    "fix": "Apply the fix, rerun, and prove the model learns again.",
}
STATES = ("proposed", "testing", "confirmed", "rejected", "inconclusive", "untested", "error")


@dataclass
class Hypothesis:
    key: str  # "entry.id/hyp_id", or "user/N" for the person's own
    statement: str
    entry: str | None = None
    title: str = ""
    probe: str | None = None
    params: dict[str, Any] = field(default_factory=dict)
    fix: dict[str, Any] | None = None
    predicts: str = ""
    state: str = "proposed"
    reason: str = ""
    evidence: list[dict] = field(default_factory=list)


@dataclass
class SessionState:
    phase: str = "reproduce"
    target: str | None = None
    input_text: str | None = None
    error: dict | None = None
    matches: list[dict] = field(default_factory=list)
    hypotheses: dict[str, Hypothesis] = field(default_factory=dict)
    probes: list[dict] = field(default_factory=list)
    reproductions: list[dict] = field(default_factory=list)
    repro: dict | None = None  # the latest minimal-repro attempt, verified or not
    notes: list[str] = field(default_factory=list)
    fix: dict | None = None
    patches: list[dict] = field(default_factory=list)  # proposed patches, verified or not
    verified: bool | None = None
    fix_facts: dict | None = None  # what the verification that passed ran and showed
    completed: set[str] = field(default_factory=set)


class Session:
    def __init__(self, journal: Journal, state: SessionState | None = None) -> None:
        self.journal = journal
        self.state = state or SessionState()

    @property
    def id(self) -> str:
        return self.journal.session_id

    @classmethod
    def start(cls, root: str | os.PathLike | None = None, *, kind: str = "app",
              target: str | None = None, argv: list[str] | None = None) -> Session:
        from torchdoctor import __version__

        session = cls(Journal.create(root))
        session._record("session", kind=kind, target=target, argv=argv, cwd=os.getcwd(),
                        torchdoctor=__version__)
        return session

    @classmethod
    def resume(cls, directory: str | os.PathLike) -> tuple[Session, list[str]]:
        journal, events, warnings = Journal.reopen(directory)
        session = cls(journal)
        for event in events:
            session.apply(event)
        return session, warnings

    # -- actions: each records one event ------------------------------------

    def record_input(self, text: str, source: str) -> None:
        """source: paste, file, stdin, script, symptom."""
        self._record("input", text=text, source=source)

    def record_diagnosis(self, diagnosis: dict) -> None:
        """The ``Diagnosis.to_dict()`` of the matcher: the error, then its ranked matches."""
        if diagnosis.get("error"):
            self._record("parse", error=diagnosis["error"])
        self._record("matches", matches=diagnosis.get("matches", []))
        for match in diagnosis.get("matches", []):
            for hyp in match.get("hypotheses", []):
                key = f"{match['entry']}/{hyp['id']}"
                if key in self.state.hypotheses:
                    continue
                probe = hyp.get("probe") or {}
                self._record("hypothesis", key=key, state="proposed",
                             statement=hyp.get("statement", ""), entry=match["entry"],
                             title=match.get("title", ""), probe=probe.get("name"),
                             params=probe.get("params", {}), fix=hyp.get("fix"),
                             predicts=hyp.get("predicts", ""))

    def add_hypothesis(self, statement: str) -> str:
        number = sum(1 for k in self.state.hypotheses if k.startswith("user/")) + 1
        key = f"user/{number}"
        self._record("hypothesis", key=key, state="proposed", statement=statement,
                     entry=None, title="your hypothesis")
        return key

    def set_state(self, key: str, state: str, reason: str = "") -> None:
        if state not in STATES:
            raise ValueError(f"unknown hypothesis state {state!r}")
        self._record("hypothesis", key=key, state=state, reason=reason)

    def reorder(self, keys: list[str]) -> None:
        self._record("reorder", keys=keys)

    def record_probe(self, finding: dict) -> None:
        """A probe result (a Finding: probe, status, summary, hypothesis, verdict, facts...)."""
        self._record("probe", **finding)
        if finding.get("hypothesis") and finding.get("verdict"):
            # The engine's reason says why a result decided nothing; else the result speaks.
            self._record("hypothesis", key=finding["hypothesis"], state=finding["verdict"],
                         reason=finding.get("reason") or finding.get("summary", ""))

    def record_reproduction(self, same: bool, error: dict | None, seed: int | None,
                            detail: str = "") -> None:
        self._record("reproduce", same=same, error=error, seed=seed, detail=detail)

    def note(self, text: str) -> None:
        self._record("note", text=text)

    def record_fix(self, summary: str, hypothesis: str | None = None) -> None:
        self._record("fix", summary=summary, hypothesis=hypothesis)

    def record_verification(self, passed: bool, detail: str, facts: dict | None = None) -> None:
        self._record("verify", passed=passed, detail=detail, facts=facts or {})

    def record_patch(self, **data: Any) -> None:
        self._record("patch", **data)

    def record_repro(self, **data: Any) -> None:
        self._record("repro", **data)

    def goto(self, phase: str) -> None:
        if phase not in PHASES:
            raise ValueError(f"unknown phase {phase!r}")
        self._record("phase", phase=phase)

    # -- state transitions ---------------------------------------------------

    def apply(self, event: dict) -> None:
        s = self.state
        kind = event["type"]
        if kind == "session":
            s.target = event.get("target")
        elif kind == "input":
            s.input_text = event.get("text")
        elif kind == "parse":
            s.error = event.get("error")
        elif kind == "matches":
            s.matches = event.get("matches", [])
        elif kind == "hypothesis":
            self._apply_hypothesis(event)
        elif kind == "reorder":
            order = [k for k in event.get("keys", []) if k in s.hypotheses]
            rest = [k for k in s.hypotheses if k not in order]
            s.hypotheses = {k: s.hypotheses[k] for k in order + rest}
        elif kind == "probe":
            s.probes.append(event)
            if event.get("hypothesis") in s.hypotheses:
                s.hypotheses[event["hypothesis"]].evidence.append(event)
        elif kind == "reproduce":
            s.reproductions.append(event)
            if event.get("same"):
                s.completed.add("reproduce")
        elif kind == "repro":
            s.repro = event
        elif kind == "note":
            s.notes.append(event.get("text", ""))
        elif kind == "fix":
            s.fix = event
        elif kind == "patch":
            s.patches.append(event)
        elif kind == "verify":
            s.verified = bool(event.get("passed"))
            s.fix_facts = event.get("facts") if isinstance(event.get("facts"), dict) else None
            if s.verified:
                s.completed.add("fix")
        elif kind == "phase":
            if s.phase != event["phase"] and PHASES.index(event["phase"]) > PHASES.index(s.phase):
                s.completed.update(PHASES[: PHASES.index(event["phase"])])
            s.phase = event["phase"]

    def _apply_hypothesis(self, event: dict) -> None:
        key = event["key"]
        known = self.state.hypotheses.get(key)
        if known is None:
            self.state.hypotheses[key] = Hypothesis(
                key=key, statement=event.get("statement", ""), entry=event.get("entry"),
                title=event.get("title", ""), probe=event.get("probe"),
                params=event.get("params") or {}, fix=event.get("fix"),
                predicts=event.get("predicts", ""), state=event.get("state", "proposed"),
                reason=event.get("reason", ""))
            return
        known.state = event.get("state", known.state)
        known.reason = event.get("reason", known.reason)

    def _record(self, type_: str, **data: Any) -> dict:
        event = self.journal.append(type_, **data)
        self.apply(event)
        return event

    def close(self) -> None:
        self.journal.close()
