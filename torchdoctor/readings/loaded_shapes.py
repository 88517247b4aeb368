"""Two shapes of one parameter in a report about loading weights, in any language.

When ``load_state_dict`` refuses a checkpoint, people often retell the message
instead of pasting it, in their own words and language, but keep its two shapes as
torch printed them: "要把一个形状为 [51760, 4096] 的张量加载进 "weight" 参数里, 但是这个参数
期望的形状是 [152064, 4096]", "the checkpoint has fc.weight as (1000, 512), my model
wants (10, 512)". The words change; the fact does not: weights being loaded, and two
shapes of the same rank that differ. That is the checkpoint's parameter sized for
another model (``state_dict.size_mismatch``), whatever the language.

``readings(text)`` says it as the plain phrase that entry's symptom regex reads.
"""

from __future__ import annotations

import re

from torchdoctor.linear_regex import bounded

# A shape as torch prints it or as people copy it: [51760, 4096], torch.Size([10, 512]),
# (1000, 512), [4 x 3136]; at least two dimensions, so a lone index or count is no shape.
_SHAPE = re.compile(r"[\[(]\s*(\d{1,7}(?:\s*[,x×]\s*\d{1,7}){1,5})\s*,?\s*[\])]")
# Weights being loaded, in the usual languages (the glossary already reads 加载 as "load").
_LOADING = re.compile(
    r"\b(?:load\w*|restor\w*|resum\w*)\b|加载|载入|載入|読み込|ロード|로드|불러오|불러와|загру[зж]\w*"
    r"|\bcarg(?:ar|ando|o|ué)\b|\bcarreg\w*|\blad(?:en|e)\b",
    re.IGNORECASE)
_WEIGHTS = re.compile(
    r"\b(?:weights?|checkpoint\w*|ckpt|state_?dict|pretrained|param(?:eter)?s?)\b|权重|權重|参数|參數"
    r"|预训练|預訓練|重み|パラメータ|チェックポイント|가중치|파라미터|체크포인트|\bвес(?:а|ов)\b|\bпараметр\w*"
    r"|\bpesos\b|\bpar[áa]metros?\b|\bGewichte\b|\bParameter\b",
    re.IGNORECASE)


def _dims(shape: str) -> tuple[int, ...]:
    return tuple(int(dim) for dim in re.split(r"\s*[,x×]\s*", shape.strip()))


def differing_shapes(text: str) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
    """The first two shapes of the same rank that differ, in a text about loading
    weights; None when it speaks of no loading or shows no such pair."""
    text = bounded(text)
    if not (_LOADING.search(text) and _WEIGHTS.search(text)):
        return None
    shapes = [_dims(found.group(1)) for found in _SHAPE.finditer(text)]
    for position, first in enumerate(shapes):
        for second in shapes[position + 1:]:
            if len(first) == len(second) and first != second:
                return first, second
    return None


def readings(text: str) -> list[str]:
    """The phrase the checkpoint-shape entry reads, when the text shows it."""
    return ["a checkpoint parameter's shape differs from the model's"] if differing_shapes(text) else []
