"""``torchdoctor kb``: list, validate and show knowledge-base entries.

``kb check`` is what a user runs on their own YAML directory before relying
on it, so every problem is printed as ``file:line: message``, the form
editors and CI logs turn into links.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

EXIT_OK, EXIT_INVALID, EXIT_USAGE = 0, 1, 2


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.epilog = "Exit status: 0 ok, 1 invalid knowledge base, 2 missing directory or entry."
    actions = parser.add_subparsers(dest="kb_action", metavar="ACTION")
    listing = actions.add_parser("list", help="entries grouped by category (the default)")
    listing.add_argument("--category", metavar="C", help="only this category")
    listing.add_argument("--json", action="store_true", help="print one JSON object")
    check = actions.add_parser(
        "check",
        help="validate knowledge directories",
        description="Validate knowledge directories; with none, the shipped one and the user's.",
    )
    check.add_argument("dirs", nargs="*", metavar="DIR",
                       help="a directory of YAML files (or one YAML file)")
    show = actions.add_parser("show", help="one entry in full")
    show.add_argument("entry_id", metavar="ID", help="an entry id, such as shape.broadcast")
    show.add_argument("--json", action="store_true", help="print one JSON object")
    for sub in (listing, check, show):
        # Also accepted after the action; the global option is `torchdoctor --kb DIR kb ...`.
        sub.add_argument("--kb", action="append", default=argparse.SUPPRESS, metavar="DIR",
                         help="an extra knowledge-base directory (repeatable)")


def run(args: argparse.Namespace) -> int:
    action = getattr(args, "kb_action", None) or "list"
    if action == "check":
        return _check(list(args.dirs) + list(args.kb or []), explicit=bool(args.dirs))
    from torchdoctor.knowledge import KnowledgeError, load_knowledge

    try:
        kb = load_knowledge(getattr(args, "kb", None) or ())
    except KnowledgeError as exc:
        print(f"torchdoctor kb: {exc}", file=sys.stderr)
        return EXIT_INVALID
    if action == "show":
        return _show(kb, args.entry_id, getattr(args, "json", False))
    return _list(kb, getattr(args, "category", None), getattr(args, "json", False))


def _list(kb, category: str | None, as_json: bool) -> int:
    from torchdoctor.knowledge import CATEGORIES

    if category is not None and category not in CATEGORIES:
        print(f"torchdoctor kb: unknown category {category!r} (known: {', '.join(CATEGORIES)})",
              file=sys.stderr)
        return EXIT_USAGE
    groups = {c: e for c, e in kb.categories.items() if category in (None, c)}
    if as_json:
        entries = [_summary(entry) for group in groups.values() for entry in group]
        problems = [str(problem) for problem in kb.problems]
        print(json.dumps({"entries": entries, "problems": problems}, indent=2))
        return EXIT_OK
    if not groups:
        print("no entries" + (f" in category {category!r}" if category else ""))
        return EXIT_OK
    width = max(len(entry.id) for group in groups.values() for entry in group)
    shipped = _shipped_prefix()
    for name, entries in groups.items():
        print(f"{name} ({len(entries)})")
        for entry in entries:
            count = len(entry.hypotheses)
            origin = "" if entry.file.startswith(shipped) else f"  [{entry.source}]"
            plural = "hypothesis" if count == 1 else "hypotheses"
            print(f"  {entry.id:<{width}}  {entry.title}  ({count} {plural}){origin}")
    total = sum(len(group) for group in groups.values())
    print(f"{total} entries")
    return EXIT_OK


def _show(kb, entry_id: str, as_json: bool) -> int:
    entry = kb.by_id.get(entry_id)
    if entry is None:
        import difflib

        close = difflib.get_close_matches(entry_id, list(kb.by_id), n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else "; see `torchdoctor kb list`"
        print(f"torchdoctor kb: no entry {entry_id!r}{hint}", file=sys.stderr)
        return EXIT_USAGE
    if as_json:
        print(json.dumps(_details(entry), indent=2))
        return EXIT_OK
    from torchdoctor.kbdocs import render_entry

    print(f"source: {entry.source}\n")
    print(render_entry(entry).rstrip())
    return EXIT_OK


def _check(dirs: list[str], explicit: bool) -> int:
    from torchdoctor import config
    from torchdoctor.knowledge import knowledge_files, scan_dir, shipped_dir

    if explicit:
        targets = [(Path(d).expanduser(), True) for d in dirs]
    else:
        user_dirs = config.user_knowledge_dirs()
        targets = [(shipped_dir(), True), (user_dirs[0], False)]
        targets += [(d, True) for d in user_dirs[1:]]
        targets += [(Path(d).expanduser(), True) for d in dirs]
    status = EXIT_OK
    entries = files = problems = 0
    for directory, required in targets:
        if not directory.exists():
            if required:
                print(f"{directory}: no such knowledge directory", file=sys.stderr)
                status = EXIT_USAGE
            continue
        found, errors = scan_dir(directory)
        for error in errors:
            print(error)
        entries += len(found)
        files += len(knowledge_files(directory)) if directory.is_dir() else 1
        problems += len(errors)
        if errors and status == EXIT_OK:
            status = EXIT_INVALID
    if problems:
        print(f"{problems} problem(s) in {files} file(s)")
    elif status == EXIT_OK:
        print(f"{entries} entries in {files} files: OK")
    return status


def _summary(entry) -> dict:
    return {
        "id": entry.id,
        "category": entry.category,
        "title": entry.title,
        "hypotheses": len(entry.hypotheses),
        "patterns": len(entry.patterns),
        "symptoms": len(entry.symptoms),
        "source": entry.source,
    }


def _details(entry) -> dict:
    return {
        **_summary(entry),
        "hypotheses": [
            {
                "id": h.id,
                "statement": h.statement,
                "why": h.why,
                "predicts": h.predicts,
                "probe": h.probe,
                "params": h.params,
                "confirm": h.confirm,
                "reject": h.reject,
                "fix": None if h.fix is None else vars(h.fix),
            }
            for h in entry.hypotheses
        ],
        "patterns": [{"type": p.type, "regex": p.regex} for p in entry.patterns],
        "messages": entry.messages,
        "symptoms": [s.regex for s in entry.symptoms],
        "derive": entry.derive,
        "example": entry.example,
        "counter_example": entry.counter_example,
        "references": entry.references,
    }


def _shipped_prefix() -> str:
    from torchdoctor.knowledge import shipped_dir

    return str(shipped_dir())
