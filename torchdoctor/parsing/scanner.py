"""Find every traceback in a list of clean lines and read each into a chain of links.

A small line-by-line state machine, no regex spans more than one line, so a huge log
costs one pass. A traceback that stops before its exception line is kept and marked
incomplete, because a truncated paste still names the frames that matter.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from torchdoctor.parsing.frames import (
    is_caret_line,
    make_frame,
    read_frame_line,
    read_ipython_source,
)
from torchdoctor.parsing.model import ChainLink, Frame

TRACEBACK_HEADER = "Traceback (most recent call last)"
CAUSE_MARKER = "The above exception was the direct cause of the following exception"
CONTEXT_MARKER = "During handling of the above exception, another exception occurred"
# The type starts a word: a search started inside a long run of word characters would
# read the whole run again from every position (quadratic on a pasted blob).
IPYTHON_HEADER = re.compile(r"(?<![\w.])(?P<type>[A-Za-z_][\w.]*)\s+Traceback \(most recent call last\)")
# IPython 7's notebook-cell frame after a web page removed its <ipython-input-…> and
# <module> as if they were HTML tags: "in ()".
EATEN_CELL_FRAME = re.compile(r"in (?P<func>\w*)\(\)")
EXCEPTION_LINE = re.compile(r"(?P<type>[A-Za-z_][\w.]*(?:::[A-Za-z_]\w*)*)(?:: ?(?P<message>.*))?")
EXCEPTION_SUFFIXES = ("Error", "Exception", "Warning", "Exit", "Interrupt", "Iteration",
                      "Failure", "Fault", "Failed", "Timeout")
BARE_EXCEPTIONS = frozenset({"StopIteration", "StopAsyncIteration", "KeyboardInterrupt",
                             "SystemExit", "GeneratorExit"})
C_STATUS_CODE = re.compile(r"(?:nccl|cuda|cudnn|cublas|cufft|curand|cusparse|cusolver)[A-Z]")
_DRIVE_PATH = re.compile(r"[A-Za-z]:[\\/]")
WORKER_WRAPPER = re.compile(r"Caught (?P<type>[\w.]+) in (?P<where>.+)\.")
# mp.spawn re-raises a child's failure as ProcessRaisedException with the child's
# traceback under this line.
SPAWN_WRAPPER = re.compile(r"-- Process \d{1,9} terminated with the following error:")
CPP_LINE = re.compile(r"(?:frame #\d+: |#\d+ |Exception raised from |C\+\+ CapturedTraceback:)")
WARNING_LINE = re.compile(r"\S.*:\d+: \w*Warning: ")
# The message of torch < 1.0's re-raise of a worker's error: the worker's traceback.
REPRINTED = TRACEBACK_HEADER + ":"
PROGRESS_BAR = re.compile(r"(?<!\d)\d{1,3}%\|")
LONGEST_MESSAGE_LINES = 1_000
SKIPPED_FRAME_LINES = ("[Previous line repeated", "...<", "[... skipping")
# A program's output printed while Python wrote the traceback (two streams on one
# terminal) may split its frames: so many lines are looked through for the next frame.
INTERLEAVED_LINES = 10


@dataclass
class FoundTraceback:
    """One printed exception chain and where it sat in the lines."""

    links: list[ChainLink]
    start: int
    end: int
    complete: bool
    cpp_frames: list[str] = field(default_factory=list)
    worker_link: int | None = None


def exception_type_name(candidate: str) -> bool:
    """Whether a token reads as an exception class (``torch.OutOfMemoryError``, ``KeyError``).
    A CUDA library's status code (``ncclSystemError``, ``cudaErrorLaunchFailure``), which
    torch prints inside its own message, is not one."""
    short = candidate.rsplit(".", 1)[-1].rsplit("::", 1)[-1]
    if C_STATUS_CODE.match(short):
        return False
    return short.endswith(EXCEPTION_SUFFIXES) or short in BARE_EXCEPTIONS


def read_exception_line(stripped: str, strict: bool) -> tuple[str, str] | None:
    """``Type: message`` → (full type, first message line); strict demands a known suffix."""
    if not stripped or not (stripped[0].isalpha() or stripped[0] == "_"):
        return None
    if _DRIVE_PATH.match(stripped):
        return None  # a Windows path a cut frame left ("D:\Anaconda3\lib"), not "D: message"
    head = stripped.split(":", 1)[0] if ": " in stripped or stripped.endswith(":") else stripped
    if " " in head or len(head) > 120:
        return None
    match = EXCEPTION_LINE.fullmatch(stripped)
    if not match:
        return None
    full_type = match["type"]
    if strict and not exception_type_name(full_type):
        return None
    if match["message"] is None and not exception_type_name(full_type) and "." not in full_type:
        # a bare word under frames ("all__", the rest of a "__call__" a page broke) is no
        # exception line: a raised class prints its name with a known suffix or its module
        return None
    return full_type, match["message"] or ""


def short_type(full_type: str | None) -> str | None:
    if full_type is None:
        return None
    return full_type.rsplit(".", 1)[-1].rsplit("::", 1)[-1]


def is_header(stripped: str) -> bool:
    return TRACEBACK_HEADER in stripped


class TracebackScanner:
    """Reads tracebacks out of one stream of lines (one rank's lines, or all of them)."""

    def __init__(self, texts: list[str], log_records: list[bool]) -> None:
        self.texts = texts
        self.records = log_records
        self.count = len(texts)

    def scan(self) -> list[FoundTraceback]:
        found: list[FoundTraceback] = []
        index = 0
        while index < self.count:
            stripped = self.texts[index].strip()
            if is_header(stripped) or (stripped.startswith("File ")
                                       and read_frame_line(stripped)):
                traceback = self._read_chain(index)
                if stripped.startswith("Original " + TRACEBACK_HEADER):
                    self._add_worker_wrapper(traceback)
                found.append(traceback)
                index = max(traceback.end, index + 1)
            else:
                index += 1
        return found

    def _add_worker_wrapper(self, traceback: FoundTraceback) -> None:
        """A worker's traceback pasted without the main process's frames keeps the
        ``Caught X in DataLoader worker process 0.`` line above it as its wrapper link,
        with the type Python printed before it or without."""
        above = traceback.start - 1
        while above >= 0 and not self.texts[above].strip():
            above -= 1
        if above < 0 or not traceback.links:
            return
        line = self.texts[above].strip()
        typed = read_exception_line(line, strict=True)
        if typed is not None:
            line = typed[1].strip()
        wrapper = WORKER_WRAPPER.fullmatch(line)
        if wrapper is None:
            return
        traceback.links[0].relation = "cause"
        traceback.links.append(ChainLink(type=short_type(wrapper["type"]), message=line,
                                         frames=[], full_type=wrapper["type"]))
        traceback.worker_link, traceback.start = 0, above

    def _next_non_blank(self, index: int) -> int | None:
        while index < self.count:
            if self.texts[index].strip():
                return index
            index += 1
        return None

    def _read_chain(self, start: int) -> FoundTraceback:
        result = FoundTraceback(links=[], start=start, end=start, complete=True)
        relation = None
        index = start
        while True:
            link, index, complete = self._read_one(index, result)
            link.relation = relation
            inner_start = self._worker_traceback(link, index) if complete else None
            if inner_start is not None:
                inner, index, complete = self._read_one(inner_start, result)
                if inner.type is None:
                    # Cut before its own exception line: the re-raise names the type.
                    inner.type, inner.full_type = link.type, link.full_type
                inner.relation, link.relation = link.relation, "cause"
                result.worker_link = len(result.links)
                result.links.append(inner)
            result.links.append(link)
            result.complete = result.complete and complete
            result.end = index
            if not complete:
                return result
            marker = self._next_non_blank(index)
            if marker is None:
                return result
            stripped = self.texts[marker].strip().strip("-").strip()
            if stripped.startswith(CAUSE_MARKER):
                relation = "cause"
            elif stripped.startswith(CONTEXT_MARKER):
                relation = "context"
            else:
                return result
            header = self._next_non_blank(marker + 1)
            while header is not None and set(self.texts[header].strip()) <= {"-"}:
                header = self._next_non_blank(header + 1)
            if header is None:
                return result
            index = header

    def _worker_traceback(self, link: ChainLink, index: int) -> int | None:
        """Where the real error's traceback starts when ``link`` only wraps it: a DataLoader
        worker's ``Caught X in DataLoader worker process 0`` and the ``Original Traceback``
        under it, or mp.spawn's ``-- Process 0 terminated with the following error:``."""
        if index >= self.count:
            return None
        if link.message == REPRINTED:
            link.message = ""
            return index
        if WORKER_WRAPPER.fullmatch(link.message.split("\n", 1)[0].strip()):
            header = self.texts[index].strip()
            return index if header.startswith("Original " + TRACEBACK_HEADER) else None
        if SPAWN_WRAPPER.fullmatch(link.message.rsplit("\n", 1)[-1].strip()):
            return index if is_header(self.texts[index].strip()) else None
        wrapper = self._next_non_blank(index)
        if wrapper is None or not SPAWN_WRAPPER.fullmatch(self.texts[wrapper].strip()):
            return None
        header = self._next_non_blank(wrapper + 1)
        if header is None or not is_header(self.texts[header].strip()):
            return None
        link.message = (link.message + "\n" if link.message else "") + self.texts[wrapper].strip()
        return header

    def _read_one(self, index: int, result: FoundTraceback) -> tuple[ChainLink, int, bool]:
        """Frames then the exception line; returns the link, the next index, completeness."""
        stripped = self.texts[index].strip()
        indent = len(self.texts[index]) - len(self.texts[index].lstrip())
        hinted_type = None
        if is_header(stripped):
            match = IPYTHON_HEADER.search(stripped)
            # A page that collapses whitespace leaves one space after the type.
            hinted_type = match["type"] if match and exception_type_name(match["type"]) else None
            index += 1
        frames: list[Frame] = []
        ipython_frame = False
        while index < self.count:
            raw = self.texts[index]
            stripped = raw.strip()
            if not stripped or set(stripped) <= {"-"} or is_caret_line(stripped):
                index += 1
                continue
            if stripped.startswith(SKIPPED_FRAME_LINES):
                index += 1
                continue
            frame_read = read_frame_line(stripped)
            eaten = hinted_type and not frames and EATEN_CELL_FRAME.fullmatch(stripped)
            if eaten:
                frame_read = make_frame("<ipython-input>", None, eaten["func"] or "<module>"), True
            if frame_read:
                frame, ipython_frame = frame_read
                frames.append(frame)
                frame_indent = len(raw) - len(raw.lstrip())
                index += 1
                if not ipython_frame:
                    index = self._read_python_source(index, max(indent, frame_indent - 1),
                                                     frame)
                continue
            if ipython_frame:
                source = read_ipython_source(stripped)
                if source:
                    arrow, line, code = source
                    if arrow and frames:
                        frames[-1].line, frames[-1].code = line, code
                    index += 1
                    continue
            exception = read_exception_line(stripped, strict=not frames)
            if exception:
                full_type, first = exception
                if first.strip().rstrip(":") == TRACEBACK_HEADER:
                    # torch < 1.0 re-raised a worker's error as its type with the
                    # worker's whole traceback as the message: the frames follow.
                    link = ChainLink(type=short_type(full_type), message=REPRINTED,
                                     frames=frames, full_type=full_type)
                    return link, index + 1, True
                message, index = self.read_message(index + 1, first, indent, result)
                link = ChainLink(type=short_type(full_type), message=message, frames=frames,
                                 full_type=full_type)
                return link, index, True
            if self.records[index] or PROGRESS_BAR.search(stripped) or WARNING_LINE.match(
                    stripped):
                index += 1
                continue
            resumed = (self._frames_resume(index, frames[0])
                       if frames and not ipython_frame and not is_header(stripped) else None)
            if resumed is not None:
                index = resumed
                continue
            break
        link = ChainLink(type=short_type(hinted_type), message="", frames=frames,
                         full_type=hinted_type)
        return link, index, False

    def _frames_resume(self, index: int, outermost: Frame) -> int | None:
        """Where the frames go on after lines another stream printed into them: the next
        frame line within ``INTERLEAVED_LINES``, unless an exception line or a new
        traceback comes first, or that frame is this traceback's outermost again (another
        trace starting over, as anomaly mode prints the forward call's)."""
        for ahead in range(index + 1, min(index + 1 + INTERLEAVED_LINES, self.count)):
            stripped = self.texts[ahead].strip()
            if is_header(stripped) or read_exception_line(stripped, strict=True):
                return None
            found = read_frame_line(stripped) if stripped.startswith("File ") else None
            if found:
                frame = found[0]
                again = (frame.file, frame.line) == (outermost.file, outermost.line)
                return None if again else ahead
        return None

    def _read_python_source(self, index: int, indent: int, frame: Frame) -> int:
        """The code line under a CPython frame, unless the frame printed none: CPython
        indents it deeper than the frame line, so a line less indented than that (output
        another stream printed there) is not it."""
        if index >= self.count:
            return index
        raw = self.texts[index]
        stripped = raw.strip()
        if not stripped or read_frame_line(stripped) or is_header(stripped):
            return index
        if len(raw) - len(raw.lstrip()) < indent:
            return index
        deeper = len(raw) - len(raw.lstrip()) > indent
        if not deeper and read_exception_line(stripped, strict=True):
            return index
        frame.code = stripped
        return index + 1

    def read_message(self, index: int, first: str, indent: int,
                      result: FoundTraceback) -> tuple[str, int]:
        """Message lines run until a blank line, a new record, or the next traceback.

        A blank line only continues the message when C++ frames follow it, which is how
        torch prints ``Exception raised from ...``, or when the line before it ends in a
        colon that announces the rest (torch >= 2.6: ``WeightsUnpickler error: `` then a
        blank line, then ``Unsupported global: ...``).
        """
        lines = [first.rstrip()] if first.strip() else []
        worker_inner = WORKER_WRAPPER.fullmatch(first.strip()) is not None
        while index < self.count and len(lines) < LONGEST_MESSAGE_LINES:
            raw = self.texts[index]
            stripped = raw.strip()
            if worker_inner and stripped.startswith("Original " + TRACEBACK_HEADER):
                return "\n".join(lines), index
            if self.records[index] or is_header(stripped) or WARNING_LINE.match(stripped):
                break
            nested = bool(lines) and lines[-1].rstrip().endswith("raised:")
            if (raw[:1] not in " \t" and not nested
                    and read_exception_line(stripped, strict=True)):
                break
            if stripped.startswith((CAUSE_MARKER, CONTEXT_MARKER, "Exception ignored in")):
                break
            if not stripped:
                following = self._next_non_blank(index + 1)
                announced = bool(lines) and lines[-1].rstrip().endswith(":") and (
                    following is not None and not self.records[following])
                if following is None or not (CPP_LINE.match(self.texts[following].strip())
                                             or announced):
                    break
                index = following
                continue
            if CPP_LINE.match(stripped):
                result.cpp_frames.append(stripped)
                index += 1
                continue
            lines.append(raw[indent:] if indent and raw[:indent].isspace() else raw)
            index += 1
        return "\n".join(lines).strip("\n"), index
