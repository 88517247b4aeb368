"""When a report says things went wrong, and which way its loss went.

Two facts about training decide between entries that read alike in prose:

- *When a NaN first appeared.* The forward pass before the first optimizer step does
  not depend on the learning rate, and one step with finite gradients and a sane rate
  does not overflow float32: a divergence takes several steps, each larger than the
  last. A NaN at step 0, "from the start", "on every iteration" or "right after the
  first ``step()``" comes from the computation (a log or division of 0, bad data),
  not from the rate.
- *Which way the loss turned.* Plain gradient descent at a fixed rate either settles
  or, above the stable rate, oscillates and grows from the start. A loss that falls
  for several steps and then climbs back up toward where it began needs a step that
  grows by itself: gradients that are never zeroed add up, so the effective step grows
  with every iteration. A loss that falls and then shoots far past its starting value
  has diverged, what a rate above the stable one does.

- *When memory ran out.* A batch too large for the card fails at the first step; an
  out-of-memory error that comes only after training ran a while ("after 3 epochs",
  "in the second epoch", "一段时间后") means something grew from step to step.

All are read off the words and the logged numbers, in the text (or its English copy),
never off one wording of one case. A NaN placed later leaves the computation's NaN in
the lead; what puts the rate first is the rate itself named as the lever, a loss that
rose before it turned, or the batch the rate was tuned for changed with the rate kept
(``batch_scaling``), which holds whenever the NaN came.
"""

from __future__ import annotations

import itertools
import re

from torchdoctor.linear_regex import bounded

# Letters, not \b: "变成nan" has no word boundary between the ideograph and the "n".
_NAN = re.compile(r"(?<![A-Za-z])nans?(?![A-Za-z])", re.IGNORECASE)
# Said of the moment a NaN appeared: before any update, or with the first one.
_EARLY = re.compile(
    r"\b(?:at|on|in|from|by)\s+(?:the\s+)?(?:step|iter(?:ation)?|batch|update)\s*#?\s*[01]\b"
    r"|\b(?:very\s+)?first\s+(?:(?:training|optimi[sz]er|gradient)\s+)?"
    r"(?:step|iteration|iter|batch|mini-?batch|forward(?:\s+pass)?|backward|update)\b"
    r"|\bfirst\s+`?(?:\w+\.)?step\(\)"
    r"|\bsecond\s+(?:step|iteration|iter|batch|mini-?batch|update)\b"
    r"|\b(?:one|a single)\s+(?:update|optimi[sz]er step)\b"
    r"|\bfrom\s+the\s+(?:very\s+)?(?:start|beginning|outset)\b|\bright\s+away\b|\bimmediately\b"
    r"|\bstraight\s+away\b|\bbefore\s+(?:any|the\s+first)\s+(?:update|step|training)\b"
    r"|\b(?:every|each)\s+(?:single\s+)?(?:step|iteration|iter|batch)\b|\binitial\s+loss\b",
    re.IGNORECASE)
# A sentence, or a line of a log: what a NaN and a moment said together belong to.
_CLAUSE = re.compile(r"[^.!?;\n]+(?:\.\d[^.!?;\n]*)*")
# A log line's counter: "iter 1 || Loss: nan", "step 0: loss nan".
_COUNTER = re.compile(r"\b(?:step|iter(?:ation)?|batch)\s*#?\s*[:=]?\s*(\d{1,9})\b", re.IGNORECASE)

# A training loss a log or a sentence gives ("Loss error: 0.82", "loss = 2.3"); not a
# validation or test loss, whose fall and rise is overfitting.
_TRAIN_LOSS = re.compile(
    r"(?<![\w-])(?:(?:train(?:ing)?[ _])?loss(?:es)?)\b(?P<label>[^\d\n]{0,20}?)"
    r"(?<![\d.])(?P<value>\d{1,9}(?:\.\d{1,18})?(?:[eE][-+]?\d{1,3})?)(?![\d.])",
    re.IGNORECASE)
_HELD_OUT = re.compile(r"\b(?:val\w*|valid\w*|test\w*|eval\w*|dev)[ _]*$", re.IGNORECASE)
# Steps of falling before the lowest point, and of climbing after it.
_FALLING_STEPS = 2
_CLIMBING_STEPS = 3
# How far the first and the last loss must lie above the lowest one: a fall and a climb,
# not noise around a plateau.
_FELL = 1.5
_CLIMB = 3.0
# A climb "back toward the start" reaches at least this share of the first loss.
_BACK_TOWARD = 0.25


