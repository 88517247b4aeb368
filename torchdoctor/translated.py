"""A torch message that a page printed machine-translated, turned back into torch's words.

Chinese blogs often show the error translated along with the prose around it:
"RuntimeError: 大小不匹配,m1: [4 x 3136], m2: [64 x 5]" is torch's "size mismatch,
m1: …", and "张量的大小必须匹配,除了维度0。在维度1中得到1219和440" its "Sizes of
tensors must match except in dimension 0. Got 1219 and 440 in dimension 1". The
numbers, shapes and names stay as torch printed them; only the fixed words are
rendered, and always the same way by the usual translators. ``english(message)``
rewrites those renderings (each checked on real translated pages) back into
torch's wording, reordering where the translation moved the numbers, and the
punctuation of the other script into torch's; ``match.py`` then reads the result
as it reads a message retyped by hand (``retyped.py``), at the wording tier.
"""

from __future__ import annotations

import re

# Han characters (and the full-width punctuation around them): a message without any
# was not translated into Chinese.
_HAN = re.compile(r"[\u3400-\u9fff]")

_N = r"\s*(\d+)\s*"
# (rendering, torch's words): longer phrases first, so a phrase is rewritten whole
# before its words are.
_RENDERINGS: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(rendering), words) for rendering, words in (
        # TH's cat check: "Sizes of tensors must match except in dimension 0. Got 1219
        # and 440 in dimension 1" (the translation puts the dimension first).
        (r"张量的大小必须匹配[,，]?\s*除了?在?维度" + _N, r"Sizes of tensors must match except in dimension \1"),
        (r"在维度" + _N + r"[中上]?得到" + _N + r"和" + _N, r"Got \2 and \3 in dimension \1"),
        # Broadcasting: "The size of tensor a (2) must match the size of tensor b (39)
        # at non-singleton dimension 1".
        (r"张量\s*a\s*的大小\s*[(（]" + _N + r"[)）]\s*必须与张量\s*b\s*的大小\s*[(（]" + _N
         + r"[)）]\s*在非单例维度" + _N + r"上匹配",
         (r"The size of tensor a (\1) must match the size of tensor b (\2) at non-singleton"
         r" dimension \3")),
        # Devices: "Expected all tensors to be on the same device, but found at least two
        # devices, cuda:0 and cpu!", the older "Expected object of device type cuda but got
        # device type cpu", and embedding's "Input, output and indices must be on the
        # current device".
        (r"期望所有张量都在同一设备上[,，]?\s*但发现至少两个设备[,，:：]?\s*([\w:]+)\s*和\s*([\w:]+)",
         (r"Expected all tensors to be on the same device, but found at least two devices, \1"
         r" and \2!")),
        (r"[期预]望\s*(\w+?)\s*类型(?:的)?对象[,，]?\s*但得到\s*(\w+?)\s*类型",
         r"Expected object of device type \1 but got device type \2"),
        (r"输入、输出和索引必须在当前设备上", "Input, output and indices must be on the current device"),
        # A convolution's channels: "Given groups=1, weight of size [16, 1, 5, 5], expected
        # input[100, 3, 256, 256] to have 1 channels, but got 3 channels instead" (torch 1.1 -
        # 1.4 printed the weight's sizes without brackets, and the translation keeps them so).
        (r"给定\s*(groups|transposed)\s*=\s*(\d+)\s*[,，]\s*权重(?:的)?(?:大小|尺寸|形状)(?:为|是)?\s*"
         r"(\[[\d, ]*\]|\d+(?: \d+)*)\s*[,，]\s*(?:期望|预期)(?:的)?输入\s*(\[[\d, ]*\])\s*(?:有|具有|应有)"
         + _N + r"个通道\s*[,，]\s*但(?:是)?(?:实际)?(?:只)?(?:得到了?|有|收到了?)" + _N + r"个通道",
         (r"Given \1=\2, weight of size \3, expected input\4 to have \5 channels, but got \6 "
         r"channels instead")),
        (r"无效参数" + _N, r"invalid argument \1"),
        (r"大小不匹配", "size mismatch"),
        (r"CUDA\s*内存不足", "CUDA out of memory"),
        (r"尝试分配", "Tried to allocate"),
    ))

# The other script's punctuation, as torch writes it.
_PUNCTUATION = (("。", ". "), ("，", ", "), ("：", ": "), ("；", "; "),
                ("（", " ("), ("）", ") "))


def english(message: str) -> str | None:
    """The message with the translators' renderings of torch's words turned back into
    them; None when it holds no Chinese, or no rendering this table knows."""
    if not _HAN.search(message):
        return None
    text = message
    for rendering, words in _RENDERINGS:
        text = rendering.sub(words, text)
    if text == message:
        return None
    for mark, written in _PUNCTUATION:
        text = text.replace(mark, written)
    # A comma the translation glued to the next word ("size mismatch,m1:").
    text = re.sub(r",(?=\S)", ", ", text)
    return re.sub(r"[ \t]{2,}", " ", text).strip()
