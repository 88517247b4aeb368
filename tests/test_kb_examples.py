"""The knowledge base stays true to the installed torch.

Every entry's ``example`` is run for real and the exception it raises must
be matched back to that same entry as the top result; every older wording
in ``messages`` must rank its entry first as text; every
``counter_example`` must not rank its entry first.

All examples run from ONE subprocess that imports torch once and forks a
child per example: a second per torch import is saved, yet each example
starts from a clean state (one may set a default device, another a
multiprocessing start method). A child runs the example as a real script
(``runpy.run_path`` as ``__main__``), so classes and spawn workers behave as
in ``python example.py``. An example that raises nothing is run again with
warnings turned into errors, so that examples whose symptom is a
UserWarning (loss target-size broadcasting) raise too.
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
    import json, os, runpy, select, signal, sys, tempfile, time, traceback, warnings
    import torch

    def run_example(path):
        for strict in (False, True):
            try:
                with warnings.catch_warnings():
                    if strict:
                        warnings.simplefilter("error")
                    runpy.run_path(path, run_name="__main__")
            except BaseException:
                return traceback.format_exc()
        return None

    def in_child(path, limit):
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(read_end)
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 1)
            os.dup2(devnull, 2)
            with os.fdopen(write_end, "w") as out:
                json.dump(run_example(path), out)
            os._exit(0)
        os.close(write_end)
        chunks, deadline = [], time.monotonic() + limit
        with os.fdopen(read_end) as pipe:
            while select.select([pipe], [], [], max(deadline - time.monotonic(), 0))[0]:
                chunk = os.read(pipe.fileno(), 65536)
                if not chunk:
                    break
                chunks.append(chunk)
            else:
                os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        text = b"".join(chunks).decode()
        return json.loads(text) if text else "TimeoutError: the example did not finish"

    results = {}
    with tempfile.TemporaryDirectory() as folder:
        for key, source in json.load(sys.stdin).items():
            path = os.path.join(folder, key.replace(".", "_").replace(":", "_") + ".py")
            with open(path, "w") as handle:
                handle.write(source)
            results[key] = in_child(path, 60)
    results["__cuda__"] = torch.cuda.is_available()
    print(json.dumps(results))
''')

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
    entry = KB.by_id[entry_id]
    needs_gpu = entry.example_requires in ("cuda", "multi_gpu")
    if entry.example_requires and not (needs_gpu and raised["__cuda__"]):
        assert entry.messages, f"{entry_id} needs {entry.example_requires} and has no messages"
        pytest.skip(f"the example needs {entry.example_requires}; its messages are tested as text")
    text = raised[f"{entry_id}:example"]
    assert text is not None, f"the example of {entry_id} did not raise"
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


# --- raising sites ------------------------------------------------------------------

SITE_CASES = [(entry.id, site) for entry in KB.entries for site in entry.raised_in]


def _installed_function(site: str):
    """The function a site names in the installed torch's source, or None where this
    torch no longer has it (a site of older releases)."""
    import ast
    import importlib.util

    path, name = site.rsplit(":", 1)
    package = Path(importlib.util.find_spec("torch").origin).parent.parent
    source = package / path
    if not source.is_file():
        return None
    tree = ast.parse(source.read_text(encoding="utf-8"))
    return next((node for node in ast.walk(tree)
                 if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
                 and node.name == name), None)


def _raised_texts(function) -> list[str]:
    """'Type: message' of each user-facing raise in a function (internal
    AssertionError invariants left out), an f-string's values written as 1."""
    import ast

    texts = []
    for node in ast.walk(function):
        if not (isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call)):
            continue
        name = getattr(node.exc.func, "id", None) or getattr(node.exc.func, "attr", "")
        if name == "AssertionError":
            continue
        argument = node.exc.args[0] if node.exc.args else None
        if isinstance(argument, ast.Constant) and isinstance(argument.value, str):
            texts.append(f"{name}: {argument.value}")
        elif isinstance(argument, ast.JoinedStr):
            texts.append(f"{name}: " + "".join(
                part.value if isinstance(part, ast.Constant) else "1" for part in argument.values))
        else:
            texts.append(f"{name}: <a message built at run time>")
    return texts


def test_raising_sites_belong_to_one_entry_each():
    sites = [site for _, site in SITE_CASES]
    assert len(sites) == len(set(sites))


@pytest.mark.parametrize("entry_id", sorted({entry_id for entry_id, _ in SITE_CASES}))
def test_every_raise_at_an_entrys_raising_site_is_that_entrys_error(entry_id):
    entry = KB.by_id[entry_id]
    found = {site: _installed_function(site) for site in entry.raised_in}
    # Sites of older releases may be gone; the installed torch must still have one.
    assert any(found.values()), f"none of {entry.raised_in} is in the installed torch"
    for site, function in found.items():
        if function is None:
            continue
        texts = _raised_texts(function)
        assert texts, f"{site} raises nothing"
        for text in texts:
            assert _top(text)[:1] == [entry_id], f"{site} raises {text!r}, not {entry_id}'s"
