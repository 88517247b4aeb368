"""``torchdoctor sessions [--json] [--root DIR]``: the recorded sessions, newest first.

Every session is listed: one with malformed events shows the rest of them and
how many were skipped, one that cannot be read at all says why, and neither
hides the others.
"""

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
                 "skipped": i.skipped, "mine": i.mine, "problem": i.problem or None,
                 "path": str(i.directory)} for i in infos]
        print(json.dumps(rows, indent=2, ensure_ascii=False))
    elif not infos:
        print(f"no sessions recorded under {root}")
        return 0
    else:
        width = max(len(i.id) for i in infos)
        print(f"{'ID':<{width}}  {'STARTED':<19}  {'EVENTS':>6}  TITLE")
        for info in infos:
            started = info.started[:19].replace("T", " ")
            title = (f"(unreadable: {info.problem})" if info.problem
                     else info.title + ("" if info.mine else "  (not started by you)"))
            print(f"{info.id:<{width}}  {started:<19}  {info.events:>6}  {title}")
    _say_what_was_skipped(infos)
    return 0


def _say_what_was_skipped(infos: list) -> None:
    damaged = [i for i in infos if i.skipped]
    if damaged:
        events = sum(i.skipped for i in damaged)
        print(f"torchdoctor sessions: skipped {events} malformed events in {len(damaged)}"
              f" sessions (torchdoctor report ID lists them)", file=sys.stderr)
    unreadable = [i for i in infos if i.problem]
    if unreadable:
        print(f"torchdoctor sessions: {len(unreadable)} sessions could not be read",
              file=sys.stderr)
