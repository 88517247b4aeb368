"""Errors as facts: the user's errors a probe observed, and a probe's own failure.

A probe never raises into the worker: its own failure is a result with
status "error", so one broken probe cannot end the patient's session.
"""

from __future__ import annotations

import functools
import traceback
from collections.abc import Callable
from typing import Any

from torchdoctor.patient.probes import result


def first_line(text: str, limit: int = 300) -> str:
    """Torch messages can run to pages (C++ frames); the first paragraph says what happened."""
    head = text.strip().split("\n\n")[0]
    return head if len(head) <= limit else head[: limit - 1] + "…"


def error_facts(exc: BaseException) -> dict[str, Any]:
    """The error a probe reproduced, as the top-level facts the knowledge base tests."""
    return {
        "error_type": type(exc).__name__,
        "error_message": first_line(str(exc), limit=2000),
        "traceback": "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)),
    }


def describe_error(exc: BaseException) -> dict[str, str]:
    """The user's step failing where a training probe expected it to run: a nested fact."""
    return {"type": type(exc).__name__, "message": str(exc)[:500]}


def never_raises(fn: Callable[..., dict]) -> Callable[..., dict]:
    """A probe that breaks reports status "error" with its traceback instead of raising."""

    @functools.wraps(fn)
    def guarded(*args: Any, **kwargs: Any) -> dict:
        try:
            return fn(*args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - the probe's own failure, reported
            facts = error_facts(exc)
            return result("error", f"the probe itself failed: {facts['error_type']}: "
                          f"{first_line(facts['error_message'], 160)}", facts)

    return guarded
