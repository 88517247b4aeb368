"""``torchdoctor check TARGET [--json] [--only P,...] [--steps N] [--timeout S]``.

The silent-failure checkup of a harness: every training-sanity probe that
applies, cheapest first, each with ✓ / ⚠ / ✗ and, for a failure, the
knowledge-base hypothesis it confirms and its fix. Exit status: 0 every check
ran and passed or warned, 1 a check failed, 2 usage error (no such target, a
harness that does not load: its traceback is shown), 3 no check failed but
some could not run (they raised or hung). Progress for slow checks goes to
stderr, results to stdout. ``--timeout`` bounds loading the harness and each
check.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from torchdoctor.investigation.checkup import (  # noqa: F401 — the command's exit codes
    EXIT_FAILED,
    EXIT_INCOMPLETE,
    EXIT_OK,
)
from torchdoctor.location import describe_location, site_lines

EXIT_USAGE = 2


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = (
        "TARGET is FILE.py:NAME or package.module:NAME, a callable returning a dict with\n"
        "model, batch, loss_fn (and optionally optimizer, train_step, loader, num_classes).\n"
        "Exit status: 0 every check ran and passed or warned, 1 a check failed, 2 usage\n"
        "error (a harness that does not load), 3 no check failed but some could not run.")
    parser.add_argument("target", metavar="TARGET", help="the harness: FILE.py:NAME or pkg.mod:NAME")
    parser.add_argument("--json", action="store_true",
                        help='print {"target", "findings": [...]} instead of text')
    parser.add_argument("--only", metavar="P,...",
                        help="run only these checks (comma-separated probe names)")
    parser.add_argument("--steps", type=int, metavar="N",
                        help="training steps for memory_growth and nonfinite_steps")
    parser.add_argument("--timeout", type=float, metavar="S",
                        help="seconds for loading the harness and for each check before it"
                        " counts as hung (default: 300 s to load, each check its own)")


def run(args: argparse.Namespace) -> int:
    from torchdoctor.investigation import checkup
    from torchdoctor.patient.client import PatientClient, PatientError

    only = [p.strip() for p in args.only.split(",") if p.strip()] if args.only else None
    if args.steps is not None and args.steps < 1:
        return _usage("--steps must be at least 1")
    if args.timeout is not None and args.timeout <= 0:
        return _usage("--timeout must be positive")
    if ":" not in args.target:
        return _usage(f"{args.target!r} is not a harness target; write FILE.py:NAME or "
                      "package.module:NAME")
    try:
        checkup.plan({}, only)
    except ValueError as exc:
        return _usage(str(exc))
    kb = _knowledge(args)
    from torchdoctor.recording import record_finding, start_check

    # Opened before anything runs and written as each check ends: a kill leaves the session.
    session = start_check(args.target)
    try:
        client = PatientClient.start(budget=args.timeout)
    except PatientError as exc:
        session.close()
        return _usage(f"could not start the patient: {exc}")
    try:
        try:
            reply = client.load_harness(args.target, timeout=args.timeout)
        except PatientError as exc:
            return _not_loaded(args, exc)
        planned = checkup.plan(reply.get("found") or {}, only, args.steps)
        checks = checkup.run_checkup(client, planned, kb, args.timeout,
                                     progress=lambda line: print(line, file=sys.stderr,
                                                                 flush=True),
                                     on_check=lambda c: record_finding(session,
                                                                       c.finding.to_dict()))
    finally:
        client.close()
        session.close()
    if args.json:
        print(json.dumps({"target": args.target,
                          "findings": [c.finding.to_dict() for c in checks]}, default=str))
    else:
        _print_text(args.target, checks)
        print(f"session: torchdoctor report {session.id}")
    return checkup.exit_status(checks)


def _not_loaded(args: argparse.Namespace, exc: Exception) -> int:
    """The harness did not load: the user's own traceback when it raised, and a JSON answer too."""
    error: dict[str, Any] = {"type": getattr(exc, "type", type(exc).__name__),
                             "message": getattr(exc, "message", str(exc)),
                             "traceback": getattr(exc, "traceback", "") or None}
    if args.json:
        print(json.dumps({"target": args.target, "error": error, "findings": []}))
    if error["traceback"] and getattr(exc, "user", False):
        sys.stderr.write(error["traceback"].rstrip("\n") + "\n")
        return _usage(f"cannot load {args.target}: the harness raised {error['type']}"
                      " (its traceback is above)")
    if type(exc).__name__ == "PatientRequestError":
        return _usage(f"cannot load {args.target}: {error['type']}: {error['message']}")
    return _usage(f"cannot load {args.target}: {exc}")


