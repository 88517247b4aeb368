"""Pasted text → the error to diagnose: ``parse_traceback(text) -> ParsedError | None``.

Torch-free, pure and deterministic. Choices worth knowing:

* Several tracebacks in one paste: the first complete one is diagnosed, because in
  logs the first failure is usually the cause and later ones its consequences (other
  ranks timing out, a shutdown ``Exception ignored in`` trace, the launcher's
  ``ChildFailedError``). Launcher summaries are skipped when a real error exists, and
  the rank that torchelastic names as "Root Cause" is preferred. The rest are listed
  in ``extras["other_errors"]``.
* Chains: ``root`` is the oldest link. For ``cause`` chains that is the underlying
  error; for ``context`` chains it is the original failure, and the later link is
  usually a bug in the handling code that disappears once the original is fixed.
  A DataLoader worker wrapper's inner traceback becomes its own link and the root.
* No traceback: an error line in any form people write one (``parsing/loose.py``: a
  ``SomeError: message`` line, one after other words, the exception's repr, a message
  quoted in a sentence, a bare torch-like message with ``type`` None, a line logged
  at an error level), then CUDA assert lines; ``None`` only when nothing reads as an
  error, so the caller can try the prose-symptom path.
* A traceback cut before its exception line takes the error line written above or
  below it (``extras["source"] == "error_line_outside_traceback"``), so an error line
  anywhere in the paste never leaves the message empty.
* A message cut short, or a traceback cut after its last frame, is completed from that
  frame's ``raise SomeError("literal")`` line (``parsing/raise_site.py``).
* A wrapper that re-raises another process's error is read through: a DataLoader
  worker's ``Caught X in DataLoader worker process N`` (with or without the main
  process's frames) and mp.spawn's ``ProcessRaisedException`` with ``-- Process N
  terminated with the following error:``; and torch < 1.0's ``KeyError: Traceback (most
  recent call last):``, the worker's traceback printed as the message. The inner error
  is the root. So is the exception line a compile wrapper carries in its message
  (``BackendCompilerFailed: backend='inductor' raised:`` then ``InvalidCxxCompiler: …``;
  ``parsing/wrapped.py``).
* ``extras["source"]`` says where the message came from: ``traceback``,
  ``final_line``, ``embedded``, ``repr``, ``quoted``, ``message_only``, ``ide`` (an
  IDE's "Exception has occurred: Type" and the lines under it), ``error_record``,
  ``cuda_assert``, ``error_line_outside_traceback`` or ``raise_statement``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from torchdoctor.parsing.controls import strip_controls
from torchdoctor.parsing.extras import cuda_asserts, elastic_ranks, split_boilerplate, warnings_seen
from torchdoctor.parsing.focus import focus_on_errors
from torchdoctor.parsing.frames import read_frame_line
from torchdoctor.parsing.lines import CleanLines, clean_lines
from torchdoctor.parsing.loose import EXPLAINS_THE_REST, LooseError, find_loose_error
from torchdoctor.parsing.model import ChainLink, Frame, ParsedError, empty_extras
from torchdoctor.parsing.phase import judge_phase
from torchdoctor.parsing.raise_site import completes, raised_message
from torchdoctor.parsing.scanner import (
    REPRINTED,
    FoundTraceback,
    TracebackScanner,
    short_type,
)
from torchdoctor.parsing.signature import message_signature
from torchdoctor.parsing.wrapped import read_through

__all__ = ["ChainLink", "Frame", "ParsedError", "parse_traceback"]

LAUNCHER_SUMMARIES = frozenset({"ChildFailedError", "SignalException"})
# Exceptions that only carry another process's error: an error line found beside a
# traceback cut at one of them is that error, whatever its type.
WRAPPERS = LAUNCHER_SUMMARIES | {"ProcessRaisedException"}
# A message this short may have been cut; an error line this near that continues it wins.
CUT_MESSAGE = 60
NEAR_LINES = 30
DATALOADER_WORKER = re.compile(r"in DataLoader worker process (\d{1,9})\b")


@dataclass
class _Candidate:
    """A traceback found in one rank's lines, placed in the whole paste's order."""

    position: int
    rank: int | None
    traceback: FoundTraceback

    @property
    def root(self) -> int:
        worker = self.traceback.worker_link
        return worker if worker is not None else 0

    @property
    def link(self) -> ChainLink:
        return self.traceback.links[self.root]

    def summary(self) -> str:
        lines = (line.strip() for line in self.link.message.split("\n"))
        first = next((line for line in lines if any(c.isalnum() for c in line)), "")
        text = f"{self.link.full_type or 'Error'}: {first}" if first else (
            self.link.full_type or "Error")
        return text if self.rank is None else f"[rank{self.rank}] {text}"


def parse_traceback(text: str | bytes) -> ParsedError | None:
    """The error to diagnose in ``text``, or None when the text holds no error at all."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")
    if not isinstance(text, str):
        raise TypeError(f"parse_traceback expects text, not {type(text).__name__}")
    text = strip_controls(text)
    if not text.strip():
        return None
    lines = clean_lines(focus_on_errors(text))
    candidates = _find_tracebacks(lines)
    extras = empty_extras()
    extras["cuda_asserts"] = cuda_asserts(lines.texts)
    extras["warnings"] = warnings_seen(lines.texts)
    seen_ranks = {rank for rank in lines.ranks if rank is not None}
    failed_ranks = {c.rank for c in candidates if c.rank is not None}
    elastic_root = None
    for candidate in candidates:
        if candidate.link.type in LAUNCHER_SUMMARIES:
            failed, root_rank = elastic_ranks(candidate.link.message)
            failed_ranks.update(failed)
            elastic_root = root_rank if elastic_root is None else elastic_root
    extras["ranks"] = sorted(seen_ranks | failed_ranks)
    extras["failed_ranks"] = sorted(failed_ranks)
    if candidates:
        chosen = _choose(candidates, elastic_root)
        chain, root = chosen.traceback.links, chosen.root
        extras["truncated"] = not chosen.traceback.complete
        extras["cpp_frames"] = chosen.traceback.cpp_frames
        extras["other_errors"] = _other_errors(candidates, chosen)
        if _orphaned_child(chain[root]):
            _parent_error_from_outside(lines, chosen, chain, root, extras)
        if not chain[root].message.strip():
            _message_from_outside(lines, chosen, chain[root], extras)
        elif len(chain[root].message) < CUT_MESSAGE:
            _cut_message_from_outside(lines, chosen, chain[root], extras)
        _message_from_raise(chain[root], extras)
    else:
        chain = _lone_error(lines, extras)
        root = 0
        if not chain:
            return None
    root = read_through(chain, root)
    for link in chain:
        link.message, removed = split_boilerplate(link.message)
        extras["boilerplate"].extend(removed)
    diagnosed = chain[root]
    worker = DATALOADER_WORKER.search(chain[-1].message) if root != len(chain) - 1 else None
    extras["dataloader_worker"] = int(worker.group(1)) if worker else None
    return ParsedError(
        type=diagnosed.type,
        full_type=diagnosed.full_type,
        message=diagnosed.message,
        frames=diagnosed.frames,
        chain=chain,
        root=root,
        phase=judge_phase(chain, root, worker is not None),
        user_frame=_user_frame(chain, root),
        raw=text,
        signature=message_signature(diagnosed.type, diagnosed.message),
        extras=extras,
    )


