"""``torchdoctor diagnose [FILE|-] [--json] [--top N]``: a paste in, a ranked diagnosis out.

Exit status: 0 diagnosed, 1 nothing recognised (similar entries may still be
shown), 2 usage or input error. A match scoring below the calibrated
``match.CONFIDENT`` is worded as a guess. Bad
input (empty, binary, a directory, a missing file) gets one clear line on
stderr, never a stack trace. Heavy imports (rich, the matcher) happen inside
``run`` so ``torchdoctor --help`` stays fast.
"""

from __future__ import annotations

import argparse
import collections
import os
import stat
import sys
from dataclasses import dataclass
from typing import BinaryIO

EXIT_DIAGNOSED, EXIT_NO_MATCH, EXIT_INPUT_ERROR = 0, 1, 2
# Control bytes that never occur in text (ESC is kept: ANSI colour codes are common in
# pastes, and NUL is dropped before this test); a share above this in the first 8 KiB
# means a binary file, not a log.
_BINARY_BYTES = bytes([*range(1, 9), 11, *range(14, 27), *range(28, 32)])
_BINARY_SHARE = 0.05
# The end of a log is what holds the error: at most KEPT_BYTES of it are read, and a
# pipe or device is read no further than STREAM_BYTES (see _read_tail).
KEPT_BYTES = 8 * 2**20
STREAM_BYTES = 64 * 2**20
_CHUNK = 2**20
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
                     "classes').\nExit status: 0 diagnosed, 1 nothing recognised (similar "
                     "entries may be shown), 2 usage or input error.\n\n" + _HOW_TO_PASTE)
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
        stream = getattr(sys.stdin, "buffer", None)
        if stream is None or stream.closed:
            raise InputError("standard input is closed; " + _HOW_TO_PASTE)
        data, cut = _read_tail(stream, None, "standard input")
        name = "standard input"
    else:
        data, cut = _read_file(source)
        name = source
    try:
        pasted = decode_paste(data, name)
    except InputError as error:
        raise InputError(f"{error} ({cut})" if cut else str(error)) from None
    if cut:
        pasted.notes.insert(0, cut)
    return pasted


def _read_file(path: str) -> tuple[bytes, str]:
    try:
        with open(path, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size if _regular(handle) else None
            return _read_tail(handle, size, path)
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise InputError(f"{path}: is a directory; give the file with the traceback") from None
    except PermissionError:
        raise InputError(f"{path}: permission denied") from None
    except OSError as error:
        raise InputError(f"{path}: cannot read ({error.strerror or error})") from None


def _regular(handle: BinaryIO) -> bool:
    return stat.S_ISREG(os.fstat(handle.fileno()).st_mode)


def _read_tail(stream: BinaryIO, size: int | None, name: str) -> tuple[bytes, str]:
    """At most ``KEPT_BYTES`` from the end of the input, and a note when more was there.

    A file's tail is read directly. A pipe or a device has no end to seek to: it is
    read until it ends or ``STREAM_BYTES`` have gone by, keeping the last
    ``KEPT_BYTES``, so ``/dev/zero`` or an endless producer stops instead of hanging.
    """
    if size is not None:
        if size > KEPT_BYTES:
            stream.seek(size - KEPT_BYTES)
            return stream.read(KEPT_BYTES), (
                f"{name} is {_mib(size)}; only its last {_mib(KEPT_BYTES)} were read")
        return stream.read(), ""
    chunks: collections.deque[bytes] = collections.deque()
    kept = total = 0
    while total < STREAM_BYTES:
        chunk = stream.read(min(_CHUNK, STREAM_BYTES - total))
        if not chunk:
            break
        chunks.append(chunk)
        kept += len(chunk)
        total += len(chunk)
        while kept - len(chunks[0]) >= KEPT_BYTES:
            kept -= len(chunks.popleft())
    data = b"".join(chunks)[-KEPT_BYTES:]
    if total >= STREAM_BYTES:
        return data, (f"stopped reading {name} after {_mib(STREAM_BYTES)}; its last "
                      f"{_mib(len(data))} before that point were read")
    if total > len(data):
        return data, f"{name} was {_mib(total)}; only its last {_mib(KEPT_BYTES)} were read"
    return data, ""


def _mib(count: int) -> str:
    return f"{count / 2**20:.0f} MiB" if count >= 2**20 else f"{count} bytes"


def decode_paste(data: bytes, name: str) -> PastedText:
    """Bytes to text, tolerant of what people actually save and pipe.

    NUL bytes are dropped before anything else: a log padded with them (a crashed
    writer, a preallocated file) is still a log, and ``/dev/zero`` is simply empty.
    Terminal control sequences are removed too, so nothing a paste holds can act on
    the terminal it is printed to.
    """
    notes: list[str] = []
    padded = False
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        text = data.decode("utf-16", errors="replace")
    else:
        padded = b"\x00" in data
        data = data.replace(b"\x00", b"") if padded else data
        sample = data[:8192]
        binary = len(sample) - len(sample.translate(None, _BINARY_BYTES))
        if sample and binary > len(sample) * _BINARY_SHARE:
            raise InputError(f"{name}: this looks like a binary file, not a traceback or log")
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError:
            text = data.decode("utf-8", errors="replace")
            notes.append(f"{name} is not valid UTF-8; undecodable bytes were replaced with �")
        if padded and text.strip():
            notes.append(f"{name} holds NUL bytes; they were left out")
    if not text.strip() and padded:
        raise InputError(f"{name}: holds only NUL bytes, not a traceback or log")
    if not text.strip():
        raise InputError(f"{name}: the input is empty; " + _HOW_TO_PASTE.split(":\n")[0])
    from torchdoctor.parsing.controls import strip_controls

    return PastedText(strip_controls(text), notes)


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
    shape["similar"] = shape["similar"][:top]
    checks = suggested_checks(diagnosis.matches[:top])
    shape["checks"] = checks
    shape["check_command"] = check_command([c["probe"] for c in checks]) if checks else None
    if checks:
        shape["harness_help"] = HARNESS_HELP
    if notes:
        shape["notes"] = notes
    json.dump(shape, sys.stdout, indent=2, ensure_ascii=False)
    sys.stdout.write("\n")
