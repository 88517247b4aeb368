"""The loss of a uniform guess: ln C over C classes, the one place that knows which C.

A model that has learned nothing predicts every class alike and its cross-entropy sits
at ln C. Both the prose readings (``symptoms.readings``) and the derived facts
(``facts.derive(["log_classes"], …)``) ask "is this loss ln C?", so they must agree on
the class counts people train on and on how near counts as "at".
"""

from __future__ import annotations

import math

# Class counts people train on: small heads, ImageNet-style heads, and the vocabularies
# of common tokenizers (BERT 30522, bert-base-chinese 21128, LLaMA 32000, GPT-2 50257,
# LLaMA-3 128256, Qwen 151936).
COMMON_CLASSES = (2, 3, 4, 5, 6, 7, 8, 9, 10, 20, 100, 1000, 21128, 30522, 32000, 50257,
                  128256, 151936)
# A plateau wobbles around its value by a few hundredths, and a logged value is rounded;
# the relative part keeps ln 50257 (10.825) from needing three exact decimals.
LN_TOLERANCE = 0.025
LN_RELATIVE = 0.005


def near_ln(loss: float, classes: int) -> bool:
    """Whether ``loss`` sits at ln ``classes``."""
    target = math.log(classes)
    return abs(loss - target) <= max(LN_TOLERANCE, LN_RELATIVE * target)


def chance_classes(loss: float, classes: int | None = None) -> int | None:
    """The class count C whose ln C the loss sits at (only ``classes`` when the text
    names it, else the usual counts, the nearest when two vocabularies are that
    close: ln 30522 and ln 32000 are 0.05 apart), or None."""
    candidates = (classes,) if classes and classes > 1 else COMMON_CLASSES
    near = [count for count in candidates if near_ln(loss, count)]
    return min(near, key=lambda count: abs(loss - math.log(count)), default=None)
