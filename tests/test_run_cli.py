"""``torchdoctor run`` end to end, as a user types it: a real CLI process, a real patient."""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent
FAULTS = Path(__file__).parent / "zoo" / "faults"


def torchdoctor(*args: str, timeout: float = 180) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "torchdoctor", "run", *args],
                          capture_output=True, text=True, cwd=ROOT, timeout=timeout,
                          check=False)


@pytest.mark.slow
def test_json_names_the_confirmed_cause_and_place():
    done = torchdoctor("--no-tui", "--json", str(FAULTS / "linear_mismatch.py"), "2")
    assert done.returncode == 0, done.stderr
    outcome = json.loads(done.stdout)
    assert set(outcome) >= {"target", "error", "matches", "findings"}
    assert outcome["error"]["type"] == "RuntimeError"
    assert outcome["matches"][0]["entry"] == "shape.linear_in_features"
    confirmed = [f for f in outcome["findings"] if f["verdict"] == "confirmed"]
    assert [f["hypothesis"] for f in confirmed] == ["shape.linear_in_features/flatten_size"]
    location = confirmed[0]["location"]
    assert location["module"] == "fc"
    assert (Path(location["file"]).name, location["line"]) == ("linear_mismatch.py", 19)
    for finding in outcome["findings"]:
        assert set(finding) >= {"probe", "status", "summary", "hypothesis", "verdict",
                                "location", "facts"}
    assert outcome["stdout"] == "argv: ['2']\n"
    timings = outcome["timings"]
    phases = ["session_opened", "patient_ready", "script_ended", "diagnosed", "tested",
              "finished"]
    ends = [timings[phase] for phase in phases]
    assert ends == sorted(ends), timings
    assert len(timings["findings"]) >= len(outcome["findings"])
    assert "diagnosis_shown" not in timings, "--json prints one object, at the end"


@pytest.mark.slow
def test_text_says_what_and_where():
    done = torchdoctor("--no-tui", str(FAULTS / "linear_mismatch.py"))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "argv: []"
    assert lines[1].startswith("torchdoctor: linear_mismatch.py raised RuntimeError: mat1")
    assert any(line.startswith("confirmed: ") and "15376" in line for line in lines)
    assert any(line.startswith("  where: module fc") and "linear_mismatch.py:19" in line
               for line in lines)
    end = lines.index(next(line for line in lines if line.startswith("testing ")))
    ranked = "  1. Linear layer receives the wrong number of features (shape.linear_in_features)"
    assert lines[4:end] == [ranked], "the ranked causes, before any test"
    assert len(lines) < 18


def test_clean_script_says_so_and_passes_its_own_flags():
    done = torchdoctor("--no-tui", str(FAULTS / "clean_exit.py"), "--flag", "-x")
    assert done.returncode == 0, done.stderr
    assert "'--flag', '-x']" in done.stdout
    assert done.stdout.rstrip().endswith("clean_exit.py finished without an exception")


def test_missing_script_is_a_usage_error():
    done = torchdoctor("--no-tui", "no_such_train.py")
    assert done.returncode == 2
    assert done.stderr.strip() == "torchdoctor run: no_such_train.py: no such script"
    assert "Traceback" not in done.stderr


def test_sys_exit_is_reported_as_an_exit_code():
    done = torchdoctor("--no-tui", str(FAULTS / "exits_three.py"))
    assert done.returncode == 1
    assert "exits_three.py exited with code 3 (sys.exit)" in done.stdout


def test_a_segfault_is_reported_without_a_torchdoctor_traceback():
    done = torchdoctor("--no-tui", "--json", str(FAULTS / "segfault.py"))
    assert done.returncode == 1
    outcome = json.loads(done.stdout)
    assert (outcome["exited"], outcome["signal"]) == ("died", "SIGSEGV")
    assert "reading address zero" in outcome["error"]["message"]
    assert "Traceback" not in done.stderr


def test_only_limits_the_probes_that_test_hypotheses(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "torchdoctor", "run", "--no-tui", "--json", "--no-session",
         "--only", "census", str(ROOT / "tests/zoo/errors/embedding_index.py")],
        capture_output=True, text=True, timeout=240, cwd=tmp_path, check=False)
    findings = json.loads(done.stdout)["findings"]
    assert findings and {f["probe"] for f in findings} == {"census"}
    unknown = subprocess.run(
        [sys.executable, "-m", "torchdoctor", "run", "--only", "nope", "x.py"],
        capture_output=True, text=True, timeout=60, cwd=tmp_path, check=False)
    assert unknown.returncode == 2 and "no probe named nope" in unknown.stderr


# NumPy's float64 data into a float32 weight. The first run marks STATE/ran; every later run
# (the replay under the recorder, the repro) waits for STATE/go before it goes on.
WAITS_ON_ITS_REPLAY = """\
import os, sys, time
import numpy as np
import torch

state = sys.argv[1]
if os.path.exists(os.path.join(state, "ran")):
    deadline = time.monotonic() + 120
    while not os.path.exists(os.path.join(state, "go")) and time.monotonic() < deadline:
        time.sleep(0.05)
open(os.path.join(state, "ran"), "w").close()
features = torch.from_numpy(np.random.normal(0, 1, (10, 2)))
weight = torch.randn(2, 1)
print(torch.mm(features, weight))
"""


@pytest.mark.slow
def test_the_diagnosis_is_shown_before_the_failing_run_is_replayed(tmp_path):
    """The ranked causes are printed while the replay waits: they do not wait for probes."""
    script, state = tmp_path / "mixed.py", tmp_path / "state"
    script.write_text(WAITS_ON_ITS_REPLAY)
    state.mkdir()
    process = subprocess.Popen(
        [sys.executable, "-m", "torchdoctor", "run", "--no-tui", str(script), str(state)],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=ROOT)
    lines: queue.Queue = queue.Queue()

    def read() -> None:
        for line in process.stdout:
            lines.put(line.rstrip("\n"))
        lines.put(None)

    threading.Thread(target=read, daemon=True).start()
    before_go: list[str] = []
    try:
        line = ""
        while line is not None and not line.startswith("testing "):
            line = lines.get(timeout=150)
            before_go.append(line)
        assert before_go[-1] is not None, f"the run ended before showing a verdict: {before_go}"
        assert process.poll() is None
    finally:
        (state / "go").touch()
        process.wait(timeout=240)
    after_go = list(iter(lambda: lines.get(timeout=10), None))
    assert before_go[0].startswith("torchdoctor: mixed.py raised RuntimeError: expected m1"
                                   " and m2 to have the same dtype")
    assert before_go[2] == "likely causes, ranked from the traceback:"
    assert "(dtype.float64_vs_float32)" in before_go[3]
    assert not [line for line in before_go if line.startswith(("confirmed", "  rejected"))]
    confirmed = [line for line in after_go if line.startswith("confirmed: ")]
    assert confirmed and "float64" in confirmed[0], after_go
    assert any(line.startswith("  fix at: mixed.py:11: features = torch.from_numpy(")
               for line in after_go), after_go
