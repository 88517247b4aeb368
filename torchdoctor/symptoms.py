"""Prose symptoms: "loss stays at 2.30 with 10 classes", "NaN after epoch 6".

When there is no traceback, a person describes what they see. Two jobs
here: read the numbers out of the sentence into the same fields templates
and derived facts use (``loss``, ``classes``, ``epoch``, ``step``, ``lr``,
``num_workers``, ``accuracy``), and find the entries whose ``symptoms:``
regexes (case-insensitive) match the sentence.

A description often says more with its numbers than with its words, and the
numbers read the same in any language: a log whose loss sits at 2.303 is a
ten-class model that learns nothing, whether the sentence around it says
"stuck", "bleibt" or "一直不下降". ``readings`` turns what the numbers and
identifiers say into the plain phrases people use ("loss stuck at ln(10)",
"loss tensor accumulated without .item()"), and the symptom regexes read
those phrases beside the text, so one regex serves both.
"""

from __future__ import annotations

import functools
import itertools
import math
import re
import statistics
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from torchdoctor.linear_regex import RegexError, bounded, compile_linear
from torchdoctor.readings import batch_scaling, gpu_utilisation, loaded_shapes, per_card_memory
from torchdoctor.readings.chance_level import chance_classes
from torchdoctor.readings.symptoms_compared import readings as compared_readings
from torchdoctor.readings.torch_versions import readings as version_readings
from torchdoctor.readings.train_eval_compared import readings as train_eval_readings
from torchdoctor.readings.trajectory import loss_turn, nan_moment, oom_moment
from torchdoctor.symptoms_glossary import in_english

# Numbers start where a number starts (not inside one) and have bounded digit runs, so a
# run of 20,000 digits costs one short attempt at its start, not one per digit. Python's
# re is kept here for the lookaheads; the text is capped (see extract_numbers).
_NUMBER = r"(?<![\d.])(-?\d{1,18}(?:\.\d{1,18})?(?:[eE][-+]?\d{1,3})?)"
_COUNT = r"\b(\d{1,9})"
# Between a word and its number: no digits, and no "after"/"for", counter word or other
# label that would hand the number to something else ("loss is NaN after 300 steps",
# "loss is nan at step 0", "the loss becomes nan, lr=0.1": that loss is NaN, 0.1 the rate).
_GAP = (r"(?:(?!\b(?:after|for|every|within|by|steps?|epochs?|iter|iterations?|batch|nan|inf"
        r"|lr|learning[ _]rate|acc|accuracy)\b)[^0-9\n;]){0,30}?")
# What follows a number on its own line says nothing about it ("loss = 2.30\nepoch 1").
_NOT_A_COUNT = r"(?!\.?\d|[ \t]*(?:steps?|iter|iterations?|epochs?|batch|classes|workers|%))"

# "10 classes" in the languages people describe their training in: 10 分类 / 10 类,
# 10 クラス, 10 классов, 10 클래스, 10 clases / classi / Klassen.
_CLASS_WORDS = r"分类|個?の?クラス|类|類|класс\w*|클래스|clases\b|classi\b|Klassen\b"

# Each field is read by the first of its patterns that matches.
_FIELD_PATTERNS: dict[str, tuple[str, ...]] = {
    "loss": (
        rf"\bloss(?:es)?\b{_GAP}{_NUMBER}{_NOT_A_COUNT}",
        rf"{_NUMBER}\s+loss\b",
    ),
    "classes": (
        rf"{_COUNT}[\s-]*(?:output\s+)?(?:classes|class\b|categories|labels\b|-way|{_CLASS_WORDS})",
        rf"\b(?:num_classes|n_classes|classes)\s*[=:]\s*{_COUNT}",
        # words naming what is classified: "196 car classes", "120 dog breed classes"
        # (not "2 of the classes", a part of them)
        rf"{_COUNT}\s+(?!of\b)(?:[A-Za-z]{{2,20}}\s+){{1,2}}classes\b",
    ),
    "epoch": (rf"\bepochs?\s*#?\s*{_COUNT}", rf"{_COUNT}(?:st|nd|rd|th)?\s+epochs?\b"),
    "step": (
        rf"\b(?:step|iteration|iter|batch)(?:es|s)?\s*#?\s*{_COUNT}",
        rf"{_COUNT}(?:st|nd|rd|th)?\s+(?:steps|iterations|iters|batches)\b",
    ),
    "lr": (rf"\b(?:lr|learning[\s_]rate)\s*(?:of|=|:|is|at|to)?\s*{_NUMBER}",),
    "num_workers": (rf"\bnum_workers\s*=?\s*{_COUNT}", rf"{_COUNT}\s+workers\b"),
    "accuracy": (
        rf"\b(?:accuracy|acc)\b{_GAP}{_NUMBER}(?!\s*(?:steps?|epochs?|classes))",
        rf"{_NUMBER}\s*%\s+accuracy",
    ),
}
_COMPILED_FIELDS = {
    name: tuple(re.compile(pattern, re.IGNORECASE) for pattern in patterns)
    for name, patterns in _FIELD_PATTERNS.items()
}


