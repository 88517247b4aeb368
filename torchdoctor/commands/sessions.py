"""``torchdoctor sessions [--json] [--root DIR]``: the recorded sessions, newest first."""

from __future__ import annotations

import argparse
import json
import sys

from torchdoctor.journal import list_sessions, sessions_root


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print a JSON list")
    parser.add_argument("--root", metavar="DIR", default=None,
                        help="where sessions live (default: $TORCHDOCTOR_SESSIONS or"
                        " ./.torchdoctor/sessions)")


def run(args: argparse.Namespace) -> int:
    root = sessions_root(args.root)
    if root.exists() and not root.is_dir():
        print(f"torchdoctor sessions: {root} is not a directory", file=sys.stderr)
        return 2
    infos = list_sessions(root)
    if args.json:
        rows = [{"id": i.id, "started": i.started, "title": i.title, "events": i.events,
                 "path": str(i.directory)} for i in infos]
        print(json.dumps(rows, indent=2, ensure_ascii=False))
        return 0
    if not infos:
        print(f"no sessions recorded under {root}")
        return 0
    width = max(len(i.id) for i in infos)
    print(f"{'ID':<{width}}  {'STARTED':<19}  {'EVENTS':>6}  TITLE")
    for info in infos:
        started = info.started[:19].replace("T", " ")
        print(f"{info.id:<{width}}  {started:<19}  {info.events:>6}  {info.title}")
    return 0
