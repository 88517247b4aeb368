"""Readings of a description that compares: one input in two runs, one GPU against the others.

Many symptoms are told as a comparison rather than named: "the same image predicted
several times gives a different answer each time", "the first board alone and in a
batch of 32 come out different", "gpu0 uses 12179, gpu1 only 5245", or an nvidia-smi
process table whose first GPU lists every rank's process. What is compared says more
than the words around it, and it reads the same in any language:

- one input that gives different outputs when run again is a forward pass that draws
  random numbers: dropout (or batch statistics) still in train mode at inference;
- one input whose output changes with the batch it is run in is a forward pass that
  mixes the samples of a batch: BatchNorm in train mode, or a reduction over dim 0;
- one GPU holding far more memory than the others is the device that gathers: the
  first GPU under DataParallel, or the device every rank touched before choosing its own;
- several processes listed on one GPU are other ranks' CUDA contexts there.

``readings(text)`` says each as the plain phrase the entries' symptom regexes know.
"""

from __future__ import annotations

import re

from torchdoctor.linear_regex import bounded

# One input named as the same one, in the languages people describe their runs in.
_SAME_INPUT = re.compile(
    r"\b(?:same|identical|one and the same|a single)\s+(?:\w+\s+){0,2}?"
    r"(?:inputs?|images?|pictures?|photos?|samples?|examples?|sentences?|texts?|data|"
    r"audio|clips?|boards?|frames?|items?|tensors?|queries|query|prompts?|files?|records?|rows?)\b"
    r"|同一(?:张|个|幅|段|条|句|组)?|(?:相同|同样)的?(?=\S{0,4}(?:图|输入|样本|句|数据|照片|文本))"
    r"|同じ(?:画像|入力|サンプル|データ|文)|같은\s*(?:이미지|입력|샘플|데이터|문장)"
    r"|(?:одн(?:о|у|а|и) и (?:то же|ту же|те же)|одинаков\w*)\s+\w+"
    r"|(?:mism[ao]s?|misma)\s+(?:imagen|entrada|muestra|imagem)|(?:gleiche|dasselbe|dieselbe)\s+\w+",
    re.IGNORECASE)
# Outputs said to differ.
_DIFFERENT = re.compile(
    r"\b(?:different|differs?|differing|varies|vary|changes?|changing|inconsistent|"
    r"non-?deterministic|not (?:the same|identical|consistent|deterministic|stable))\b"
    r"|不一样|不同|不一致|变化|違[うい]|違っ|異な|変わ|다르|달라|다른|разн\w*|отличают\w*"
    r"|diferentes?|distint\w*|unterschiedlich\w*|anders\b",
    re.IGNORECASE)
# The run repeated on that input.
_REPEATED = re.compile(
    r"\b(?:each|every)\s+(?:single\s+)?(?:time|run|call|prediction|inference)\b|\btwice\b|"
    r"\b(?:several|multiple|many|a few)\s+times\b|\brepeated(?:ly)?\b|\bagain\b|\bin a row\b|"
    r"\b(?:each|every) time\b|\bconsecutive(?:ly)?\b|\brun(?:ning)? it (?:again|twice)\b"
    r"|每次|每一次|连续|多次|几次|重复|毎回|何度|何回|매번|여러\s*번|каждый раз|несколько раз"
    r"|cada vez|varias veces|jedes Mal|mehrmals",
    re.IGNORECASE)
# What makes a repeated run differ for another reason: seeds, training runs, versions,
# devices (other entries' symptoms).
_OTHER_VARIATION = re.compile(
    r"\bseeds?\b|manual_seed|\b(?:re)?train(?:ed|ing|s)?\b(?!\s+(?:model|network|net|weights|checkpoint))"
    r"[^.\n]{0,40}\b(?:again|twice|several times|multiple times|each time|every time|each run|every run)\b"
    r"|\b(?:torch|pytorch)\s+versions?\b"
    r"|\bCPU\b.{0,20}\bGPU\b|\bGPU\b.{0,20}\bCPU\b",
    re.IGNORECASE)
# A batch size as a description gives one: "a batch of 32", "batch size 8", "bs=1",
# "batch_size = 64", "batchsize:1"; a sample run alone ("the first board alone", "just
# one image"); a batch only compared ("a bigger batch").
_BATCH_SIZE = re.compile(
    r"\bbatch(?:es)?\s+of\s+(\d{1,5}|one|two)\b|\bbatch[ _-]?size\s*(?:of|=|:|is|为|是|が|를)?\s*(\d{1,5}|one|two)\b"
    r"|\bbs\s*[=:]\s*(\d{1,5})\b|\b(alone|by itself|on its own|one by one|single)\b"
    r"|(单独|单张|一张一张|逐张|単独|一枚ずつ|하나씩|по одно\w*|por separado|einzeln)"
    r"|\b(?:just|only)\s+(one|a single)\s+(?:image|sample|input|example|picture|item)\b"
    r"|\b(bigger|larger|smaller|different|another|full|whole)\s+batch(?:es)?\b"
    r"|\b(?:with|and)\s+(other|different)\s+(?:images|samples|inputs|examples)\s+in\s+the\s+batch\b"
    r"|\bas\s+the\s+batch[ _-]?size\s+(grows|increases|shrinks|decreases|changes)\b",
    re.IGNORECASE)
