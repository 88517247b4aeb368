"""What a session knows that a fix needs: its target, and each confirmed cause with its site.

A session folder is data that may come from anyone, so nothing here trusts a
path it reads: the file to patch must be a regular Python file (no symlink)
inside the target's own folder or the folder the run started in.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from torchdoctor.journal import JOURNAL_NAME, read_events

CONFIRMED = "confirmed"
# The statuses of a check that found something (a pass confirms nothing).
FOUND = ("fail", "warn")


@dataclass
class Target:
    """What ran: a script with its arguments, or a harness spec; and where it ran."""

    kind: str  # "script" | "harness"
    spec: str  # the script's path, or FILE.py:NAME
    argv: list[str] = field(default_factory=list)
    cwd: str = ""

    @property
    def file(self) -> Path:
        """The script or the harness's file; a relative one is relative to where the run
        started, not to where ``fix`` runs."""
        path = Path(self.spec.rsplit(":", 1)[0] if self.kind == "harness" else self.spec)
        return path if path.is_absolute() or not self.cwd else Path(self.cwd) / path

    @property
    def root(self) -> Path:
        """The folder a verification copies: where the run started when the target
        lies inside it (imports and data paths are relative to it), else the target's own."""
        file, cwd = self.file.resolve(), Path(self.cwd or self.file.parent).resolve()
        return cwd if cwd in file.parents else file.parent


@dataclass
class Site:
    file: str
    line: int | None
    kind: str  # "fix" when provenance named the fix site, "raised" for the line that raised


@dataclass
class Cause:
    key: str  # entry/hypothesis
    entry: str
    hypothesis: str
    statement: str
    fix: dict[str, Any]
    fields: dict[str, Any]
    site: Site | None  # where to fix: the fix site when known, else where it raised
    raised: Site | None = None  # where the error was raised
    check: str | None = None  # the checkup probe that found it (a silent failure)


def read_session(directory: Path) -> tuple[Target | None, dict | None, list[Cause]]:
    """The target, the error it raised (None for a silent failure) and the confirmed causes."""
    target, error, fields, probes, states, _checks = _read(directory)
    causes = [_cause(key, state, fields, probes, error) for key, state in states.items()
              if state.get("state") == CONFIRMED and "/" in key]
    return target, error, causes


def session_cause(directory: Path, key: str) -> Cause:
    """One hypothesis of the session as a cause, whatever its verdict (or none at all): what
    a fix would have to work with had the session confirmed it. The benchmark measures the
    rewrites this way apart from how often a cause gets confirmed."""
    _, error, fields, probes, states, checks = _read(directory)
    cause = _cause(key, states.get(key, {}), fields, probes, error)
    if error is None and cause.check is None:
        # Untested by its own probe: what proves a fix is the check that found the symptom.
        cause.check = next((p.get("probe") for p in checks
                            if p.get("status") in FOUND and isinstance(p.get("probe"), str)),
                           None)
    return cause


def _read(directory: Path
          ) -> tuple[Target | None, dict | None, dict, dict, dict[str, dict], list[dict]]:
    events, _warnings = read_events(directory / JOURNAL_NAME)
    target, error, fields, probes, checks = None, None, {}, {}, []
    states: dict[str, dict] = {}
    for event in events:
        kind = event.get("type")
        if kind == "session":
            target = _target(event)
        elif kind == "parse" and isinstance(event.get("error"), dict):
            error = event["error"]
        elif kind == "matches":
            for match in event.get("matches") or []:
                if isinstance(match, dict) and isinstance(match.get("fields"), dict):
                    fields[match.get("entry")] = match["fields"]
        elif kind == "hypothesis" and isinstance(event.get("key"), str):
            states.setdefault(event["key"], {}).update(event)
        elif kind == "probe":
            checks.append(event)
            if isinstance(event.get("hypothesis"), str):
                probes[event["hypothesis"]] = event
    return target, error, fields, probes, states, checks


def _cause(key: str, state: dict, fields: dict, probes: dict, error: dict | None) -> Cause:
    entry, hypothesis = key.split("/", 1)
    probe = probes.get(key, {})
    return Cause(
        key=key, entry=entry, hypothesis=hypothesis,
        statement=str(state.get("statement") or ""),
        fix=state.get("fix") if isinstance(state.get("fix"), dict) else {},
        fields={**fields.get(entry, {}), **_facts(probe)},
        site=_site(probe, state, error),
        raised=_raised(probe, error),
        check=probe.get("probe") if error is None else None,
    )


def _target(event: dict) -> Target | None:
    spec, session_kind = event.get("target"), event.get("kind")
    if not isinstance(spec, str) or not spec:
        return None
    argv = [str(a) for a in event.get("argv") or [] if isinstance(a, (str, int, float))]
    kind = "script" if session_kind == "run" else "harness" if session_kind == "check" else None
    if kind is None:
        kind = "harness" if ":" in spec and not spec.endswith(".py") else "script"
    return Target(kind, spec, argv, str(event.get("cwd") or ""))


def _facts(probe: dict) -> dict:
    """Numbers a probe measured that a rewrite may take (the features that really arrive)."""
    facts = probe.get("facts") if isinstance(probe.get("facts"), dict) else {}
    return {k: v for k, v in facts.items() if isinstance(v, (int, float, str))}


def _site(probe: dict, state: dict, error: dict | None) -> Site | None:
    """The fix site when the evidence named one, else the line that raised."""
    for source in (state, probe):
        where = source.get("fix_at")
        if isinstance(where, dict) and isinstance(where.get("file"), str):
            return Site(where["file"], _line(where.get("line")), "fix")
    return _raised(probe, error)


def _raised(probe: dict, error: dict | None) -> Site | None:
    for where in (probe.get("raised_at"), probe.get("location"),
                  (error or {}).get("user_frame")):
        if isinstance(where, dict) and isinstance(where.get("file"), str):
            return Site(where["file"], _line(where.get("line")), "raised")
    return None


def _line(value: Any) -> int | None:
    return value if isinstance(value, int) and value > 0 else None


def patchable(path: str | os.PathLike, target: Target) -> Path | None:
    """The file, resolved, when it is a regular .py file inside the target's folder."""
    candidate = Path(path)
    if not candidate.is_absolute():
        candidate = Path(target.cwd or ".") / candidate
    if candidate.suffix != ".py" or candidate.is_symlink() or not candidate.is_file():
        return None
    resolved = candidate.resolve()
    return resolved if target.root in resolved.parents else None