def extract_numbers(text: str) -> dict[str, str]:
    """The numbers a sentence gives, as strings (like regex-captured fields)."""
    found: dict[str, str] = {}
    text = bounded(text)
    for name, patterns in _COMPILED_FIELDS.items():
        for pattern in patterns:
            match = pattern.search(text)
            if match:
                found[name] = match.group(1)
                break
    return found


# --- readings: what the numbers and identifiers say -----------------------------

# Every number a loss label gives, in logs ("loss: 0.70", "[loss]: 4.99", "loss = 2.30",
# "Loss [100, 200](epoch, minibatch):  1.72") and sentences ("loss 1.386").
# The label may be another language's word for it (损失 / 損失, потери, 손실, pérdida).
_LOSS_VALUE = re.compile(
    r"(?:\bloss(?:es)?\b|损失|損失|\bпотер[иья]\w*|손실|\bp[ée]rdida\b)"
    r"[\]'\"]?(?:\s*\[[\d, ]{1,40}\](?:\([\w, ]{1,40}\))?)?" + _GAP + _NUMBER + _NOT_A_COUNT,
    re.IGNORECASE,
)
# An accuracy as a log or a sentence gives it, in any of the usual languages:
# "val_acc 0.1", "accuracy: 10.02%", "准确率一直停在 10% 左右", "точность 10%".
_ACCURACY_VALUE = re.compile(
    r"(?:(?:\b|(?<=_))(?:acc(?:uracy)?|prec@?1|top-?1)\b|准确率|正确率|准确度|精度|正解率|\bточност\w*|정확도|"
    r"\bprecisi[oó]n\b|\bexactitud\b|\bGenauigkeit\b|\bacur[áa]cia\b|\baccuratezza\b)"
    r"[\]'\"]?" + _GAP + _NUMBER + r"(?!\.?\d)[ \t]*(%?)",
    re.IGNORECASE,
)
# Percentages after a labelled accuracy, on its line, up to the next label.
_PERCENT = re.compile(r"(?<![\d.])(\d{1,3}(?:\.\d{1,6})?)[ \t]*%")
_SERIES_REACH = 80
# The class count a benchmark data set fixes, when a description names the data set
# rather than the count ("random-guess accuracy on CIFAR-100").
_DATASET_CLASSES = (
    (re.compile(r"\bcifar-?_?100\b", re.IGNORECASE), 100),
    (re.compile(r"\bcifar-?_?10\b", re.IGNORECASE), 10),
    (re.compile(r"\b(?:fashion-?_?)?mnist\b|\bsvhn\b|\bstl-?_?10\b", re.IGNORECASE), 10),
    (re.compile(r"\btiny-?_?imagenet\b", re.IGNORECASE), 200),
    (re.compile(r"\bimagenet(?:-?1k)?\b", re.IGNORECASE), 1000),
)
# An accuracy "at chance" lies within this share of 100/C percent (10 % +- 1 for ten
# classes, 50 % +- 5 for two): a plateau of a model that predicts one class or guesses.
_CHANCE_ACCURACY_SPREAD = 0.1
# Three or more losses within this relative spread "do not move".
_FLAT_SPREAD = 0.015
# The last losses a log reports say where training is now; a falling curve that
# passed ln C on its way down has most of them elsewhere.
_RECENT_LOSSES = 8   # relative spread of three or more losses that "do not move"
# Learning rates someone compared (0.1 against 0.001), not a scheduler's log of slowly
# decaying values (0.0097, 0.0094, 0.0091, ...): a few values, at least 3x apart.
_MAX_RATES_COMPARED = 4
_RATES_APART = 3.0
_LR_VALUE = re.compile(
    r"\b(?:lr|learning[ _]rate)\b\s*(?:=|:|of|is|to|set to|at)?\s*"
    r"(?<![\d.])(\d{1,6}(?:\.\d{1,18})?(?:[eE][-+]?\d{1,3})?)(?!\.?\d|[eE][-+]?\d)",
    re.IGNORECASE,
)
# A text that speaks of its learning rate, in the usual languages.
_RATE_NAMED = re.compile(r"\b(?:lr|learning[ _]rates?)\b|学习率|学習率|학습률|скорост\w* обучения"
                         r"|tasa de aprendizaje|taxa de aprendizado|Lernrate", re.IGNORECASE)