# One sample followed through the comparison: the same input, or "that image", "one sample".
_ONE_SAMPLE = re.compile(
    r"\b(?:that|this|one|each|a single|the first)\s+(?:\w+\s+)?(?:image|sample|input|example|"
    r"picture|photo|board|item|sentence)\b", re.IGNORECASE)
# How far apart the pieces of one comparison may lie.
_REACH = 240

# A GPU and the memory it uses, as a sentence gives them: "gpu0 占了 12179", "GPU 1: 5245MiB",
# "cuda:0 uses 10.5 GB", "0号卡 10GB"; a value under 100 only with a gigabyte unit.
_GPU_MEMORY = re.compile(
    r"(?:\b(?:gpu|cuda|card|device)\s*[#:]?\s*(\d{1,2})\b(?!\s*(?:gpus|cards|x\b))|(?<!\d)(\d{1,2})\s*号(?:显)?卡)"
    r"[^\d\n]{0,20}?(?<![\d.])(\d{3,6}(?:\.\d{1,3})?|\d{1,3}\.\d{1,3}|\d{1,2}(?=\s*(?:gib|gb|g)\b))"
    r"\s*(mib|mb|m|gib|gb|g)?\b",
    re.IGNORECASE)
# A row of nvidia-smi's process table: "|    0   N/A  N/A   2695173   C   python   871MiB |"
# (the GI/CI columns only since the A100 drivers).
_SMI_PROCESS = re.compile(
    r"^[ \t|]{0,12}(\d{1,2})\s+(?:N/A\s+N/A\s+|\d+\s+\d+\s+)?(\d{2,8})\s+[CG](?:\+G)?\s+\S.*?(\d{1,6})\s*MiB",
    re.MULTILINE)
# One GPU's reading this many times the largest of the others' is "far more".
_FAR_MORE = 1.5
# This many processes on one GPU: the others' contexts, not one job's own.
_CROWDED = 3


def readings(text: str) -> list[str]:
    """What the comparisons in ``text`` say, as the phrases symptom regexes read."""
    text = bounded(text)
    said = []
    if _differs_with_batch(text):
        said.append("the output for one sample depends on the batch size")
    elif _differs_when_repeated(text):
        said.append("inference on the same input twice gives different outputs")
    if (first := _first_gpu_far_above(text)) is not None:
        said.append(f"GPU {first} uses far more memory than the other GPUs")
    if (crowded := _crowded_gpu(text)) is not None:
        gpu, others = crowded
        said.append(f"the first GPU (GPU {gpu}) holds {others} other processes")
    return said


def _near(text: str, first: re.Pattern[str], second: re.Pattern[str]) -> bool:
    """Whether a hit of ``first`` has one of ``second`` within ``_REACH`` characters."""
    return any(second.search(text, max(0, hit.start() - _REACH), hit.end() + _REACH)
               for hit in first.finditer(text))


def _differs_when_repeated(text: str) -> bool:
    """The same input, run again, gives another output (not across seeds or versions)."""
    return (_near(text, _SAME_INPUT, _DIFFERENT) and _near(text, _SAME_INPUT, _REPEATED)
            and not _OTHER_VARIATION.search(text))


def _differs_with_batch(text: str) -> bool:
    """The same input gives another output in batches of two different sizes."""
    sizes = {next(group for group in found.groups() if group).lower()
             for found in _BATCH_SIZE.finditer(text)}
    return (len(sizes) >= 2 and (_near(text, _SAME_INPUT, _DIFFERENT)
                                 or _near(text, _ONE_SAMPLE, _DIFFERENT))
            and _near(text, _BATCH_SIZE, _DIFFERENT))


def _megabytes(value: str, unit: str | None) -> float:
    amount = float(value)
    return amount * 1024 if unit and unit.lower().startswith("g") else amount


def _first_gpu_far_above(text: str) -> int | None:
    """The lowest-numbered GPU, when its memory is far above every other GPU's."""
    used: dict[int, float] = {}
    for found in _GPU_MEMORY.finditer(text):
        index, value, unit = found.group(1) or found.group(2), found.group(3), found.group(4)
        gpu = int(index)
        if unit is None and "." in value:
            continue  # a bare decimal is not a memory reading
        used.setdefault(gpu, _megabytes(value, unit))
    if len(used) < 2:
        return None
    first = min(used)
    others = [amount for gpu, amount in used.items() if gpu != first]
    return first if used[first] >= _FAR_MORE * max(others) else None


def _crowded_gpu(text: str) -> tuple[int, int] | None:
    """The first GPU of an nvidia-smi process table, when it lists ``_CROWDED`` or more
    processes: (its index, how many processes besides the first)."""
    processes: dict[int, set[str]] = {}
    for found in _SMI_PROCESS.finditer(text):
        processes.setdefault(int(found.group(1)), set()).add(found.group(2))
    if not processes:
        return None
    first = min(processes)
    count = len(processes[first])
    return (first, count - 1) if count >= _CROWDED else None

