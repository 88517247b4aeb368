"""``torchdoctor`` with no command: open the app (``--resume [ID]`` continues a session)."""

from __future__ import annotations

import argparse
import sys


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The app takes only the top-level options (``--resume``, ``--kb``)."""


def run(args: argparse.Namespace) -> int:
    if not (sys.stdout.isatty() and sys.stdin.isatty()):
        print("torchdoctor: the app needs a terminal; try 'torchdoctor diagnose FILE' or "
              "'torchdoctor demo --no-tui'", file=sys.stderr)
        return 2
    from torchdoctor.tui import open_app

    session = None
    if getattr(args, "resume", None) is not None:
        from torchdoctor.journal import find_session
        from torchdoctor.session import Session

        try:
            directory = find_session(args.resume or None)
        except LookupError as exc:
            print(f"torchdoctor: {exc}", file=sys.stderr)
            return 2
        session, warnings = Session.resume(directory)
        for warning in warnings:
            print(f"torchdoctor: {warning}", file=sys.stderr)
    target = session.state.target if session is not None else None
    try:
        # A resumed session opens where it stopped; nothing reruns until the person asks.
        return open_app(session=session, target=_as_target(target),
                        kb_dirs=tuple(getattr(args, "kb", ()) or ()),
                        autostart=False if session is not None else None)
    except ValueError as exc:
        print(f"torchdoctor: {exc}", file=sys.stderr)
        return 2


def _as_target(label: str | None) -> str | None:
    """A resumed session's target, when it still names something runnable."""
    if not label:
        return None
    first = label.split()[0]
    return label if first.endswith(".py") or ":" in first else None