_SCIENTIFIC = re.compile(r"(?<![\w.])(\d(?:\.\d{1,6})?[eE]-\d{1,2})(?!\w|\.\d)")
# The other quantities people write in scientific notation: a value after one of them in
# its clause is that quantity's, not a rate.
_OTHER_SETTING = re.compile(
    r"\b(?:eps|epsilon|weight[ _]?decay|wd|decay|momentum|betas?|tol\w*|clip\w*|max_norm|norm|"
    r"grad\w*|threshold|min_lr|eta_min|loss\w*|acc\w*|mean|average|std|var\w*|values?)\b"
    r"[^.;\n]*$", re.IGNORECASE)
# A loss tensor added to a running total, not its Python number: the graph of every
# step stays alive ("total_loss += loss", "epoch_loss += loss[0]" at a line's end, or
# ended by a sentence's comma or full stop, but not "+= loss.item()").
_LOSS_ACCUMULATED = re.compile(
    r"\+=\s*(?:\w+\.)?\w*loss\w*(?:\[[^\]\n]{0,20}\])?[ \t]*(?:[\n`;#,]|\.(?!\w)|$)",
    re.IGNORECASE)
# NaN and a half-precision setting named anywhere in one description (a class named after
# it counts: MMSeg's AmpOptimWrapper): people write the setting in one sentence or list
# item ("fine without torch.cuda.amp") and the NaN in another, and float16's range (max
# 65504) is what overflows first.
_NAN_WORD = re.compile(r"(?<![A-Za-z])nans?(?![A-Za-z])", re.IGNORECASE)
# A dynamic loss scale halves on every step whose gradients overflowed; when every step
# does (a loss that is inf or NaN each time), it reaches 0 and 1/scale divides by zero:
# a ZeroDivisionError under amp is a NaN that was never printed.
_SCALE_AT_ZERO = re.compile(r"\bZeroDivisionError\b|\bdivision by zero\b"
                            r"|\bloss scale\w*\b[^.\n]{0,40}?\bto 0(?:\.0)?\b", re.IGNORECASE)
# The width of a classifier's last layer as people write it: the last nn.Linear's
# out_features, "out_features=195", "195 outputs".
_HEAD_WIDTH = re.compile(r"\bLinear\(\s*[^,()]{1,60},\s*(\d{1,7})\s*[,)]"
                         r"|\bout_features\s*=\s*(\d{1,7})"
                         r"|\b(\d{1,7})\s+(?:outputs|output units|output neurons)\b", re.IGNORECASE)
_HALF_PRECISION = re.compile(
    r"\b(?:amp|autocast|fp16|float16|bf16|bfloat16|GradScaler|apex|mixed[ _-]?precision|"
    r"half[ _-]precision)\b|\.half\(\)|\b(?-i:Amp(?=[A-Z]))", re.IGNORECASE)


# A module built in a forward() shown as code: "self.fc = nn.Linear(...)" or "conv = nn.Conv2d(...)"
# in the indented body under "def forward(". Each call makes a layer with new weights that the
# optimizer, built once over model.parameters(), never holds.
_FORWARD_BODY = re.compile(r"^([ \t]*)def forward\([^)\n]{0,200}\)[^\n]{0,80}\n((?:\1[ \t]+[^\n]*\n|[ \t]*\n){1,200})",
                           re.MULTILINE)
_MODULE_BUILT = re.compile(r"=\s*(?:torch\.)?nn\.[A-Z]\w{0,40}\(")


# A model's output appended to a list as it came out, shown as code ("all_preds.append(logits)"):
# not its Python number, a detached copy or a CPU copy, so every step's tensor (and, outside
# no_grad, its graph) stays on the device. Read only where the text speaks of memory.
_OUTPUT_APPENDED = re.compile(
    r"\.append\(\s*(?:\w+\.)*(?:logits?|outputs?|out|preds?|predictions?|scores?|probs?|y_?hat"
    r"|\w+_(?:logits|preds?|outputs?|out))\s*\)", re.IGNORECASE)
_MEMORY_WORD = re.compile(r"\b(?:memory|ram|vram|oom)\b", re.IGNORECASE)


# Weights trained elsewhere (pretrained, converted, downloaded) that answer one class for every
# input, or classes that make no sense, in a report that tells of no training of its own: a model
# left in train mode normalises each lone image by its own statistics. A model trained or
# fine-tuned here that answers one class has other causes (the data, the rate).
_TRAINED_ELSEWHERE = re.compile(r"\b(?:pre-?trained|converted|imported|downloaded)\b", re.IGNORECASE)
_ONE_ANSWER = re.compile(
    r"\b(?:for|on|to|with) (?:every|each|all|any)\s+(?:\w+\s+)?(?:pictures?|images?|inputs?|photos?|imgs?)\b"
    r"|\b(?:same|one|wrong|identical)\s+(?:class|label|prediction|answer)\b"
    r"|\b(?:classes|answers|predictions|labels|results)\b[^.\n]{0,40}\b(?:make no sense|nonsense|strange|weird"
    r"|odd|wrong|garbage|random)\b|\b(?:strange|weird|odd|wrong|nonsense|garbage)\s+(?:classes|answers"
    r"|predictions|labels|results)\b", re.IGNORECASE)
