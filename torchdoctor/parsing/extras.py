"""What surrounds a traceback: CUDA assert lines, warnings, CUDA boilerplate, torchelastic.

These lines rarely sit inside the exception message, but they often say more than it
does: the kernel assertion names the failed bound, the target-size warning explains a
wrong loss, the torchelastic summary names the rank that failed first.
"""

from __future__ import annotations

import re
from typing import Any

from torchdoctor.linear_regex import compile_linear
from torchdoctor.parsing.frames import line_number

# Both are searched through whole lines, so they run on RE2 (linear in the line).
CUDA_ASSERT = compile_linear(
    r"(?P<file>\S+?):(?P<line>\d+): (?P<function>.*?): "
    r"block: \[(?P<block>[\d, ]+)\], thread: \[(?P<thread>[\d, ]+)\] "
    r"Assertion [`'\x{2018}]?(?P<assertion>.*?)[`'\x{2019}]? failed\.?"
)
WARNING = compile_linear(
    r"(?:(?P<where>\S.*?):(?P<line>\d+): )?(?P<category>\w*Warning): (?P<text>.+)")
CUDA_BOILERPLATE = (
    "CUDA kernel errors might be asynchronously reported",
    "For debugging consider passing CUDA_LAUNCH_BLOCKING=1",
    "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions",
    "Device-side assertions were explicitly omitted for this error check",
    "Device-side assertion tracking was not enabled by user",
)
ELASTIC_RANK = re.compile(r"rank\s*:\s*(\d{1,9})\b")
ELASTIC_ROOT = "Root Cause (first observed failure)"


def cuda_asserts(texts: list[str]) -> list[dict[str, Any]]:
    """Kernel assertion lines, one entry per distinct assertion with a repeat count.

    A failing kernel prints one line per thread, often thousands; one is enough.
    """
    seen: dict[tuple[str, str, str, str], dict[str, Any]] = {}
    for text in texts:
        if "Assertion " not in text or "block: [" not in text:
            continue
        match = CUDA_ASSERT.search(text)
        if not match:
            continue
        key = (match["file"], match["line"], match["function"], match["assertion"])
        if key in seen:
            seen[key]["count"] += 1
            continue
        seen[key] = {"file": match["file"], "line": line_number(match["line"]),
                     "function": match["function"].strip(), "assertion": match["assertion"],
                     "block": f"[{match['block']}]", "thread": f"[{match['thread']}]",
                     # As torch printed it: a page or markdown may have eaten the backticks.
                     "count": 1, "text": (
                         f"{match['file']}:{match['line']}: {match['function'].strip()}: "
                         f"block: [{match['block']}], thread: [{match['thread']}] "
                         f"Assertion `{match['assertion']}` failed.")}
    return list(seen.values())


def warnings_seen(texts: list[str]) -> list[str]:
    """Distinct ``...Warning: ...`` lines, in the order they first appeared."""
    found: dict[str, None] = {}
    for text in texts:
        if "Warning: " not in text:
            continue
        match = WARNING.search(text.strip())
        if match:
            found.setdefault(f"{match['category']}: {match['text'].strip()}")
    return list(found)


def split_boilerplate(message: str) -> tuple[str, list[str]]:
    """The message without torch's CUDA advice lines, and the advice lines removed."""
    if "CUDA" not in message and "Device-side" not in message:
        return message, []
    kept: list[str] = []
    removed: list[str] = []
    for line in message.split("\n"):
        if line.strip().startswith(CUDA_BOILERPLATE):
            removed.append(line.strip())
        else:
            kept.append(line)
    return "\n".join(kept).strip("\n"), removed


def elastic_ranks(message: str) -> tuple[list[int], int | None]:
    """Failed ranks named by a torchelastic ChildFailedError summary, and the root one."""
    if "rank" not in message:
        return [], None
    failed: list[int] = []
    root = None
    in_root_block = False
    for line in message.split("\n"):
        if ELASTIC_ROOT in line:
            in_root_block = True
            continue
        match = ELASTIC_RANK.search(line)
        if match and line.strip().startswith("rank"):
            rank = int(match.group(1))
            if rank not in failed:
                failed.append(rank)
            if in_root_block and root is None:
                root = rank
    return failed, root
