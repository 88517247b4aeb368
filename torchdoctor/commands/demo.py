"""``torchdoctor demo [--no-tui]``: walk the five phases on a bundled broken CNN.

The script is copied to a temporary folder first, so the fix is applied to
the copy. Without a terminal (or with ``--no-tui``) the same walk is printed
as text, so the README's command works in CI logs too.
"""

from __future__ import annotations

import argparse
import sys


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--no-tui", action="store_true",
                        help="print the walk as text instead of opening the app")
    parser.add_argument("--dir", metavar="DIR",
                        help="where to copy the demo script (default: a new temporary folder)")


def run(args: argparse.Namespace) -> int:
    from torchdoctor import demo

    try:
        copy = demo.prepare(args.dir)
    except OSError as exc:
        print(f"torchdoctor demo: cannot copy the demo script: {exc}", file=sys.stderr)
        return 2
    kb_dirs = tuple(getattr(args, "kb", ()) or ())
    if args.no_tui or not (sys.stdout.isatty() and sys.stdin.isatty()):
        return walk_as_text(copy, kb_dirs)
    from torchdoctor.tui import open_app

    return open_app(script=str(copy.script), target=None, demo=copy, kb_dirs=kb_dirs,
                    autostart=True, harness=copy.harness)


def walk_as_text(copy: object, kb_dirs: tuple[str, ...] = ()) -> int:
    """The five phases, printed: the same Investigation steps the app runs in its workers."""
    from torchdoctor import demo
    from torchdoctor.investigation.walk import Investigation, Target, default_client_factory
    from torchdoctor.patient.client import PatientError
    from torchdoctor.session import PHASE_TITLES, Session

    target = Target(script=str(copy.script), harness=copy.harness)
    session = Session.start(kind="demo", target=target.script)
    doctor = Investigation(session, target, default_client_factory(str(copy.directory)), kb_dirs)

    def heading(phase: str) -> None:
        session.goto(phase)
        print(f"\n== {PHASE_TITLES[phase]} ==")

    try:
        print(f"torchdoctor demo: working on a copy, {copy.script}")
        heading("reproduce")
        outcome = doctor.reproduce()
        error = session.state.error or {}
        print(f"rerun with seed 0: {outcome['detail']}")
        print(f"  {error.get('type')}: {error.get('message')}")
        heading("gather")
        frame = error.get("user_frame") or {}
        print(f"  at {frame.get('file')}:{frame.get('line')}: {frame.get('code')}")
        for finding in doctor.gather():
            print(f"  {finding['probe']}: {finding['summary']}")
        for match in session.state.matches[:1]:
            for fact in match.get("facts", []):
                print(f"  {fact}")
        heading("hypothesize")
        for number, hyp in enumerate(session.state.hypotheses.values(), 1):
            print(f"  {number}. {hyp.statement}  [tested by {hyp.probe}]")
        heading("test")
        confirmed = None
        shown: set[str] = set()
        for key in list(session.state.hypotheses):
            finding = doctor.test(key)
            print(f"  {finding['verdict']:<12} {key}")
            if finding["summary"] not in shown:  # one probe run often decides several
                shown.add(finding["summary"])
                print(f"               evidence ({finding['probe']}): {finding['summary']}")
            if finding["verdict"] == "confirmed" and confirmed is None:
                confirmed = key
        bisect = doctor.bisect()
        print(f"  bisect: {bisect.get('summary')}")
        heading("fix")
        demo.apply_fix(copy.script)
        session.record_fix(demo.FIX_SUMMARY, confirmed)
        print(f"  applied to the copy: {demo.FIX_AFTER.strip()}")
        verified = doctor.verify()
        print(f"  {'verified' if verified['passed'] else 'NOT verified'}: {verified['detail']}")
    except (PatientError, ValueError) as exc:
        print(f"torchdoctor demo: {exc}", file=sys.stderr)
        return 1
    finally:
        doctor.close()
        session.close()
    print(f"\nThe hypothesis log: {session.journal.path}")
    return 0 if verified["passed"] else 1