# A NaN or an infinite loss said of a later moment: "after 3 epochs", "at step 4",
# "in the second epoch", "iteration 1200".
_NONFINITE = re.compile(r"(?<![A-Za-z])(?:nans?|inf|infinity)(?![A-Za-z])", re.IGNORECASE)
_LATER = re.compile(
    r"\b(?:after|at|in|around|by|from)\s+(?:about\s+|roughly\s+|some\s+|a\s+few\s+|several\s+)?"
    r"(?:(?:the\s+)?(?:step|iter(?:ation)?|epoch|batch)\s*#?\s*\d{1,9}|\d[\d,.]*k?\s+"
    r"(?:steps|iter(?:ation)?s|epochs|batches)|(?:the\s+)?(?:second|third|\d+(?:st|nd|rd|th))\s+"
    r"(?:epoch|step|iteration))\b"
    r"|\b(?:after|in|within)\s+(?:one|two|three|four|five|six|seven|eight|nine|ten|a\s+couple\s+of)\s+"
    r"(?:epochs?|steps?|iterations?)\b"
    r"|\bafter\s+(?:the\s+)?(?:first|1st)\s+epoch\b|\b(?:later|eventually|afterwards)\b"
    r"|\b(?:after|for)\s+(?:a\s+(?:while|few\s+(?:epochs|steps|iterations))|some\s+(?:time|epochs|steps|iterations)"
    r"|several\s+(?:epochs|steps|iterations))\b|\bsuddenly\b",
    re.IGNORECASE)


def nan_moment(text: str) -> str | None:
    """When a report places its NaN: ``"first update"`` (before any update or with the
    first one), ``"later"`` (a NaN or an infinite loss after training ran a while), or
    ``None`` when it does not say.

    At the first update the NaN is the computation's (a log or a division of zero, bad
    data); later, a rate that grew the updates step by step is as live a cause, and only
    a run of the training steps (the harness) tells the two apart.
    """
    text = bounded(text)
    if _said_together(text, _NAN, _EARLY):
        return "first update"
    first_nan = _first_counter(text, _NAN)
    if first_nan is not None and first_nan <= 1:
        return "first update"
    if _said_together(text, _NONFINITE, _LATER):
        return "later"
    first = _first_counter(text, _NONFINITE)
    return "later" if first is not None and first > 1 else None


# An out-of-memory error as people name it (the glossary's English copy reads the other
# languages' words as "out of memory").
_OUT_OF_MEMORY = re.compile(r"\bout of (?:gpu |cuda |video )?memory\b|\bOOM\b|\bmemory ?error\b",
                            re.IGNORECASE)


def oom_moment(text: str) -> str | None:
    """``"later"`` when a report places its out-of-memory error after training ran a
    while (a growth from step to step, not a batch too large), else ``None``."""
    return "later" if _said_together(bounded(text), _OUT_OF_MEMORY, _LATER) else None


def _said_together(text: str, word: re.Pattern[str], moment: re.Pattern[str]) -> bool:
    """Whether one sentence or log line names both the value and the moment."""
    return any(word.search(clause.group(0)) and moment.search(clause.group(0))
               for clause in _CLAUSE.finditer(text))


def _first_counter(text: str, word: re.Pattern[str]) -> int | None:
    """The counter of a log's first line naming ``word``: "iter 1 || Loss: nan" gives 1."""
    return next((int(counter.group(1)) for line in text.splitlines()
                 if word.search(line) and (counter := _COUNTER.search(line))), None)


def training_losses(text: str) -> list[float]:
    """Every training loss a text logs, in order (a validation loss left out)."""
    values = []
    for found in _TRAIN_LOSS.finditer(bounded(text)):
        before = text[max(0, found.start() - 12):found.start()]
        if _HELD_OUT.search(before):
            continue
        try:
            values.append(float(found.group("value")))
        except ValueError:
            continue
    return values


def loss_turn(text: str) -> str | None:
    """How a logged training loss turned after falling: ``"climbs back"`` when it
    rose again for several steps to a good part of where it began but not past it,
    ``"blows up"`` when it rose past that; ``None`` otherwise."""
    losses = training_losses(text)
    if len(losses) < _FALLING_STEPS + _CLIMBING_STEPS + 1:
        return None
    lowest = min(range(len(losses)), key=losses.__getitem__)
    before, after = losses[:lowest + 1], losses[lowest:]
    if lowest < _FALLING_STEPS or len(after) <= _CLIMBING_STEPS or losses[lowest] <= 0:
        return None
    rises = sum(b > a for a, b in itertools.pairwise(after))
    if (rises < _CLIMBING_STEPS or before[0] < _FELL * losses[lowest]
            or after[-1] < _CLIMB * losses[lowest]):
        return None
    if after[-1] > before[0]:
        return "blows up"
    # Summed gradients overshoot at the scale the loss started from; a rise that stays
    # orders of magnitude below it (Adam near an exact minimum) is another story.
    return "climbs back" if after[-1] >= _BACK_TOWARD * before[0] else None
