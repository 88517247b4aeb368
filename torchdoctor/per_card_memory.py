"""What a report's numbers say about memory on each GPU of a multi-GPU run.

People show where memory sits on their cards in two ways: nvidia-smi's process
table pasted as it is (``|    0   N/A  N/A   2695173   C   python   871MiB |``),
or figures per card in a sentence ("gpu0 占了 12179，gpu1 只有 5245", "GPU0: 10761MB,
GPU1: 3651MB"). Two facts decide between the multi-GPU memory entries and read the
same in any language:

- several processes listed on card 0, more than on any other card: each rank of a
  distributed run also made a CUDA context (and often tensors) on GPU 0;
- card 0 holding far more than every other card: DataParallel keeps the master
  weights and gathers outputs there, or ranks put memory on it.

``readings`` turns them into the phrases the symptom regexes of those entries read.
"""

from __future__ import annotations

import re

from torchdoctor.linear_regex import bounded

# A row of nvidia-smi's process table: the card's index, (GI, CI on newer drivers,) the PID,
# the process type, its name and the memory it holds.
_PROCESS_ROW = re.compile(
    r"^[ \t|]*(\d{1,2})[ \t]+(?:N/A[ \t]+N/A[ \t]+|\d{1,3}[ \t]+\d{1,3}[ \t]+)?(\d{2,8})[ \t]+(?:C|G|C\+G)[ \t]+"
    r"\S[^\n]{0,200}?(\d{1,7})[ \t]*MiB[ \t]*\|?[ \t]*$", re.MULTILINE)
# A figure given for one card in a sentence: "gpu0 12179", "GPU 1: 5245 MiB", "GPU#0 uses 10.5 GB".
_CARD_FIGURE = re.compile(
    r"\b(?:gpu|cuda|card)[ \t]*[#:]?[ \t]*(\d{1,2})\b[^\d\n]{0,24}?(\d{1,6}(?:\.\d{1,3})?)[ \t]*"
    r"(mib|mb|m|gib|gb|g)?\b", re.IGNORECASE)
# Processes on card 0 that make it the rank-0 card of a distributed run.
_MANY_PROCESSES = 3
# Card 0 holds at least this many times what any other card holds.
_FAR_MORE = 1.5


def processes_per_card(text: str) -> dict[int, set[str]]:
    """The PIDs nvidia-smi's process table lists on each card."""
    cards: dict[int, set[str]] = {}
    for row in _PROCESS_ROW.finditer(bounded(text)):
        cards.setdefault(int(row.group(1)), set()).add(row.group(2))
    return cards


def memory_per_card(text: str) -> dict[int, float]:
    """Megabytes on each card: summed over its process rows, else the figures a sentence
    gives per card (a bare number is megabytes, as nvidia-smi prints them)."""
    text = bounded(text)
    cards: dict[int, float] = {}
    for row in _PROCESS_ROW.finditer(text):
        card = int(row.group(1))
        cards[card] = cards.get(card, 0.0) + float(row.group(3))
    if cards:
        return cards
    for figure in _CARD_FIGURE.finditer(text):
        unit = (figure.group(3) or "mb").lower()
        value = float(figure.group(2)) * (1024 if unit.startswith("g") else 1)
        cards.setdefault(int(figure.group(1)), value)
    return cards


def readings(text: str) -> list[str]:
    """The phrases the multi-GPU memory entries read, from a report's numbers."""
    said = []
    processes = processes_per_card(text)
    on_first = len(processes.get(0, ()))
    if on_first >= _MANY_PROCESSES and all(
            len(pids) < on_first for card, pids in processes.items() if card != 0):
        said.append("every rank's process listed on GPU 0")
    memory = memory_per_card(text)
    others = [value for card, value in memory.items() if card != 0]
    if memory.get(0) and others and memory[0] >= _FAR_MORE * max(others):
        said.append("GPU 0 holds much more memory than the other GPUs")
    return said
