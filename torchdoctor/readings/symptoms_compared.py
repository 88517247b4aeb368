"""Readings of a description that compares one input across runs.

Many symptoms are told as a comparison rather than named: "the same image predicted
several times gives a different answer each time", "the first board alone and in a
batch of 32 come out different". What is compared says more than the words around it,
and it reads the same in any language:

- one input that gives different outputs when run again is a forward pass that draws
  random numbers: dropout (or batch statistics) still in train mode at inference;
- one input whose output changes with the batch it is run in is a forward pass that
  mixes the samples of a batch: BatchNorm in train mode, or a reduction over dim 0;
- one seeded run repeated that ends with other results is randomness the seed does not
  reach (non-deterministic kernels, unseeded sources), whatever verb tells the
  difference ("changes a little", "doesn't match", "上下浮动") and however the seed is
  named ("seeded", "随机种子", "シード").

``readings(text)`` says each as the plain phrase the entries' symptom regexes know.
(Memory compared across GPUs is read by ``per_card_memory``.)
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
    # the glossary's English copy reads 相同/同じ as "same" before the noun it qualifies
    r"|\bsame\s*的?\s*(?=图|输入|样本|句|数据|照片|文本|画像|入力|サンプル|データ|이미지|입력|샘플)"
    r"|同じ(?:画像|入力|サンプル|データ|文)|같은\s*(?:이미지|입력|샘플|데이터|문장)"
    r"|(?:одн(?:о|у|а|и) и (?:то же|ту же|те же)|одинаков\w*)\s+\w+"
    r"|(?:mism[ao]s?|misma)\s+(?:imagen|entrada|muestra|imagem)|(?:gleiche|dasselbe|dieselbe)\s+\w+",
    re.IGNORECASE)
# Outputs said to differ.
_DIFFERENT = re.compile(
    r"\b(?:different|differs?|differing|varies|vary|changes?|changing|inconsistent|"
    r"non-?deterministic|not (?:the same|identical|consistent|deterministic|stable))\b"
    r"|不一样|不\s*same\b|不同|不一致|变化|違[うい]|違っ|異な|変わ|다르|달라|다른|разн\w*|отличают\w*"
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
# A seed set for the run, in the languages people describe their runs in.
_SEEDED = re.compile(
    r"\bseed\w*|manual_seed|随机(?:数)?种子|种子|シード|시드|\bсид\w*"
    r"|\bsemillas?\b|\bsementes?\b",
    re.IGNORECASE)
# Results of whole runs said to differ, or the earlier one said not to come back.
_RUNS_DIFFER = re.compile(
    _DIFFERENT.pattern
    + r"|\b(?:do|does|did)\s*(?:n't|not)\s+match\b|\bfluctuat\w*|\bnot reproduc\w*|\b(?:can|could)\s*(?:n't|not)\b"
    r"[^.\n]{0,30}\breproduce\b|\bunable to reproduce\b|浮动|波动|复现不了|无法复现|不能复现|再現でき(?:ない|ません)"
    r"|재현(?:이)?\s*(?:안|되지)|не\s+воспроизвод\w*",
    re.IGNORECASE)
# A whole run repeated: run again, two runs, rerun, trained again, reproduced.
_RUN_REPEATED = re.compile(
    _REPEATED.pattern
    + r"|\b(?:two|both|several|multiple|separate|consecutive|different|subsequent)\s+runs\b|\bre-?run\w*"
    r"|\bone after (?:another|the other)\b|\breproduc\w*|复现|重跑|再跑|再現|재현|повтор\w*|воспроизв\w*",
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


def readings(text: str) -> list[str]:
    """What the comparisons in ``text`` say, as the phrases symptom regexes read."""
    text = bounded(text)
    said = []
    if _differs_with_batch(text):
        said.append("the output for one sample depends on the batch size")
    elif _differs_when_repeated(text):
        said.append("inference on the same input twice gives different outputs")
    if _seeded_runs_differ(text):
        said.append("same seed, different results between runs")
    return said


def _near(text: str, first: re.Pattern[str], second: re.Pattern[str]) -> bool:
    """Whether a hit of ``first`` has one of ``second`` within ``_REACH`` characters."""
    return any(second.search(text, max(0, hit.start() - _REACH), hit.end() + _REACH)
               for hit in first.finditer(text))


def _differs_when_repeated(text: str) -> bool:
    """The same input, run again, gives another output (not across seeds or versions)."""
    return (_near(text, _SAME_INPUT, _DIFFERENT) and _near(text, _SAME_INPUT, _REPEATED)
            and not _OTHER_VARIATION.search(text) and not _SEEDED.search(text))


def _seeded_runs_differ(text: str) -> bool:
    """A run with its seed set, repeated, ended with other results."""
    return _near(text, _SEEDED, _RUNS_DIFFER) and _near(text, _SEEDED, _RUN_REPEATED)


def _differs_with_batch(text: str) -> bool:
    """The same input gives another output in batches of two different sizes."""
    sizes = {next(group for group in found.groups() if group).lower()
             for found in _BATCH_SIZE.finditer(text)}
    return (len(sizes) >= 2 and (_near(text, _SAME_INPUT, _DIFFERENT)
                                 or _near(text, _ONE_SAMPLE, _DIFFERENT))
            and _near(text, _BATCH_SIZE, _DIFFERENT))

