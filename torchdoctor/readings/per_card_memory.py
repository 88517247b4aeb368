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

``readings`` turns them into the phrases the symptom regexes of those entries read, the lopsided
card with the wrapper the report names (DataParallel, or DDP and its launchers), wherever in the
text it is named.
"""

from __future__ import annotations

import re

from torchdoctor.linear_regex import bounded

# A row of nvidia-smi's process table: the card's index, (GI, CI on newer drivers,) the PID,
# the process type, its name and the memory it holds.
_PROCESS_ROW = re.compile(
    r"^[ \t|]*(\d{1,2})[ \t]+(?:N/A[ \t]+N/A[ \t]+|\d{1,3}[ \t]+\d{1,3}[ \t]+)?(\d{2,8})[ \t]+(?:C|G|C\+G)[ \t]+"
    r"\S[^\n]{0,200}?(\d{1,7})[ \t]*MiB[ \t]*\|?[ \t]*$", re.MULTILINE)
# A figure given for one card in a sentence: "gpu0 12179", "GPU 1: 5245 MiB", "GPU#0 uses 10.5 GB",
# the card named in another language ("卡0：10118mb", "カード1 5.2GB", "видеокарта 1: 6 ГБ"),
# or its number first ("0 号卡 12179M", "1番目のGPU 5245MiB", "1번 GPU 5GB"); "8 卡" alone counts
# the cards, and "GPU 5GB" gives a size, not a card.
_FIGURE = r"[^\d\n]{0,24}?(\d{1,6}(?:\.\d{1,3})?)[ \t]*(mib|mb|m|gib|gb|g|гб|мб)?(?![a-zа-я])"
_CARD_FIGURE = re.compile(
    r"(?:\b(?:gpu|cuda|card)|显卡|顯卡|(?<![显顯])卡|カード|그래픽\s*카드|\bвидеокарт\w*|\bкарт[аеуы])"
    r"[ \t]*[#:：]?[ \t]*(\d{1,2})(?![\d.A-Za-z_]|[ \t]*(?:mib|mb|gib|gb|g|m)\b)" + _FIGURE, re.IGNORECASE)
_NUMBER_FIRST = re.compile(
    r"(?<![\d.])(\d{1,2})[ \t]*(?:[号號][ \t]*(?:显卡|顯卡|卡|GPU)|番(?:目の)?[ \t]*GPU|번[ \t]*GPU)"
    + _FIGURE, re.IGNORECASE)
# The wrapper a report names, which decides whose lopsided card 0 it is: DataParallel gathers
# there; the processes of a distributed run each touch it.
_PROCESS_PER_GPU = re.compile(
    r"\b(?:DistributedDataParallel|DDP|torchrun|distributed\.launch|local_rank|init_process_group|mp\.spawn)\b"
    r"|分布式|分散式|分散学習|분산\s*학습|распредел[её]нн\w*", re.IGNORECASE)
_ONE_PROCESS = re.compile(r"(?:^|[^\w.])(?:nn\.)?DataParallel\b")
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
    for figures in (_CARD_FIGURE, _NUMBER_FIRST):
        for figure in figures.finditer(text):
            unit = (figure.group(3) or "mb").lower()
            value = float(figure.group(2)) * (1024 if unit[0] in "gг" else 1)
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
        wrapper = (" under DDP" if _PROCESS_PER_GPU.search(text) else
                   " with DataParallel" if _ONE_PROCESS.search(text) else "")
        said.append("GPU 0 holds much more memory than the other GPUs" + wrapper)
    return said