_TRAINING_TOLD = re.compile(r"\bfine-?tun\w*|\btrain(?:s|ed|ing)?\b|\bepochs?\b|\blearning[ _]rate\b|\blr\b",
                            re.IGNORECASE)


# A memory reading: "3200mb", "10gb", "4537M", "1.300 MB" (a thousands dot: nobody gives
# megabytes to three decimals); not the card's total ("of 8111MiB", "/ 11GB").
_MEMORY_VALUE = re.compile(r"(?<![\d.,])(?<!\bof )(?<!/)(?<!/ )(\d{1,6})(?:([.,])(\d{1,3}))?\s?(mib|mb|m|gib|gb|g)\b",
                           re.IGNORECASE)
_MEMORY_COUNTER = re.compile(r"\b(?:iter|iteration|step|epoch|batch)(?:es|s)?\s*#?\s*(\d{1,9})\b",
                             re.IGNORECASE)
# A clause of a sentence or log: one reading and the counter it was taken at.
_CLAUSE_END = re.compile(r"[,;]|\.\s|\s--?\s|->|→")
# Readings after a rise that stay within this share of each other have stopped growing.
_PLATEAU_SPREAD = 0.02
# A growth rate per counter step this many times slower at the end than at the start.
_SLOWED = 4.0


def _megabytes(found: re.Match[str]) -> float:
    whole, mark, part, unit = found.groups()
    if part is None:
        value = float(whole)
    elif unit.lower() in ("mb", "mib", "m") and mark == "." and len(part) == 3 or mark == ",":
        value = float(whole + part) if len(part) == 3 else float(f"{whole}.{part}")
    else:
        value = float(f"{whole}.{part}")
    return value * 1024 if unit.lower().startswith("g") else value


def memory_levels_off(text: str) -> bool:
    """Whether three or more memory readings rise and then stop rising.

    PyTorch's caching allocator keeps the blocks it freed and reserves more only when a
    step needs a size it has not cached, so what nvidia-smi shows rises over the first
    steps (and with each new input size), ever more rarely, up to the largest working
    set. A leak grows by about the same amount every step. Readings taken at counted
    steps ("3200mb at iter 99, 7000mb at iter 219, 10gb at iter 5199") level off when the
    last interval grows ``_SLOWED`` times slower per step than the first; readings with
    no counter, when the last ones repeat after a rise.
    """
    pairs, series = [], []
    for line in bounded(text).splitlines():
        values = []
        for clause in _CLAUSE_END.split(line):
            amounts = [_megabytes(found) for found in _MEMORY_VALUE.finditer(clause)]
            values.extend(amounts)
            counters = _MEMORY_COUNTER.findall(clause)
            if len(amounts) == 1 and len(counters) == 1:
                pairs.append((int(counters[0]), amounts[0]))
        series.append(values)
    if len(pairs) >= 3 and all(a[0] < b[0] for a, b in itertools.pairwise(pairs)):
        (s0, m0), (s1, m1), (s2, m2) = pairs[0], pairs[1], pairs[-1]
        if m0 < m1 <= pairs[-2][1] <= m2:
            first = (m1 - m0) / (s1 - s0)
            last = (m2 - pairs[-2][1]) / (s2 - pairs[-2][0])
            return last * _SLOWED < first
    # A line of readings with no counters ("2934M -- 4413M -- 4537M -- 4537M").
    return any(len(values) >= 3 and values[0] < values[-1] * (1 - 5 * _PLATEAU_SPREAD)
               and 0 <= values[-1] - values[-2] <= _PLATEAU_SPREAD * values[-1]
               for values in series)


def learning_rates(text: str) -> list[float]:
    """Every learning rate a text names ("lr=0.0001", "LEARNING_RATE set to 0.001"), and,
    in a text that speaks of its learning rate, every small number in scientific notation
    that no other setting claims ("nan within 3 epochs at 1e-6, fine at 3e-8"): rates are
    what people write that way, next to eps and weight decay, which are named when given."""
    text = bounded(text)
    labelled = list(_LR_VALUE.finditer(text))
    rates = [float(found.group(1)) for found in labelled]
    if _RATE_NAMED.search(text):
        read = {found.start(1) for found in labelled}
        rates.extend(float(found.group(1)) for found in _SCIENTIFIC.finditer(text)
                     if found.start(1) not in read
                     and not _OTHER_SETTING.search(text[max(0, found.start() - 25):found.start()]))
    return rates


