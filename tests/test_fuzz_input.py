"""Property-based fuzzing of the parser and the matcher: any text, a bounded time.

Texts are built from the pieces real pastes are made of (traceback headers, frame
lines, exception lines, log prefixes, control sequences, long runs of one character)
in any order and number, so the search reaches the shapes that hurt a backtracking
parser. Every example must parse without raising and be diagnosed within the
CPU bound; the message that comes back holds no control characters.
"""

from __future__ import annotations

import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from torchdoctor.knowledge import load_knowledge
from torchdoctor.match import diagnose
from torchdoctor.parse import parse_traceback

PIECES = [
    "Traceback (most recent call last):\n", '  File "train.py", line 7, in <module>\n',
    "    out = model(x)\n", "RuntimeError: ", "ValueError: ", "Error: ", "\n", " ", ":",
    "mat1 and mat2 shapes cannot be multiplied (64x57600 and 9216x128)",
    "Expected ", " but got ", "Assertion `t >= 0` failed.", "[rank0]: ", "2024-01-01 00:00:00 ",
    "The above exception was the direct cause of the following exception:\n",
    "UserWarning: ", "loss ", "nan", "10 classes", "epoch 3", "100%|", "----> 12 ",
    "Cell In[3], line 4\n", "\x1b[31m", "\x1b]8;;http://x\x1b\\", "\x1b]52;c;eA==\x07", "\x9b",
    "\x00", "\r", "C:\\Users\\ada\\", "/home/ada/", "0x7f3a", "é", "```", "**", "&gt;",
    "ERROR:root:", "2024-01-01 00:00:00 - trainer - ERROR - ", "[rank 1]: ", "ValueError(",
    "“", "”", "，改了", "Error:-", " raised \"", "| 1/11 [00:01<00:13,  1.33s/it]",
]
RUNS = st.tuples(st.sampled_from(["a", "1", " ", ":", "(", "[", "/", ".", "-", "e", "\\"]),
                 st.integers(min_value=1, max_value=20_000)).map(lambda run: run[0] * run[1])
TEXTS = st.lists(st.one_of(st.sampled_from(PIECES), RUNS, st.text(max_size=40)),
                 max_size=60).map("".join)
# The per-case bound is on CPU time (see cpu_bounded): a wall-clock deadline would
# fail whenever the machine is busy, and would not tell a slow pass from a loaded one.
CPU_BOUND = 2.0
FUZZ = settings(max_examples=60, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@pytest.fixture(scope="module")
def kb(tmp_path_factory):
    return load_knowledge(include_user=False, use_cache=False)


def cpu_bounded(work):
    start = time.process_time()
    result = work()
    elapsed = time.process_time() - start
    assert elapsed < CPU_BOUND, f"{elapsed:.2f} s of CPU"
    return result


@FUZZ
@given(text=TEXTS)
def test_the_parser_takes_any_text(text):
    parsed = cpu_bounded(lambda: parse_traceback(text))
    if parsed is not None:
        assert isinstance(parsed.message, str)
        assert "\x1b" not in parsed.message and "\x9b" not in parsed.message


@FUZZ
@given(text=TEXTS)
def test_the_matcher_takes_any_text(kb, text):
    diagnosis = cpu_bounded(lambda: diagnose(text, kb))
    scores = [match.score for match in diagnosis.matches]
    assert scores == sorted(scores, reverse=True)


def test_a_traceback_beside_long_runs_of_one_character_parses_in_bounded_time(kb):
    """A line-start search run from inside a 20,000-character word read the word again
    from every position: this shape took 17 s of CPU at 600 kB."""
    block = ('Traceback (most recent call last):\n  File "train.py", line 7, in <module>\n'
             '    out = model(x)\nRuntimeError: loss nan ' + "a" * 20_000 + " " * 20_000
             + "1" * 20_000)
    diagnosis = cpu_bounded(lambda: diagnose(block * 10, kb))
    assert diagnosis.error is not None and diagnosis.error.type == "RuntimeError"