def _find_tracebacks(lines: CleanLines) -> list[_Candidate]:
    """Scan each rank's lines on their own, so interleaved ranks do not mix."""
    groups: dict[int | None, list[int]] = {}
    for index, rank in enumerate(lines.ranks):
        groups.setdefault(rank, []).append(index)
    candidates: list[_Candidate] = []
    for rank, indices in groups.items():
        if len(groups) == 1:
            texts, records = lines.texts, lines.log_records
        else:
            texts = [lines.texts[i] for i in indices]
            records = [lines.log_records[i] for i in indices]
        for found in TracebackScanner(texts, records).scan():
            candidates.append(_Candidate(indices[found.start], rank, found))
    candidates.sort(key=lambda c: c.position)
    return candidates


def _choose(candidates: list[_Candidate], elastic_root: int | None) -> _Candidate:
    pool = [c for c in candidates if c.traceback.complete] or candidates
    pool = [c for c in pool if c.link.type not in LAUNCHER_SUMMARIES] or pool
    if elastic_root is not None:
        pool = [c for c in pool if c.rank == elastic_root] or pool
    return next((c for c in pool if EXPLAINS_THE_REST.search(c.link.message)), pool[0])


def _other_errors(candidates: list[_Candidate], chosen: _Candidate) -> list[str]:
    summaries: dict[str, None] = {}
    own = chosen.summary()
    for candidate in candidates:
        if candidate is not chosen and candidate.summary() != own:
            summaries.setdefault(candidate.summary())
    return list(summaries)