def loss_values(text: str) -> list[float]:
    """Every loss a text reports, in order."""
    values = []
    for found in _LOSS_VALUE.finditer(bounded(text)):
        try:
            values.append(float(found.group(1)))
        except ValueError:
            continue
    return values


def accuracy_values(text: str) -> list[float]:
    """Every accuracy a text reports, in percent (a fraction without "%" is read as one),
    with the percentages that follow a labelled one on its line ("accuracy 10%, then
    35%, 61%"): a sentence names the metric once for its whole series."""
    values = []
    text = bounded(text)
    for found in _ACCURACY_VALUE.finditer(text):
        try:
            value = float(found.group(1))
        except ValueError:
            continue
        if not found.group(2) and 0 <= value <= 1:
            value *= 100
        if 0 <= value <= 100:
            values.append(value)
        rest = text[found.end():found.end() + _SERIES_REACH].split("\n", 1)[0]
        if (label := _ACCURACY_VALUE.search(rest)) is not None:
            rest = rest[:label.start()]
        values.extend(float(more) for more in _PERCENT.findall(rest) if float(more) <= 100)
    return values


def class_count(text: str) -> int | None:
    """The number of classes a description gives, or the one its data set fixes."""
    return _named_classes(text) or _dataset_classes(text)


def _named_classes(text: str) -> int | None:
    named = extract_numbers(text).get("classes")
    return int(named) if named and int(named) > 1 else None


def _dataset_classes(text: str) -> int | None:
    """A data set named is weaker evidence than a count: "ImageNet" is often only where
    the weights came from."""
    return next((count for pattern, count in _DATASET_CLASSES if pattern.search(text)), None)


def _at_chance(accuracy: float, classes: int) -> bool:
    chance = 100.0 / classes
    return abs(accuracy - chance) <= _CHANCE_ACCURACY_SPREAD * chance


def readings(text: str) -> list[str]:
    """What a description's numbers and identifiers say, as the phrases people write.

    - most of the last losses it reports sit at ln C, the loss of a uniform guess over
      C classes (C read from the text, else the data set's, else the usual class counts
      and vocabularies);
    - three or more losses that do not move (within 1.5 %);
    - a few learning rates named, at least 3x apart (someone compared them);
    - a loss tensor added to a running total without ``.item()``;
    - a model's output appended to a list as it is, in a text about memory;
    - pretrained or converted weights answering one class for every input, or classes that make
      no sense, with no training told;
    - NaN in a description that names a half-precision setting (amp, fp16, bf16), or the
      loss scale that fell to zero there (a ZeroDivisionError under amp);
    - NaN placed before any update or at the first one, or after training ran a while
      (``trajectory``);
    - an out-of-memory error placed after training ran a while (``trajectory``);
    - a logged training loss that falls and then climbs back toward where it began, or
      shoots past it (``trajectory``);
    - most of the accuracies it reports sit at 100/C percent, C named or fixed by the
      data set it names (CIFAR-100, MNIST, ImageNet);
    - an ``nn`` module constructed in the body of a ``forward`` shown as code;
    - several processes on GPU 0, or GPU 0 holding far more than the other cards
      (``per_card_memory``);
    - GPU utilisation figures all low, or from idle to busy (``gpu_utilisation``);
    - weights being loaded beside two differing shapes of one rank (``loaded_shapes``);
    - one input giving other outputs when run again or in a batch of another size
      (``symptoms_compared``);
    - eval mode that made the results worse, and a held-out accuracy far below the
      training one (``train_eval_compared``);
    - code written before torch 0.4 run on a later torch (``torch_versions``);
    - the batch a learning rate was tuned for changed, then the loss diverged
      (``batch_scaling``).
    """
    text = bounded(text)
    said: list[str] = []
    named, dataset = _named_classes(text), _dataset_classes(text)
    recent = [value for value in loss_values(text) if value > 0][-_RECENT_LOSSES:]
    if recent:
        typical = statistics.median(recent)
        count = chance_classes(typical, named) if named else (
            (dataset and chance_classes(typical, dataset)) or chance_classes(typical))
        near = sum(chance_classes(value, count) == count for value in recent) if count else 0
        if count is not None and near * 2 > len(recent):
            said.append(f"loss stuck at ln({count}), a uniform guess over {count} classes")
        if len(recent) >= 3 and (max(recent) - min(recent)) <= _FLAT_SPREAD * typical:
            said.append(f"loss stuck at {typical:g}")
    classes = named or dataset
    accuracies = accuracy_values(text)[-_RECENT_LOSSES:]
    if classes and accuracies and 2 * sum(_at_chance(a, classes) for a in accuracies) > len(
            accuracies):
        said.append(f"accuracy stuck at chance, a uniform guess over {classes} classes")
    rates = {rate for rate in learning_rates(text) if rate > 0}
    if 2 <= len(rates) <= _MAX_RATES_COMPARED and max(rates) >= _RATES_APART * min(rates):
        said.append("several learning rates tried")
    if _LOSS_ACCUMULATED.search(text):
        said.append("loss tensor accumulated without .item()")
    if (_TRAINED_ELSEWHERE.search(text) and _ONE_ANSWER.search(text)
            and not _TRAINING_TOLD.search(text)):
        said.append("weights trained elsewhere give wrong classes at inference")
    if _OUTPUT_APPENDED.search(text) and _MEMORY_WORD.search(text):
        said.append("model outputs appended to a list as tensors")
    if (_NAN_WORD.search(text) or _SCALE_AT_ZERO.search(text)) and _HALF_PRECISION.search(text):
        said.append("NaN under mixed precision")
    if (moment := nan_moment(text)) == "first update":
        said.append("NaN from the first update on")
    elif moment == "later":
        said.append("non-finite loss after training ran a while")
    if oom_moment(text) == "later":
        said.append("out of memory after a while")
    if (turn := loss_turn(text)) == "climbs back":
        said.append("loss falls, then climbs back up toward where it started")
    elif turn == "blows up":
        said.append("loss falls, then blows up past where it started")
    if memory_levels_off(text):
        said.append("readings level off at a plateau")
    said.extend(per_card_memory.readings(text))
    said.extend(gpu_utilisation.readings(text))
    said.extend(loaded_shapes.readings(text))
    width = _head_width(text)
    if classes and width and 1 < width < classes:
        # labels up to C-1 reach past the last output: a target out of range for the loss
        said.append(f"final layer has {width} outputs for {classes} classes, fewer outputs "
                    "than classes")
    if any(_MODULE_BUILT.search(body.group(2)) for body in _FORWARD_BODY.finditer(text)):
        said.append("layer created inside forward")
    said.extend(compared_readings(text))
    said.extend(train_eval_readings(text))
    said.extend(version_readings(text))
    said.extend(batch_scaling.readings(text))
    return said


