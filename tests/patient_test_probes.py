"""Probes that exist only for the patient's own tests: they exercise the protocol,
not a diagnosis. Loaded in a patient through ``TORCHDOCTOR_EXTRA_PROBES``."""

from __future__ import annotations

import os
import sys
import time

from torchdoctor.patient.probes import probe, result


@probe("test_echo")
def echo(ctx, **params):
    print("echo says hello on stdout")
    print("echo says hello on stderr", file=sys.stderr)
    model = type(ctx.model).__name__ if ctx is not None and ctx.model is not None else None
    return result("pass", "echoed", {"params": params, "model": model, "pid": os.getpid()})


@probe("test_raises")
def raises(ctx):
    raise ZeroDivisionError("a probe that divides by zero")


@probe("test_sleeps")
def sleeps(ctx, seconds=600.0):
    time.sleep(seconds)
    return result("pass", "woke up")


CALLS = {"count": 0}


@probe("test_counter")
def counter(ctx):
    CALLS["count"] += 1
    return result("warn", f"call {CALLS['count']}", {"count": CALLS["count"]})
