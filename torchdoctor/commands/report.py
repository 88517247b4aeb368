"""``torchdoctor report [ID] [-o FILE] [--json] [--redact] [--rerun] [--root DIR]``.

Renders a session (the latest this user started when no ID) as Markdown, or
JSON with ``--json``, to ``<session dir>/report.md`` (``report.json``;
``redacted/report.md`` with ``--redact``) by default, with the verified repro
beside it, and prints the path. ``-o -`` prints the report instead.

A session folder is data that may come from anyone, so the report runs
nothing recorded in it: repro sources a killed session left unverified are
run only with ``--rerun``, and the commands that would run are shown first.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from torchdoctor.repro import PendingRepro

EXIT_OK, EXIT_USAGE = 0, 2


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("id", nargs="?", default="", metavar="ID",
                        help="session id, unique id prefix or directory (default: the latest"
                        " session you started)")
    parser.add_argument("-o", "--output", metavar="FILE",
                        help="where to write the report ('-' for standard output)")
    parser.add_argument("--json", action="store_true", help="write the report as JSON")
    parser.add_argument("--redact", action="store_true",
                        help="take out secrets (tokens, keys, emails), home directories, user"
                        " and host names from every exported file (see docs/report.md)")
    parser.add_argument("--rerun", action="store_true",
                        help="run and verify repro sources the session recorded but never"
                        " ran (this runs code from the session's journal)")
    parser.add_argument("--root", metavar="DIR", default=None,
                        help="where sessions live (default: $TORCHDOCTOR_SESSIONS or"
                        " ./.torchdoctor/sessions)")


def run(args: argparse.Namespace) -> int:
    from torchdoctor.journal import find_session
    from torchdoctor.redact import Redactor
    from torchdoctor.report import build_report, render_markdown, to_json, write_report
    from torchdoctor.repro import pending_repro, verify_pending

    try:
        directory = find_session(args.id, args.root)
    except LookupError as problem:
        print(f"torchdoctor report: {problem}", file=sys.stderr)
        return EXIT_USAGE
    redactor = Redactor() if args.redact else None
    try:
        if not args.rerun:
            _explain_pending(directory, pending_repro(directory))
        if args.output == "-":
            if args.rerun:
                verify_pending(directory, announce=_announce)
            report = build_report(directory, redact=redactor or False)
            sys.stdout.write(to_json(report) if args.json else render_markdown(report))
        else:
            print(write_report(directory, args.output, as_json=args.json,
                               redact=redactor or False, rerun=args.rerun, announce=_announce))
    except OSError as problem:
        print(f"torchdoctor report: {problem}", file=sys.stderr)
        return EXIT_USAGE
    if redactor is not None:
        print(f"torchdoctor report: redacted {redactor.summary()}", file=sys.stderr)
    if args.output != "-" and sys.stdout.isatty():
        print(f"to read it here: torchdoctor report {directory.name} -o -", file=sys.stderr)
    return EXIT_OK


def _announce(line: str) -> None:
    print(f"torchdoctor report: running {line}", file=sys.stderr, flush=True)


def _explain_pending(directory: Path, pending: PendingRepro | None) -> None:
    if pending is None:
        return
    print("torchdoctor report: this session recorded repro sources that were never run."
          " Running them runs code from the session's journal; to do so:\n"
          f"  torchdoctor report {directory.name} --rerun\n"
          "It would run:", file=sys.stderr)
    for line in pending.describe():
        print(f"  {line}", file=sys.stderr)