def _head_width(text: str) -> int | None:
    """The output width of the last classifier layer a description names, if any."""
    widths = [next(g for g in found.groups() if g) for found in _HEAD_WIDTH.finditer(text)]
    return int(widths[-1]) if widths else None


# A sentence that tells a lever the person already pulled, with the symptom unchanged:
# "I also set shuffle=False and it still happens", "raising the rate changed nothing",
# "加了 model.eval() 还是一样". A phrase of an entry that ends in the telling of that
# lever names the lever, not the symptom: it is not evidence (the person ruled it out);
# one that reaches the words of the persistence ("the seed is set and the results
# still differ") still is.
_SENTENCE = re.compile(r"[^.!?\n。！？]+")
_PULLED = re.compile(
    r"\b(?:tried|try(?:ing)?|set|setting|added|adding|changed|changing|turned|turning|used|using|"
    r"disabled|enabled|removed|raising|raised|lowering|lowered|increasing|increased|decreasing|"
    r"decreased|even with|also)\b|试了|试过|设置了|设了|改了|加了|换了|用了|去掉了",
    re.IGNORECASE)
_PERSISTS = re.compile(
    r"\b(?:still|persists?|persisted|did\s*(?:n't|not) help|does\s*(?:n't|not) help|no (?:difference|effect|change)|"
    r"nothing changed|changed nothing|changes nothing|makes? no difference|made no difference|to no avail)\b"
    r"|还是|依然|仍然|没用|没有用|不管用|没效果|没有效果",
    re.IGNORECASE)


def ruled_out_spans(text: str) -> list[tuple[int, int]]:
    """Where ``text`` tells a lever already pulled, up to the words that say the symptom
    stayed ("I also set shuffle=False and it | still happens")."""
    spans = []
    for found in _SENTENCE.finditer(text):
        persists = _PERSISTS.search(found.group(0))
        if persists and _PULLED.search(found.group(0), 0, persists.start()):
            spans.append((found.start(), found.start() + persists.start()))
    return spans


def _ruled_out(found: re.Match[str], spans: list[tuple[int, int]]) -> bool:
    """Whether a hit ends in the telling of a lever already pulled, before the words
    that say the symptom stayed: it names the lever, not the symptom."""
    return any(start < found.end() <= end for start, end in spans)


def _standing(regex: re.Pattern[str], text: str,
              pulled: list[tuple[int, int]]) -> re.Match[str] | None:
    """The first hit of ``regex`` in ``text`` that is not a lever already pulled."""
    if not pulled:
        return regex.search(text)
    return next((found for found in regex.finditer(text) if not _ruled_out(found, pulled)), None)


