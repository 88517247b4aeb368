"""The knowledge base stays true to the installed torch.

Every entry's ``example`` is run for real and the exception it raises must
be matched back to that same entry as the top result; every older wording
in ``messages`` must rank its entry first as text; every
``counter_example`` must not rank its entry first.

All examples run in ONE subprocess (one torch import, each example in its
own namespace under try/except), because importing torch per example would
cost a second each. Warnings are turned into errors so that examples whose
symptom is a UserWarning (loss target-size broadcasting) raise too.
"""

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from torchdoctor.knowledge import load_knowledge
from torchdoctor.match import diagnose

ROOT = Path(__file__).resolve().parents[1]
KB = load_knowledge(include_user=False, use_cache=False, report=False)

RUNNER = textwrap.dedent('''
    import json, signal, sys, traceback, warnings
    import torch

    def _timeout(signum, frame):
        raise TimeoutError("example ran longer than its time limit")

    signal.signal(signal.SIGALRM, _timeout)
    results = {}
    for key, source in json.load(sys.stdin).items():
        namespace = {"__name__": "__main__"}
        signal.alarm(30)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                exec(compile(source, "<example " + key + ">", "exec"), namespace)
            results[key] = None
        except BaseException:
            results[key] = traceback.format_exc()
        finally:
            signal.alarm(0)
    results["__cuda__"] = torch.cuda.is_available()
    print(json.dumps(results))
''')

# Raised by torch when an example needs a GPU that this machine lacks.
NO_CUDA_SIGNS = ("Torch not compiled with CUDA enabled", "Found no NVIDIA driver",
                 "No CUDA GPUs are available", "CUDA driver initialization failed")


def _run_examples() -> dict:
    sources = {}
    for entry in KB.entries:
        if entry.example:
            sources[f"{entry.id}:example"] = entry.example
        if entry.counter_example:
            sources[f"{entry.id}:counter"] = entry.counter_example
    if not sources:
        return {}
    result = subprocess.run([sys.executable, "-c", RUNNER], input=json.dumps(sources),
                            capture_output=True, text=True, timeout=600, cwd=ROOT, check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def raised() -> dict:
    return _run_examples()


EXAMPLE_IDS = [entry.id for entry in KB.entries if entry.example]
COUNTER_IDS = [entry.id for entry in KB.entries if entry.counter_example]
MESSAGE_CASES = [(entry.id, index) for entry in KB.entries
                 for index in range(len(entry.messages))]


def _top(text: str) -> list[str]:
    return [match.entry.id for match in diagnose(text, KB).matches]


def test_the_shipped_knowledge_base_has_examples():
    assert len(EXAMPLE_IDS) >= 1


@pytest.mark.slow
@pytest.mark.parametrize("entry_id", EXAMPLE_IDS)
def test_example_is_matched_back_to_its_entry(entry_id, raised):
    text = raised[f"{entry_id}:example"]
    assert text is not None, f"the example of {entry_id} did not raise"
    if not raised["__cuda__"] and any(sign in text for sign in NO_CUDA_SIGNS):
        assert KB.by_id[entry_id].messages, f"{entry_id} needs CUDA and has no messages to test"
        pytest.skip("the example needs CUDA; its messages are tested as text")
    ranked = _top(text)
    assert ranked, f"nothing matched the example's error:\n{text[-1500:]}"
    assert ranked[0] == entry_id, f"ranked {ranked[:3]} for:\n{text[-1500:]}"


@pytest.mark.parametrize(("entry_id", "index"), MESSAGE_CASES)
def test_older_wording_ranks_its_entry_first(entry_id, index):
    entry = KB.by_id[entry_id]
    message = entry.messages[index]
    types = [p.type for p in entry.patterns if p.type and p.compiled.search(message)]
    text = f"{types[0]}: {message}" if types else message
    ranked = _top(text)
    assert entry_id in ranked, f"{message!r} did not match {entry_id}"
    assert ranked[0] == entry_id, f"{message!r} ranked {ranked[:3]}"


@pytest.mark.slow
@pytest.mark.parametrize("entry_id", COUNTER_IDS)
def test_counter_example_does_not_rank_its_entry_first(entry_id, raised):
    text = raised[f"{entry_id}:counter"]
    ranked = _top(text) if text else []  # a near miss that raises nothing ranks nothing
    assert not ranked or ranked[0] != entry_id, f"{entry_id} ranked first for:\n{text[-1500:]}"
