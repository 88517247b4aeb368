"""Turn a paste into clean lines: no colour codes, quote marks, rank or timestamp prefixes.

People paste from terminals, notebooks, issue trackers and cluster logs; each adds its
own decoration. Removing it here lets the scanner see plain Python tracebacks. Every
line keeps its rank (``[rank1]:`` prefixes) and whether it opened a new log record,
because a timestamp is the surest sign that an exception message has ended.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from torchdoctor.parsing.controls import strip_controls
from torchdoctor.parsing.flattened import unflattened
from torchdoctor.parsing.markup import undo_line_markup, undo_markup
from torchdoctor.parsing.rich_box import BORDER, is_boxed, unbox

BARE_ANSI = re.compile(r"\[(?:\d{1,3};)*\d{1,3}m")
RANK_PREFIX = re.compile(
    r"\[(?:rank|default) ?(?P<rank>\d{1,5})\]:[ ]?"  # torchrun --tee, [rank0]: / [rank 0]:
    r"|\[\d{1,5},(?P<mpi>\d{1,5})\]<std(?:out|err)>:[ ]?"  # mpirun --tag-output
    r"|\[rank: (?P<lightning>\d{1,5})\][ ]"  # Lightning's rank_prefixed_message
)
# A logging record's level, with the logger name before or after it: "ERROR:root:",
# "ERROR: ", "trainer - ERROR - " (after its timestamp), loguru's
# "ERROR    | __main__:main:88 - ".
LEVEL_PREFIX = re.compile(
    r"(?:[\w.<>-]{1,100} - )?(?P<level>CRITICAL|FATAL|ERROR|WARNING|WARN|INFO|DEBUG)"
    r"(?::[\w.<>-]{0,100}:[ ]?|:[ \t]|[ \t]*\|[ \t]*[\w.<>:-]{0,200}[ \t]+-[ \t]|[ \t]+-[ \t])"
)
TIMESTAMP_PREFIX = re.compile(
    r"\[?\d{4}-\d{2}-\d{2}[T _]\d{2}:\d{2}:\d{2}(?:[.,]\d{1,9})?(?:Z|[+-]\d{2}:?\d{2})?\]?"
    r"[ \t]*(?:[|\-][ \t]*)?"
)
GLOG_PREFIX = re.compile(r"\[?[IWEF]\d{4} \d{2}:\d{2}:\d{2}\.\d+ +(?:\d+ )?[\w./-]+:\d+\][ ]?")
QUOTE_PREFIX = re.compile(r"(?:>[ ]?)+")
# A tqdm bar that an error was printed straight after, on the same line:
# "epoch 1:   9%|██▍      | 1/11 [00:01<00:13,  1.33s/it]THCudaCheck FAIL …".
PROGRESS_BAR_BEFORE = re.compile(
    r".{0,200}?\d{1,3}%\|[^|\n]{0,300}\|[^\[\n]{0,80}\[[^\]\n]{0,100}\]")
LONGEST_LINE = 65_536
# A terminal wraps a long frame line at its width and a copy keeps the padding up to
# the edge ("…/data/dataload          er.py", line 761"); Python prints no run of
# spaces inside a frame line, so such a run is the wrap and goes.
FRAME_WRAP_PADDING = re.compile(r"(?<=\S) {8,}(?=\S)")


@dataclass
class CleanLines:
    """Parallel lists, one item per line; parallel lists keep a 10 MB log cheap."""

    texts: list[str]
    ranks: list[int | None]
    log_records: list[bool]
    # Logged at an error level (ERROR, CRITICAL, FATAL, glog's E and F): an error line
    # even when its words are not an exception's.
    error_records: list[bool] = field(default_factory=list)


def strip_colour(text: str) -> str:
    """Control sequences, and colour codes whose ESC was lost on the way (``[31m``)."""
    text = strip_controls(text)
    if "m" in text and BARE_ANSI.search(text):
        text = BARE_ANSI.sub("", text)
    return text


def _is_quoted_paste(lines: list[str]) -> bool:
    """A paste quoted with ``>`` marks on most lines (but not ``>>>`` prompts)."""
    non_blank = [line for line in lines[:2000] if line.strip()]
    if not non_blank:
        return False
    quoted = sum(1 for line in non_blank if line.startswith(">") and not line.startswith(">>>"))
    return quoted * 2 >= len(non_blank)


def clean_lines(text: str) -> CleanLines:
    text = undo_markup(strip_colour(text))
    lines = text.splitlines()
    if BORDER in text and is_boxed(lines):
        lines = unbox(lines)
    if 'File "' in text:
        lines = unflattened([_unwrapped_frame(line) for line in lines])
    if _is_quoted_paste(lines):
        lines = [
            QUOTE_PREFIX.sub("", line, count=1) if line.startswith(">") else line
            for line in lines
        ]
    texts: list[str] = []
    ranks: list[int | None] = []
    records: list[bool] = []
    errors: list[bool] = []
    for line in lines:
        if len(line) > LONGEST_LINE:
            line = line[:LONGEST_LINE]
        if "`" in line or "python-" in line or "Process " in line or line[:1] == "#":
            line = undo_line_markup(line)
        if "%|" in line:
            match = PROGRESS_BAR_BEFORE.match(line)
            line = line[match.end():] if match and line[match.end():].strip() else line
        rank = None
        record = error = False
        first = line[:1]
        if first == "[" or first.isdigit() or first in "IWEF":
            rank, line = _rank(line)
            match = TIMESTAMP_PREFIX.match(line) or GLOG_PREFIX.match(line)
            if match:
                record = True
                error = match.group(0).lstrip("[")[:1] in "EF" and match.re is GLOG_PREFIX
                line = line[match.end():]
                if rank is None:
                    rank, line = _rank(line)
        if " - " in line[:120] or ":" in line[:10] or "|" in line[:12]:
            match = LEVEL_PREFIX.match(line)
            if match:
                error = error or match["level"] in ("ERROR", "CRITICAL", "FATAL")
                line = line[match.end():]
        texts.append(line.rstrip())
        ranks.append(rank)
        records.append(record)
        errors.append(error)
    return CleanLines(texts, ranks, records, errors)


def _unwrapped_frame(line: str) -> str:
    if "        " in line and line.lstrip().startswith('File "'):
        return FRAME_WRAP_PADDING.sub("", line)
    return line


def _rank(line: str) -> tuple[int | None, str]:
    """The rank a launcher's prefix names, and the line without the prefix."""
    match = RANK_PREFIX.match(line)
    if not match:
        return None, line
    return int(match["rank"] or match["mpi"] or match["lightning"]), line[match.end():]