# A name a log prints a value under: "mask_loss:  nan", "val_acc=0.12", "train_loss 2.3".
_LOGGED_NAME = re.compile(r"\b[A-Za-z]{1,30}(?:_[A-Za-z]{1,30}){1,4}\b(?=[ \t]{0,3}[:=]?[ \t]{0,3}"
                          r"(?:[-+]?\d|nan\b|inf\b))", re.IGNORECASE)


@dataclass
class SymptomMatch:
    """An entry whose symptoms matched, and how much of the text they explain.

    ``pieces`` counts its symptom regexes (claims) that matched and named a word of the
    text no other counted claim named; ``named`` adds up the weights of the words of
    the text its phrases spell themselves, not the words a phrase only steps over
    (``loss.{0,40}nan`` names "loss" and "nan"), each counted once.
    """

    entry: object
    matched: list[str]
    total: int
    specificity: float
    fields: dict[str, str] = field(default_factory=dict)
    pieces: int = 0
    named: float = 0.0


def _compile(regex: object) -> Any:
    """Symptoms are case-insensitive whatever the pattern object says."""
    try:
        return compile_linear(str(getattr(regex, "regex", regex)), ignore_case=True)
    except RegexError:
        return None


def symptom_regexes(entry: object) -> list[object]:
    return list(getattr(entry, "symptoms", None) or [])


@functools.lru_cache(maxsize=4096)
def phrases(regex: str) -> tuple[str, ...]:
    """The top-level alternatives of a symptom regex, each a phrase of its own.

    ``a|b`` written as one regex says as much as ``a`` and ``b`` written as two: an
    entry that packs its phrases into one alternation must not score a full share
    of its symptoms whichever single phrase a text happens to hit.
    """
    branches, depth, start, escaped, in_class = [], 0, 0, False, False
    for position, char in enumerate(regex):
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif in_class:
            in_class = char != "]"
        elif char == "[":
            in_class = True
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        elif char == "|" and depth == 0:
            branches.append(regex[start:position])
            start = position + 1
    branches.append(regex[start:])
    return tuple(branches) if all(b.strip() for b in branches) else (regex,)


# The words of a text: runs of Latin or Cyrillic letters, runs of digits, and each
# character of the scripts written without spaces (CJK, kana, hangul) on its own.
_TOKEN = re.compile(r"[A-Za-z\u00C0-\u024F\u0400-\u04FF]+|\d+|[^\x00-\x7F\u00C0-\u024F\u0400-\u04FF\W]")
# The words a phrase spells out: a regex's source without its escapes (\b, \w, \d, \.),
# its character classes and its repeat counts ({0,40}), each read as a break between
# words, and without its groups' brackets and the marks that make a part optional, so
# that ``grad(?:ient)?s?`` spells "gradients".
# A word this share of the entries spell is too common to tell them apart.
COMMON_SHARE = 0.25
_ESCAPE = re.compile(r"\\.|\[[^\]]*\]|\{\d*,?\d*\}")
_GROUPING = re.compile(r"\(\?(?:[:=!]|P?<[^>]*>)|[()?*+]")


@functools.lru_cache(maxsize=8192)
def spelled_words(branch: str) -> tuple[str, ...]:
    """The words a phrase spells out, lower-cased ("explod" of ``explod\\w*``)."""
    bare = _GROUPING.sub("", _ESCAPE.sub(" ", branch))
    return tuple(sorted({word.lower() for part in bare.split("|") for word in _TOKEN.findall(part)}))


def _naming(word: str, spelled: tuple[str, ...]) -> list[str]:
    """The words a phrase spells that name a word of the text: the same word, or one
    the stem of the other ("exploding" for ``explod\\w*``, "nan" for ``nans?``)."""
    if len(word) == 1:
        return [] if word.isascii() else [known for known in spelled if word in known]
    return [known for known in spelled
            if word == known or (min(len(word), len(known)) >= 3
                                 and (word.startswith(known) or known.startswith(word)))]


def _named_words(found: re.Match[str], branch: str,
                 weight: dict[str, float]) -> dict[int, float]:
    """Where, in the text, the words a hit's phrase spells out lie, each with what it
    tells the entries apart (its ``weight``)."""
    spelled = spelled_words(branch)
    named = {}
    for word in _TOKEN.finditer(found.group(0)):
        if naming := _naming(word.group(0).lower(), spelled):
            named[found.start() + word.start()] = max(weight.get(known, 0.0) for known in naming)
    return named


