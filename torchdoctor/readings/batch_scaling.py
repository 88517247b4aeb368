"""A run that changed the batch its learning rate was tuned for, and then diverged.

The stable learning rate of SGD grows with the batch (the linear scaling rule: k
times the batch, k times the rate), and reference configurations state both for one
setup: detection configs for 8 GPUs x 2 images, fine-tuning recipes for a per-device
batch and a GPU count. A run on fewer GPUs, with fewer images per GPU, without the
gradient accumulation, or on more GPUs with a rate scaled up, keeps or takes a rate
the new batch cannot carry, and the loss grows until it is NaN. That is a rate's
divergence, whatever moment the NaN is placed at: the report tells it by the batch
setting it changed while keeping the rest ("IMS_PER_BATCH = 1, every other parameter
unchanged"), by two runs that differ in it ("GPUS=3 ... NaN, GPUS=2 fine"), or by the
machine it moved to ("from an 8-GPU machine to a 4-GPU one"), or by running a
detection model zoo's reference configuration (its rate set for 8 GPUs) elsewhere,
beside a loss that went non-finite or grew.
"""

from __future__ import annotations

import re

from torchdoctor.linear_regex import bounded

# The settings that make the batch a rate is tuned for.
_SETTING = (r"(?:ims_per_batch|imgs_per_gpu|samples_per_gpu|images?[ _]per[ _](?:gpu|batch)"
            r"|per[ _]device[ _](?:train[ _])?batch[ _]size|batch[ _-]?size|batchsize"
            r"|gradient[ _]accumulation(?:[ _]steps)?|accumulation[ _]steps|iter_size|accum_iter"
            r"|num_gpus|n_gpus|gpus|nproc_per_node|world[ _]size)")
# A value given to one of them: "IMS_PER_BATCH = 1", "batchsize=15", "GPUS=3", "batch size of 4".
_SET = re.compile(rf"\b(?:\w+\.)?(?P<setting>{_SETTING})\b\s*(?:=|:|to|of|is)?\s*(?P<value>\d{{1,5}})\b",
                  re.IGNORECASE)
# The rest of the configuration, the rate with it, left as the reference had it. "The same
# settings as the paper" keeps the batch too, so only the rate is named kept on its own.
_KEPT = re.compile(
    r"\b(?:left|kept?|keeping|leaving|without chang\w*)\b[^.\n]{0,40}\b(?:unchanged|the same|as (?:it|they) (?:was|were)"
    r"|default|(?:every|all)\s+(?:the\s+)?other)\b"
    r"|\b(?:every|all)\s+(?:the\s+)?other\s+(?:param\w*|settings?|hyper-?param\w*|options?|configs?)\b"
    r"[^.\n]{0,30}\b(?:unchanged|the same|default)\b"
    r"|\b(?:same|default|original)\s+(?:lr|learning[ _]rate|base[ _]lr)\b"
    r"|\bwithout\s+chang\w*\s+(?:the\s+)?(?:lr|learning[ _]rate|base[ _]lr)\b",
    re.IGNORECASE)
# The machine the run moved to: "from an 8-GPU machine to a 4-GPU machine", "8 GPUs to 2".
_MOVED = re.compile(
    r"\bfrom\s+(?:an?\s+|one\s+)?(\d{1,3}|single|one)[ -]?gpus?\b[^.\n]{0,40}?\bto\s+(?:an?\s+|one\s+)?"
    r"(\d{1,3}|single|one)(?:[ -]?gpus?)?\b",
    re.IGNORECASE)
# A detection model zoo's reference configuration, named by its schedule ("_1x", "_2x",
# "_20e": e2e_faster_rcnn_R_50_FPN_1x.yaml, retinanet_r50_fpn_2x_coco.py, or without its
# file's extension when the name says it is a detector: mask_rcnn_r101_fpn_1x). Its schedule and
# rate are set for the reference batch, 16 images on 8 GPUs; a run elsewhere keeps that
# rate for a smaller batch unless it says it ran the reference setup.
_SCHEDULE_CONFIG = re.compile(
    r"\b[\w.-]{2,80}_(?:\d{1,2}x|\d{1,3}e)(?:_[\w-]{1,40})?\.(?:yaml|yml|py)\b"
    r"|\b[\w-]{0,40}(?:r-?cnn|retina\w*|fpn|fcos|cascade|rpn|ssd\d*|detr)[\w-]{0,40}_(?:\d{1,2}x|\d{1,3}e)\b",
    re.IGNORECASE)
_REFERENCE_SETUP = re.compile(r"\b(?:8|eight)[ -]?gpus?\b", re.IGNORECASE)
# The loss went non-finite or grew.
_DIVERGED = re.compile(
    r"(?<![A-Za-z])(?:nans?|inf)(?![A-Za-z])|\bdiverg\w*|\bexplod\w*|\bblows? up\b|\bblew up\b"
    r"|\bbounc\w* back\b|\b(?:loss(?:es)?|it|they)\b[^.\n]{0,30}\b(?:increas\w*|goes up|going up|rises|rising|grows?|growing|bigger|larger)\b",
    re.IGNORECASE)


def batch_changed(text: str) -> bool:
    """Whether a report changed the batch its rate was tuned for and then diverged."""
    text = bounded(text)
    if not _DIVERGED.search(text):
        return False
    values: dict[str, set[str]] = {}
    for found in _SET.finditer(text):
        setting = re.sub(r"[ _-]", "", found.group("setting")).lower()
        values.setdefault(setting, set()).add(found.group("value"))
    if values and (_KEPT.search(text) or any(len(seen) > 1 for seen in values.values())):
        return True
    if _SCHEDULE_CONFIG.search(text) and not _REFERENCE_SETUP.search(text):
        return True
    return any(moved.group(1).lower() != moved.group(2).lower() for moved in _MOVED.finditer(text))


def readings(text: str) -> list[str]:
    """The phrase the symptom regexes know for a changed batch with its rate kept."""
    return ["batch size or GPU count changed with the learning rate kept"] if batch_changed(
        text) else []
