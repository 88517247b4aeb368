"""Readings of a description that compares training with evaluation.

Two comparisons decide between sibling entries, and people tell them in any order and
language without naming a cause:

- the model's two modes: "when I add model.eval() the accuracy goes down", "commenting
  out model.eval() makes validation normal". Switching to eval mode is what made the
  result worse, so the mode switch itself is not missing (that is the opposite story,
  "without eval() the results are worse"): the layers that behave differently in eval
  mode, BatchNorm's running statistics, do not fit the data;
- the two sets: "train accuracy 90, test accuracy 50". Accuracies given for the
  training set and for a held-out set, far apart, are a model that does not generalise,
  whatever words (or none) the person uses for it.

``readings(text)`` says each as the plain phrase the entries' symptom regexes know. It
reads the text as given and the glossary's English copy of it (``symptoms_glossary``).
"""

from __future__ import annotations

import re

from torchdoctor.linear_regex import bounded

# model.eval() as a person writes it: the call, or "eval mode". Its object starts at a
# word's start: tried inside a long run of word characters, it would rescan the run
# from every position.
_EVAL = r"(?:[\"'`]?(?:\b\w+\.)?eval\(\)[\"'`]?|eval(?:uation)?\s+mode)"
# A result that went down, or an error that went up, or plainly worse.
_WORSE = (r"(?:\b(?:acc\w*|performance|results?|scores?|m?AP|m?IoU|dice|precision|recall|f1|metrics?|numbers?)\b"
          r"[^.?!\n]{0,40}?\b(?:goes|went|gone|going|drops?|dropped|dropping|falls?|fell|decreas\w*|"
          r"degrad\w*|lower\w*|plummet\w*|collapses?|collapsed)\b"
          r"|\b(?:loss|error)\b[^.?!\n]{0,40}?\b(?:goes up|went up|increas\w*|rises?|rose|higher|jumps?)\b"
          r"|\b(?:worse|terrible|awful|much lower|far lower|very bad|garbage)\b)")
# Better, or back to normal.
_BETTER = r"\b(?:better|best|improv\w*|works fine|normal(?:ly)?|fine|as expected|matches?)\b"
# eval() switched on: added, called, used, "with model.eval()", "after model.eval()".
_SWITCHED_ON = re.compile(
    r"\b(?:add\w*|call\w*|us(?:e|es|ed|ing)|switch\w*(?:\s+to)?|turn\w*\s+on|put\w*|set\w*(?:\s+to)?|with|after|once)"
    r"\s+(?:the\s+|two\s+|both\s+|a\s+|an\s+)?(?:\w+\s+){0,2}?" + _EVAL
    + r"[^.?!\n]{0,100}?" + _WORSE, re.IGNORECASE)
# eval() taken out: removed, commented out, left out, and the result is better or normal;
# also said after the call, as Chinese and Japanese word it ("把 model.eval() 注释掉就正常了").
_SWITCHED_OFF = re.compile(
    r"\b(?:remov\w*|comment\w*(?:\s+out)?|tak\w*\s+out|leav\w*\s+out|delet\w*|disabl\w*)\s+"
    r"(?:the\s+|that\s+|this\s+)?(?:\w+\s+){0,2}?" + _EVAL + r"[^.?!\n]{0,100}?" + _BETTER
    + r"|" + _EVAL + r"[^.?!\n]{0,20}?\b(?:commented out|removed|taken out|left out|deleted)\b"
    r"[^.?!\n]{0,60}?" + _BETTER, re.IGNORECASE)

# An accuracy the sentence gives for the training set or for a held-out set: the set named,
# then within the clause its value ("training accuracy 0.95", "训练集上准确率已经 90 多了"); a
# clause that names a loss or an error first gives that, not an accuracy ("train Loss: 0.89").
_CLAUSE = r"(?:(?!\b(?:loss|error|err)\b)[^,;.\n。，；]|\.(?=\d))"
_VALUE = r"(?<![\d.])(\d{1,3}(?:\.\d{1,4})?)(?!\d|\.\d|\s*(?:epochs?|steps?|iter\w*|batch\w*|classes|images|samples))"
_TRAIN_ACCURACY = re.compile(
    r"\btrain(?:ing)?(?:\s+set|\s+data)?\b(?!\s+(?:for|on)\b)(" + _CLAUSE + r"{0,40}?)" + _VALUE, re.IGNORECASE)
_HELD_OUT_ACCURACY = re.compile(
    r"\b(?:val(?:idation)?|valid|test(?:ing)?|dev|held-?out)(?:\s+set|\s+data)?\b(" + _CLAUSE + r"{0,40}?)"
    + _VALUE, re.IGNORECASE)
_ACCURACY_WORD = re.compile(r"\bacc(?:uracy|uracies)?\b|%", re.IGNORECASE)
# Accuracy points between the two sets that no tuning explains.
_GAP_POINTS = 25.0


def readings(text: str) -> list[str]:
    """What ``text``'s comparisons of training and evaluation say, as symptom phrases."""
    text = bounded(text)
    said = []
    if _SWITCHED_ON.search(text) or _SWITCHED_OFF.search(text):
        said.append("switching to eval mode makes the results worse than train mode")
    if _held_out_far_below(text):
        said.append("training accuracy far above the held-out accuracy")
    return said


def _percent(value: str) -> float:
    number = float(value)
    return number * 100 if number <= 1 and "." in value else number


def _held_out_far_below(text: str) -> bool:
    """Accuracy given for training and for a held-out set, the held-out one far lower.

    At least one of the two clauses names the accuracy (the other may say only "test
    set only 50"), and the last figures given for each set are compared: a log's early
    epochs are not the comparison."""
    train = [found for found in _TRAIN_ACCURACY.finditer(text) if _in_range(found)]
    held_out = [found for found in _HELD_OUT_ACCURACY.finditer(text) if _in_range(found)]
    if not (train and held_out):
        return False
    last_train, last_held_out = train[-1], held_out[-1]
    named = any(_ACCURACY_WORD.search(found.group(1)) or text[found.end():found.end() + 2].strip()
                .startswith("%") for found in (last_train, last_held_out))
    return named and (_percent(last_train.group(2)) - _percent(last_held_out.group(2))
                      >= _GAP_POINTS)


def _in_range(found: re.Match[str]) -> bool:
    return 0 <= _percent(found.group(2)) <= 100
