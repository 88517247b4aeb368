"""``torchdoctor report [ID] [-o FILE] [--json] [--redact] [--root DIR]``.

Renders a session (the latest when no ID) as Markdown, or JSON with ``--json``,
to ``<session dir>/report.md`` (``report.json``) by default, with the verified
repro beside it, and prints the path. ``-o -`` prints the report instead.
A session whose repro sources were recorded but never verified (killed half
way) is verified first, once, and the result journaled.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

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
    from torchdoctor.report import build_report, render_markdown, to_json
    from torchdoctor.repro import verify_pending

    try:
        directory = find_session(args.id, args.root)
    except LookupError as problem:
        print(f"torchdoctor report: {problem}", file=sys.stderr)
        return EXIT_USAGE
    try:
        verify_pending(directory)
        report = build_report(directory, redact=args.redact)
    except OSError as problem:
        print(f"torchdoctor report: cannot read {directory}: {problem}", file=sys.stderr)
        return EXIT_USAGE
    text = to_json(report) if args.json else render_markdown(report)
    if args.output == "-":
        sys.stdout.write(text)
        return EXIT_OK
    target = Path(args.output) if args.output else directory / (
        "report.json" if args.json else "report.md")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        _copy_repro(report, directory, target.parent)
    except OSError as problem:
        print(f"torchdoctor report: cannot write {target}: {problem}", file=sys.stderr)
        return EXIT_USAGE
    print(target)
    return EXIT_OK


def _copy_repro(report: dict, directory: Path, destination: Path) -> None:
    """Keep repro.py (and what it loads) beside the report wherever it is written."""
    repro = report.get("repro") or {}
    if not repro.get("verified") or destination.resolve() == directory.resolve():
        return
    for name in ["repro.py", *(repro.get("files") or [])]:
        if (directory / name).is_file():
            shutil.copyfile(directory / name, destination / name)