def _lone_error(lines: CleanLines, extras: dict) -> list[ChainLink]:
    """A paste without a traceback: an error line in any form people write one."""
    found = find_loose_error(lines.texts, range(len(lines.texts)), lines.error_records)
    if found is not None:
        extras["source"] = found.source
        return [_loose_link(lines, found)]
    if extras["cuda_asserts"]:
        first = extras["cuda_asserts"][0]
        extras["source"] = "cuda_assert"
        return [ChainLink(type=None, message=f"Assertion `{first['assertion']}` failed.")]
    return []


def _loose_link(lines: CleanLines, found: LooseError) -> ChainLink:
    """A link for a loose error, with its continuation lines where torch prints some.

    A whole ``Type: message`` line keeps what follows it, as in a traceback; a message
    found elsewhere on a line keeps it only when it ends in a colon, the way torch
    opens a list ("Error(s) in loading state_dict for Net:").
    """
    message = found.message
    if found.source == "final_line" or (
            found.source in ("embedded", "message_only", "error_record")
            and message.rstrip().endswith(":")):
        raw = lines.texts[found.index]
        indent = len(raw) - len(raw.lstrip())
        scanner = TracebackScanner(lines.texts, lines.log_records)
        message, _ = scanner.read_message(found.index + 1, message, indent, FoundTraceback(
            links=[], start=found.index, end=found.index, complete=True))
        message = _without_prose(message)
    return ChainLink(type=short_type(found.full_type), message=message,
                     full_type=found.full_type)


def _without_prose(message: str) -> str:
    """Continuation lines up to the first one a person wrote: a question, an exclamation,
    or words in another script ("Excuse me, how to solve this?" under the error); or up
    to the traceback that follows an error line written first (a frame, or a header such
    as Streamlit's bare ``Traceback:``)."""
    lines = message.split("\n")
    for position, line in enumerate(lines[1:], start=1):
        stripped = line.strip()
        if stripped.endswith(("?", "!", "？", "！")) or (stripped and not stripped[0].isascii()):
            return "\n".join(lines[:position]).rstrip()
        if stripped.startswith("Traceback") or (stripped.startswith("File ")
                                                and read_frame_line(stripped)):
            return "\n".join(lines[:position]).rstrip()
    return message


