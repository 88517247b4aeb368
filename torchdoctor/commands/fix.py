"""``torchdoctor fix [ID] [--apply] [--json] [--timeout S] [--root DIR]``.

Proposes a patch to the user's own code for each cause the session
confirmed, proves each on a scratch copy of the project (the unpatched copy
first, then the patched one), and prints every diff with what its rerun
showed. ``--apply`` writes the first verified patch into the user's file,
with the original kept beside it as ``NAME.py.orig``; nothing is written
otherwise. Exit status: 0 a verified patch (applied with ``--apply``),
1 none verified, 2 usage error.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

EXIT_OK, EXIT_NONE, EXIT_USAGE = 0, 1, 2


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("id", nargs="?", default="", metavar="ID",
                        help="session id, unique id prefix or directory (default: the latest)")
    parser.add_argument("--apply", action="store_true",
                        help="write the first verified patch to your file (a backup is kept)")
    parser.add_argument("--json", action="store_true",
                        help='print {"patches": [{"entry", "hypothesis", "file", "diff", '
                        '"verified", "verification"}]}')
    parser.add_argument("--timeout", type=float, default=300.0, metavar="S",
                        help="the most one verification run may take (default 300)")
    parser.add_argument("--root", metavar="DIR", default=None,
                        help="where sessions live (default: $TORCHDOCTOR_SESSIONS or"
                        " ./.torchdoctor/sessions)")


def run(args: argparse.Namespace) -> int:
    from torchdoctor.fixes.attempts import attempt_fixes
    from torchdoctor.fixes.journaling import record_attempts_in
    from torchdoctor.journal import find_session
    from torchdoctor.knowledge import KnowledgeError, load_knowledge

    try:
        directory = Path(find_session(args.id, args.root))
    except LookupError as problem:
        print(f"torchdoctor fix: {problem}", file=sys.stderr)
        return EXIT_USAGE
    if directory.stat().st_uid != os.getuid():
        print(f"torchdoctor fix: {directory} belongs to another user; a fix reruns the code a "
              "session names, so only your own sessions are used", file=sys.stderr)
        return EXIT_USAGE
    try:
        kb = load_knowledge(getattr(args, "kb", None) or ())
    except KnowledgeError as problem:
        print(f"torchdoctor fix: {problem}", file=sys.stderr)
        return EXIT_USAGE
    say = _progress(args.json)
    target, attempts = attempt_fixes(directory, kb, timeout=args.timeout, progress=say)
    if target is None:
        print(f"torchdoctor fix: session {directory.name} names no script or harness to patch",
              file=sys.stderr)
        return EXIT_USAGE
    applied = _apply(attempts, say) if args.apply else None
    record_attempts_in(directory, attempts, applied)
    if args.json:
        print(json.dumps({"session": directory.name,
                          "patches": [a.to_dict() for a in attempts],
                          "applied": applied}, indent=2))
    else:
        _print(directory.name, target, attempts, applied, args.apply)
    return EXIT_OK if any(a.verified for a in attempts) else EXIT_NONE


def _progress(quiet: bool):
    def say(line: str) -> None:
        if not quiet and sys.stderr.isatty():
            print(f"  … {line}", file=sys.stderr)

    return say


def _apply(attempts, say) -> dict | None:
    from torchdoctor.fixes.writing import StaleFile, write_patch

    chosen = next((a for a in attempts if a.verified), None)
    if chosen is None:
        return None
    path = Path(chosen.patch.file)
    try:
        backup = write_patch(chosen.patch, path)
    except (StaleFile, OSError) as problem:
        return {"file": str(path), "written": False, "reason": str(problem)}
    say(f"wrote {path}")
    return {"file": str(path), "written": True, "backup": str(backup)}


def _print(session: str, target, attempts, applied: dict | None, asked: bool) -> None:
    if not attempts:
        print(f"Session {session} confirmed no cause, so there is nothing to fix yet.")
        return
    for attempt in attempts:
        print(f"{attempt.cause.key}: {attempt.cause.statement}")
        if attempt.patch is None:
            print(f"  no patch: {attempt.reason}\n")
            continue
        print(f"  patch: {attempt.patch.what} ({_short(attempt.patch.file)}:{attempt.patch.line})")
        for line in attempt.patch.diff.splitlines():
            print(f"    {line}")
        v = attempt.verification
        mark = "✓ verified" if attempt.verified else f"✗ {v.verdict.replace('_', ' ')}"
        print(f"  {mark}: {v.detail}")
        if v.after is not None:
            print(f"  ran: {v.after.command} in a scratch copy ({v.after.seconds:.1f} s)")
        print()
    if applied and applied.get("written"):
        print(f"Wrote {applied['file']} (the original is kept as {applied['backup']}).")
    elif applied:
        print(f"Not written: {applied['reason']}")
    elif asked:
        print("Nothing written: no patch was verified.")
    elif any(a.verified for a in attempts):
        print(f"Your files are unchanged; `torchdoctor fix {session} --apply` writes the "
              "verified patch.")


def _short(path: str) -> str:
    try:
        return str(Path(path).relative_to(Path.cwd()))
    except ValueError:
        return path