def word_weights(spelling: Iterable[Iterable[str]]) -> dict[str, float]:
    """How much each word the entries' phrases spell tells them apart (``spelling``: each
    entry's phrases' words): log(N / (n * COMMON_SHARE)) for a word n of the N entries
    spell, and nothing for a word at least a COMMON_SHARE of them spell ("is", "not",
    "loss" in the training entries), which tells none of them apart. "BCEWithLogits",
    in one entry's phrases, says much."""
    sets = [set(words) for words in spelling]
    counts: dict[str, int] = {}
    for words in sets:
        for word in words:
            counts[word] = counts.get(word, 0) + 1
    return {word: max(0.0, math.log(len(sets) * COMMON_SHARE / count))
            for word, count in counts.items()}


@functools.lru_cache(maxsize=64)
def _weights_for(vocabularies: tuple[tuple[str, ...], ...]) -> dict[str, float]:
    return word_weights(vocabularies)


def _vocabulary(entry: object) -> tuple[str, ...]:
    return tuple(sorted({word for regex in symptom_regexes(entry)
                         for branch in phrases(str(getattr(regex, "regex", regex)))
                         for word in spelled_words(branch)}))


@functools.lru_cache(maxsize=4)
def described(text: str) -> str:
    """``text`` as the symptom regexes and facets read it: with its other-language words
    read as English, and the readings of its numbers and identifiers (taken from that
    copy, whose punctuation is ASCII), each after the text."""
    seen = bounded(text)
    english = in_english(seen)
    said = readings(english or seen)
    if english:
        seen = seen + "\n" + english
    if said:
        seen = seen + "\n" + "\n".join(said)
    return seen


def match_symptoms(text: str, entries: Iterable[object]) -> list[SymptomMatch]:
    """Entries whose symptoms match ``text``, best first.

    Better means more pieces of evidence (phrases that each explain words of the text
    no other phrase of the entry explained), then more words of the text named, then
    id. Both are measured on the text, never as a share of the entry's phrases: an
    entry that knows more ways people say a symptom can only explain more of a report,
    so it must never rank lower for knowing them.
    """
    results: list[SymptomMatch] = []
    entries = tuple(entries)
    weight = _weights_for(tuple(_vocabulary(entry) for entry in entries))
    seen = described(text)
    # A log names its numbers with identifiers ("mask_loss: nan", "val_acc 0.1"): those
    # are read as words too, so a phrase about the loss finds "mask_loss" as "mask loss".
    # The copy has the text's length, so a hit in either names the same positions.
    words = _LOGGED_NAME.sub(lambda found: found.group(0).replace("_", " "), seen) if (
        "_" in seen) else None
    pulled = ruled_out_spans(seen)
    for entry in entries:
        regexes = symptom_regexes(entry)
        if not regexes:
            continue
        claims: list[list[tuple[str, re.Match[str]]]] = []
        total = 0
        for regex in regexes:
            branches = phrases(str(getattr(regex, "regex", regex)))
            total += len(branches)
            if len(branches) > 1 and (whole := _compile(regex)) is not None and not (
                    whole.search(seen) or (words and whole.search(words))):
                continue  # one search settles a miss; branches are only read on a hit
            hits = [(branch, found) for branch in branches
                    if (compiled := _compile(branch)) is not None
                    and (found := _standing(compiled, seen, pulled) or (
                        words and _standing(compiled, words, pulled))) is not None]
            if hits:
                claims.append(hits)
        if claims:
            results.append(_evidence(entry, claims, total, weight))
    results.sort(key=lambda m: (-m.pieces, -m.named, -m.specificity,
                                str(getattr(m.entry, "id", ""))))
    return results


def _evidence(entry: object, claims: list[list[tuple[str, re.Match[str]]]], total: int,
              weight: dict[str, float]) -> SymptomMatch:
    """What an entry's hits say. Each of its symptom regexes is one claim (its branches
    are phrasings of it, ``docs/knowledge-format.md``) and speaks through its phrasing
    that names the most of the text; a claim is one more piece of evidence when it names
    a word of the text no claim before it named, and every word named counts once, by
    its weight. More phrasings can only name more, more claims only add pieces."""
    best = []
    for hits in claims:
        scored = [(branch, found, _named_words(found, branch, weight)) for branch, found in hits]
        best.append(max(scored, key=lambda hit: (sum(hit[2].values()), len(hit[1].group(0)))))
    best.sort(key=lambda hit: (-sum(hit[2].values()), -len(hit[1].group(0))))
    matched: list[str] = []
    named: dict[int, float] = {}
    captured: dict[str, str] = {}
    matched_chars = 0
    for branch, found, words in best:
        if matched and words.keys() <= named.keys():
            continue
        matched.append(branch)
        named.update(words)
        matched_chars += len(found.group(0))
        captured.update({k: v for k, v in found.groupdict().items() if v is not None})
    return SymptomMatch(entry, matched, total, matched_chars / (matched_chars + 20), captured,
                        pieces=len(matched), named=round(sum(named.values()), 4))
