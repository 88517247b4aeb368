"""``torchdoctor report [ID] [-o FILE] [--json] [--redact] [--root DIR]``.

Renders a session (the latest when no ID) as Markdown, or JSON with ``--json``,
to ``<session dir>/report.md`` (``report.json``) by default, with the verified
repro beside it, and prints the path. ``-o -`` prints the report instead.
A session whose repro sources were recorded but never verified (killed half
way) is verified first, once, and the result journaled.
"""

from __future__ import annotations

import argparse
import sys

EXIT_OK, EXIT_USAGE = 0, 2


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("id", nargs="?", default="", metavar="ID",
                        help="session id, unique id prefix or directory (default: the latest)")
    parser.add_argument("-o", "--output", metavar="FILE",
                        help="where to write the report ('-' for standard output)")
    parser.add_argument("--json", action="store_true", help="write the report as JSON")
    parser.add_argument("--redact", action="store_true",
                        help="replace home directories, user and host names")
    parser.add_argument("--root", metavar="DIR", default=None,
                        help="where sessions live (default: $TORCHDOCTOR_SESSIONS or"
                        " ./.torchdoctor/sessions)")


def run(args: argparse.Namespace) -> int:
    from torchdoctor.journal import find_session
    from torchdoctor.report import build_report, render_markdown, to_json, write_report
    from torchdoctor.repro import verify_pending

    try:
        directory = find_session(args.id, args.root)
    except LookupError as problem:
        print(f"torchdoctor report: {problem}", file=sys.stderr)
        return EXIT_USAGE
    try:
        if args.output == "-":
            verify_pending(directory)
            report = build_report(directory, redact=args.redact)
            sys.stdout.write(to_json(report) if args.json else render_markdown(report))
            return EXIT_OK
        target = write_report(directory, args.output, as_json=args.json, redact=args.redact)
    except OSError as problem:
        print(f"torchdoctor report: {problem}", file=sys.stderr)
        return EXIT_USAGE
    print(target)
    if sys.stdout.isatty():
        print(f"to read it here: torchdoctor report {directory.name} -o -", file=sys.stderr)
    return EXIT_OK