def _knowledge(args: argparse.Namespace) -> Any:
    """The knowledge base, or None when it cannot load: the checks still run without it."""
    from torchdoctor.knowledge import KnowledgeError, load_knowledge

    try:
        return load_knowledge(getattr(args, "kb", None) or ())
    except (KnowledgeError, OSError) as exc:
        print(f"torchdoctor check: knowledge base not loaded ({exc}); checks run without "
              "hypotheses", file=sys.stderr)
        return None


def _print_text(target: str, checks: list) -> None:
    from torchdoctor.investigation.checkup import SYMBOLS
    from torchdoctor.match import fill_prose

    print(f"checkup of {target}")
    fields = _fields(checks)
    errors_seen: dict[str, str] = {}
    for check in checks:
        f = check.finding
        if f.status == "error" and _error_key(f.summary) in errors_seen:
            # One broken forward makes every later check fail the same way: say so once.
            print(f"{SYMBOLS['error']} {f.probe:<16} could not run: the same error as "
                  f"{errors_seen[_error_key(f.summary)]}")
            continue
        if f.status == "error":
            errors_seen[_error_key(f.summary)] = f.probe
        print(f"{SYMBOLS.get(f.status, '?')} {f.probe:<16} {f.summary}")
        for line in site_lines(f.to_dict()):
            print(f"    {line}")
        where = describe_location(f.location)
        if where and f.status in ("fail", "warn"):
            print(f"    at {where}")
        if check.hypothesis is not None:
            facts = {**fields, **_scalars(f.facts), **check.fields}
            print(f"    confirms {f.hypothesis}: {check.entry.title}")
            print(f"      {fill_prose(check.hypothesis.statement, facts)}")
            if check.hypothesis.fix is not None:
                print(f"    fix: {fill_prose(check.hypothesis.fix.summary, facts)}")
    print(_tally(checks))


def _error_key(summary: str) -> str:
    """The error itself, whichever check's wording ('train_step raised ...') carries it."""
    return summary.split(" raised ", 1)[-1]


def _tally(checks: list) -> str:
    """'12 checks: 1 failed, 10 could not run', counting every mark printed above."""
    counts = {status: sum(c.finding.status == status for c in checks)
              for status in ("fail", "warn", "error")}
    parts = [f"{counts['fail']} failed", f"{counts['warn']} warned"]
    if counts["error"]:
        parts.append(f"{counts['error']} could not run")
    noun = "check" if len(checks) == 1 else "checks"
    return f"{len(checks)} {noun}: {', '.join(parts)}"


def _scalars(facts: dict) -> dict:
    """The facts a sentence can quote, floats cut to four significant digits."""
    return {k: float(f"{v:.4g}") if isinstance(v, float) else v for k, v in facts.items()
            if isinstance(v, (str, int, float)) and not isinstance(v, bool)}


def _fields(checks: list) -> dict:
    """Numbers one check found that another's hypothesis quotes (the loss, C, ln C, the lr)."""
    fields: dict = {}
    for check in checks:
        fields.update(_scalars(check.finding.facts))
    for field, fact in (("classes", "num_classes"), ("lr", "user_lr")):
        if fact in fields:
            fields.setdefault(field, fields[fact])
    return fields


def _usage(message: str) -> int:
    print(f"torchdoctor check: {message}", file=sys.stderr)
    return EXIT_USAGE
