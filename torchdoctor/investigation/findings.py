"""A finding: one probe result judged against one hypothesis, with where to look.

Two sites travel with every finding. ``raised_at`` is the user line the
failing run raised from (read from its failing frame); ``fix_at`` is the
line where the fix belongs, which is often elsewhere (the flatten thirty
lines earlier, the optimizer's construction). Only a probe that walked the
failing run back to its origin can name ``fix_at``; it says so in a
top-level ``fix_at`` of its result. Front ends show ``fix_at`` first and
fall back to ``raised_at``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

SITE_KEYS = ("file", "line", "code", "module")


@dataclass
class Finding:
    """The ``--json`` shape of one verdict (docs/architecture.md, "Finding")."""

    probe: str | None
    status: str
    summary: str
    hypothesis: str | None
    verdict: str | None
    location: dict | None
    facts: dict
    # The facts the deciding criteria read ("inputs.shape.1": 3), shown as the evidence.
    evidence: dict = field(default_factory=dict)
    # Why the verdict is what it is, when the criteria alone do not say (one line).
    reason: str = ""
    raised_at: dict | None = None
    fix_at: dict | None = None
    # How many facts the deciding criteria read: what rival confirmations are weighed by.
    # Internal to the engine, so not part of the JSON shape.
    support: int = field(default=0, repr=False, compare=False)

    def to_dict(self) -> dict:
        data = asdict(self)
        del data["support"]
        return data


def site(data: Mapping[str, Any] | None, module: str | None = None) -> dict | None:
    """``{"file", "line", "code", "module"}`` from a frame or location, or None without a file."""
    if not isinstance(data, Mapping) or not data.get("file"):
        return None
    return {"file": data.get("file"), "line": data.get("line"), "code": data.get("code"),
            "module": data.get("module") or module}


def raised_at(error: Mapping[str, Any] | None, result: Mapping[str, Any] | None = None,
              ) -> dict | None:
    """The failing frame of the error being explained, with the module the probe saw
    raising there when its rerun raised the same error."""
    frame = (error or {}).get("user_frame")
    facts = (result or {}).get("facts") or {}
    module = facts.get("failing_module") if facts.get("raised") else None
    return site(frame, module)


def fix_at(result: Mapping[str, Any] | None) -> dict | None:
    """The fix site a probe traced back to, when it did."""
    return site((result or {}).get("fix_at"))


def error_result(name: str, summary: str, **extra: Any) -> dict:
    """A probe result standing for a probe that did not produce one."""
    return {"probe": name, "status": "error", "summary": summary, "facts": {},
            "location": None, **extra}


def untested_result(name: str, reason: str) -> dict:
    """A probe that cannot run here (no target with what it needs): no evidence, said why."""
    return error_result(name, reason, untested=True)