def _message_from_outside(lines: CleanLines, chosen: _Candidate, link: ChainLink,
                          extras: dict) -> None:
    """A traceback cut before its exception line takes the error line written elsewhere.

    People often paste the error first and the traceback under it, or the traceback
    is cut off; the error line then sits before or after the traceback's lines.
    Nearest first: the lines above, closest first, then those below.
    """
    start, end = chosen.traceback.start, chosen.traceback.end
    if lines.ranks[chosen.position] is not None or len(set(lines.ranks)) > 1:
        return  # one rank's lines were scanned apart; positions do not map back
    outside = [*range(start - 1, -1, -1), *range(end, len(lines.texts))]
    # Then the traceback's own lines: a traceback flattened onto one line carries its
    # exception in the middle of a "frame".
    found = (find_loose_error(lines.texts, outside, lines.error_records)
             or find_loose_error(lines.texts, range(start, min(end, len(lines.texts)))))
    if found is None or (link.type and link.type not in WRAPPERS and found.full_type
                         and short_type(found.full_type) != link.type):
        return
    if found.message.strip() == REPRINTED:
        return  # the re-raise line of this very traceback: it holds no message
    adopted = _loose_link(lines, found)
    link.message = adopted.message
    if not link.type or (link.type in WRAPPERS and adopted.type):
        link.type, link.full_type = adopted.type, adopted.full_type
    if found.source == "ide" and found.index < start:
        link.frames.reverse()  # an IDE lists the frames under its message innermost first
    extras["source"] = "error_line_outside_traceback"


def _orphaned_child(link: ChainLink) -> bool:
    """A process multiprocessing's spawn started, failing while it reads what its parent
    sent (``reduction.pickle.load(from_parent)``: the pipe handle it duplicates, "Access
    is denied", "Ran out of input"): its parent is already gone, so this error is a
    consequence and the parent's own error is the cause."""
    reading = any(frame.function == "_main" and frame.file.replace("\\", "/").endswith(
        "multiprocessing/spawn.py") and "from_parent" in (frame.code or "")
        for frame in link.frames)
    innermost = link.frames[-1].file.replace("\\", "/") if link.frames else ""
    return reading and "/multiprocessing/" in innermost


def _parent_error_from_outside(lines: CleanLines, chosen: _Candidate, chain: list[ChainLink],
                               root: int, extras: dict) -> None:
    """The error printed beside an orphaned child's traceback (another process's line
    before it, or after it) replaces the child's."""
    start, end = chosen.traceback.start, chosen.traceback.end
    if lines.ranks[chosen.position] is not None or len(set(lines.ranks)) > 1:
        return
    outside = [*range(start - 1, -1, -1), *range(end, len(lines.texts))]
    found = find_loose_error(lines.texts, outside, lines.error_records)
    if found is None:
        return
    extras["other_errors"].insert(0, chosen.summary())
    chain[root] = _loose_link(lines, found)
    extras["source"] = "error_line_outside_traceback"


def _cut_message_from_outside(lines: CleanLines, chosen: _Candidate, link: ChainLink,
                              extras: dict) -> None:
    """A short message that an error line near the traceback continues was cut there
    ("RuntimeError: cuda runtime error (" under "THCudaCheck FAIL … error=2 : out of
    memory"): the longer line is the message."""
    start, end = chosen.traceback.start, chosen.traceback.end
    if lines.ranks[chosen.position] is not None or len(set(lines.ranks)) > 1:
        return
    near = [*range(start - 1, max(start - NEAR_LINES, 0) - 1, -1),
            *range(end, min(end + NEAR_LINES, len(lines.texts)))]
    found = find_loose_error(lines.texts, near, lines.error_records)
    cut = link.message.strip()
    if found is None or len(found.message) <= len(cut) or not found.message.startswith(cut):
        return
    link.message = found.message
    extras["source"] = "error_line_outside_traceback"


def _message_from_raise(link: ChainLink, extras: dict) -> None:
    """An empty or cut message completed from the literal its innermost frame raised."""
    raised = raised_message(link.frames)
    if raised is None or not completes(link.message, raised[1]):
        return
    if link.type and link.type != raised[0]:
        return
    link.message = raised[1]
    if not link.type:
        link.type = link.full_type = raised[0]
    extras["source"] = "raise_statement"


def _user_frame(chain: list[ChainLink], root: int) -> Frame | None:
    """The last user frame of the diagnosed link, else of the newest link that has one."""
    order = [chain[root]] + [chain[i] for i in range(len(chain) - 1, -1, -1) if i != root]
    for link in order:
        for frame in reversed(link.frames):
            if frame.is_user:
                return frame
    return None
