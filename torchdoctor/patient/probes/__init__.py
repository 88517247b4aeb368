"""The probes the patient runs, registered by the names in ``probes_manifest``.

Every module in this package registers its probes with ``@probe(name)``;
``load_all`` imports them all, so adding a probe is adding a module.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from typing import Any

from torchdoctor.patient.context import ProbeContext

ProbeFn = Callable[..., dict]
REGISTRY: dict[str, ProbeFn] = {}
STATUSES = ("pass", "warn", "fail", "inconclusive", "error")


def probe(name: str) -> Callable[[ProbeFn], ProbeFn]:
    def register(fn: ProbeFn) -> ProbeFn:
        if name in REGISTRY:
            raise ValueError(f"probe {name!r} registered twice")
        REGISTRY[name] = fn
        return fn

    return register


def result(status: str, summary: str, facts: dict[str, Any] | None = None,
           location: dict[str, Any] | None = None) -> dict:
    """The JSON a probe answers with; facts must be JSON-serialisable."""
    if status not in STATUSES:
        raise ValueError(f"unknown probe status {status!r}")
    return {"status": status, "summary": summary, "facts": facts or {}, "location": location}


def load_all() -> dict[str, ProbeFn]:
    for info in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{info.name}")
    return REGISTRY


def run_probe(name: str, ctx: ProbeContext, params: dict[str, Any]) -> dict:
    fn = load_all()[name]
    return fn(ctx, **params)
