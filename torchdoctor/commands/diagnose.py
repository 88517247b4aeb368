"""``torchdoctor diagnose [FILE|-] [--json] [--top N]``: a paste in, a ranked diagnosis out.

Exit status: 0 diagnosed, 1 nothing matched, 2 usage or input error. Bad
input (empty, binary, a directory, a missing file) gets one clear line on
stderr, never a stack trace. Heavy imports (rich, the matcher) happen inside
``run`` so ``torchdoctor --help`` stays fast.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass

EXIT_DIAGNOSED, EXIT_NO_MATCH, EXIT_INPUT_ERROR = 0, 1, 2
# Control bytes that never occur in text (ESC is kept: ANSI colour codes are common in
# pastes); a share above this in the first 8 KiB means a binary file, not a log.
_BINARY_BYTES = bytes([*range(9), 11, *range(14, 27), *range(28, 32)])
_BINARY_SHARE = 0.05
_HOW_TO_PASTE = (
    "give a file, or pipe the paste in with '-':\n"
    "  torchdoctor diagnose error.txt\n"
    "  pbpaste | torchdoctor diagnose -        (macOS)\n"
    "  xclip -o | torchdoctor diagnose -       (Linux)\n"
    "  python train.py 2>&1 | torchdoctor diagnose -"
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = ("Reads a traceback (or a sentence such as 'loss stays at 2.30 with 10 "
                     "classes').\nExit status: 0 diagnosed, 1 nothing matched, 2 usage or "
                     "input error.\n\n" + _HOW_TO_PASTE)
    parser.add_argument("file", nargs="?", metavar="FILE|-",
                        help="the traceback or log to read; '-' reads standard input")
    parser.add_argument("--json", action="store_true",
                        help="print one JSON object (error + ranked matches) instead of text")
    parser.add_argument("--top", type=int, default=3, metavar="N",
                        help="show the N best matches (default 3)")
    parser.add_argument("--session", action="store_true",
                        help="record a session journal (continue it with --resume, render it"
                        " with 'torchdoctor report')")


class InputError(Exception):
    """The input cannot be read as text; the message says why, for the user."""


@dataclass
class PastedText:
    text: str
    notes: list[str]


def read_input(source: str | None) -> PastedText:
    if source is None:
        if sys.stdin is None or sys.stdin.isatty():
            raise InputError("nothing to diagnose: " + _HOW_TO_PASTE)
        source = "-"
    if source == "-":
        data = sys.stdin.buffer.read()
        name = "standard input"
    else:
        data = _read_file(source)
        name = source
    return decode_paste(data, name)


def _read_file(path: str) -> bytes:
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise InputError(f"{path}: is a directory; give the file with the traceback") from None
    except PermissionError:
        raise InputError(f"{path}: permission denied") from None
    except OSError as error:
        raise InputError(f"{path}: cannot read ({error.strerror or error})") from None


def decode_paste(data: bytes, name: str) -> PastedText:
    """Bytes to text, tolerant of what people actually save and pipe."""
    notes: list[str] = []
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        text = data.decode("utf-16", errors="replace")
    else:
        sample = data[:8192]
        binary = len(sample) - len(sample.translate(None, _BINARY_BYTES))
        if sample and binary > len(sample) * _BINARY_SHARE:
            raise InputError(f"{name}: this looks like a binary file, not a traceback or log")
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError:
            text = data.decode("utf-8", errors="replace")
            notes.append(f"{name} is not valid UTF-8; undecodable bytes were replaced with �")
        text = text.replace("\x00", "")
    if not text.strip():
        raise InputError(f"{name}: the input is empty; " + _HOW_TO_PASTE.split(":\n")[0])
    return PastedText(text, notes)


def run(args: argparse.Namespace) -> int:
    if args.top < 1:
        print("torchdoctor diagnose: --top must be 1 or more", file=sys.stderr)
        return EXIT_INPUT_ERROR
    try:
        pasted = read_input(args.file)
    except InputError as error:
        print(f"torchdoctor diagnose: {error}", file=sys.stderr)
        return EXIT_INPUT_ERROR
    from torchdoctor.knowledge import KnowledgeError, load_knowledge

    try:
        kb = load_knowledge(getattr(args, "kb", None) or ())
    except KnowledgeError as error:
        print(f"torchdoctor diagnose: the knowledge base is invalid "
              f"({len(error.errors)} problems):", file=sys.stderr)
        for problem in error.errors:
            print(f"  {problem}", file=sys.stderr)
        return EXIT_INPUT_ERROR
    from torchdoctor.match import diagnose

    diagnosis = diagnose(pasted.text, kb)
    status = EXIT_DIAGNOSED if diagnosis.matches else EXIT_NO_MATCH
    if args.session:
        from torchdoctor.recording import record_diagnose

        session = record_diagnose(pasted.text, diagnosis.to_dict())
        print(f"torchdoctor diagnose: session {session.id} recorded", file=sys.stderr)
    if args.json:
        _print_json(diagnosis, args.top, pasted.notes)
        return status
    from torchdoctor.render import make_console, render_diagnosis

    for note in pasted.notes:
        print(f"torchdoctor diagnose: note: {note}", file=sys.stderr)
    render_diagnosis(diagnosis, make_console(), top=args.top)
    return status


def _print_json(diagnosis: object, top: int, notes: list[str]) -> None:
    """The Diagnosis shape, plus the checks that test its shown hypotheses on a harness."""
    import json

    from torchdoctor.render import HARNESS_HELP, check_command, suggested_checks

    shape = diagnosis.to_dict()
    shape["matches"] = shape["matches"][:top]
    checks = suggested_checks(diagnosis.matches[:top])
    shape["checks"] = checks
    shape["check_command"] = check_command([c["probe"] for c in checks]) if checks else None
    if checks:
        shape["harness_help"] = HARNESS_HELP
    if notes:
        shape["notes"] = notes
    json.dump(shape, sys.stdout, indent=2, ensure_ascii=False)
    sys.stdout.write("\n")
