"""What the GPU utilisation figures a report gives say about its input pipeline.

People who watch ``nvidia-smi`` or a monitor while training often give the numbers
rather than a word for them: "利用率最高也就 12%，大多数时候只有 2%", "GPU-Util sits at
3%", "Auslastung 5 %". Read together, the percentages after a GPU utilisation word say
one of two things, whatever the language around them:

- every one of them is low (``LOW`` percent or less): the GPU mostly waits;
- they span from near idle to busy: the GPU works in bursts between waits.

Either is what a GPU fed too slowly by its input pipeline shows. A GPU that stays at
0 % is another story: it is not used at all (a CPU build of torch, a model left on the
CPU), and its figures are left to the words around them. ``readings`` says
them as the phrases the symptom regexes read ("low GPU utilization"). Memory figures
(a percentage after "memory", "显存") are not utilisation and are left out, and so is
nvidia-smi's table, whose first percentage on a row is the fan speed.
"""

from __future__ import annotations

import re

from torchdoctor.linear_regex import bounded

# A word for the GPU's utilisation, with the GPU named in it or just before it (and no
# memory named between them: "GPU memory usage" is not utilisation).
_UTILISATION = re.compile(
    r"\bGPU[\s-]*(?:util\w*|usage|load|activity)\b"
    r"|(?:\bGPU|显卡|グラボ)(?:(?!memory|\bmem\b|vram|显存|内存|メモリ|메모리)[^\n|%]){0,30}?"
    r"(?:\butili[sz]ation\b|\butil\b|\busage\b|\bload\b|利用率|使用率|占用率|稼働率|"
    r"사용률|이용률|загрузк\w*|утилизаци\w*|\butiliza[çc][ãa]o\b|\bAuslastung\b|\buso\b)",
    re.IGNORECASE)
# A percentage as people write it: "2%", "12 %", "0.5%".
_PERCENT = re.compile(r"(?<![\d.])(\d{1,3}(?:\.\d+)?)\s*%")
# What ends the stretch a utilisation word's figures sit in: a line break, a table rule,
# or the memory, whose percentages are not utilisation.
_STRETCH_END = re.compile(r"[\n|]|\b(?:memory|mem|vram|ram)\b|显存|内存|メモリ|메모리|памят", re.IGNORECASE)
# How far after the word its figures may lie.
_REACH = 80
# Every figure at or below this is a GPU that mostly waits...
LOW = 30.0
# ...unless none is above this: a GPU not used at all.
UNUSED = 1.0
# Figures from at most IDLE up to at least BUSY are a GPU working in bursts.
IDLE, BUSY = 10.0, 60.0


def utilisation_figures(text: str) -> list[float]:
    """The percentages a report gives for its GPU's utilisation, in order."""
    text = bounded(text)
    figures: list[float] = []
    for word in _UTILISATION.finditer(text):
        stretch = text[word.end():word.end() + _REACH]
        end = _STRETCH_END.search(stretch)
        stretch = stretch[:end.start()] if end else stretch
        figures.extend(float(found.group(1)) for found in _PERCENT.finditer(stretch))
    return [figure for figure in figures if figure <= 100.0]


def readings(text: str) -> list[str]:
    """What the utilisation figures in ``text`` say, as the phrases symptom regexes read."""
    figures = utilisation_figures(text)
    if not figures:
        return []
    if max(figures) <= UNUSED:
        return []
    if max(figures) <= LOW:
        return ["low GPU utilization"]
    if min(figures) <= IDLE and max(figures) >= BUSY:
        return ["fluctuating GPU utilization"]
    return []
