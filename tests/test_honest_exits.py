"""Exit status, time limits and messages that tell the truth about what happened.

A checkup whose checks could not run does not pass; a time limit says which
one fired; the user's own traceback is shown whole, whatever their exception
does; the output before a crash is kept and a cut says so; a very deep stack
is handled in time linear in its depth and shown cut, with the cut counted.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from torchdoctor.commands.check import EXIT_INCOMPLETE
from torchdoctor.patient.client import DEFAULT_TIMEOUTS, PatientClient

ROOT = Path(__file__).resolve().parents[1]
FAULTS = "tests/zoo/faults"


def torchdoctor(*args: str, timeout: float = 240) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "torchdoctor", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout, check=False)


# ---------------------------------------------------------------- exit status and limits


@pytest.mark.slow
def test_checks_that_could_not_run_do_not_pass():
    done = torchdoctor("check", f"{FAULTS}/harness_broken_forward.py:make")
    assert "could not run" in done.stdout
    assert done.returncode == EXIT_INCOMPLETE != 0


@pytest.mark.slow
def test_loading_a_harness_obeys_timeout_and_says_so():
    done = torchdoctor("check", f"{FAULTS}/harness_spawns_and_hangs.py:make",
                       "--timeout", "3", timeout=120)
    assert "within 3 s" in done.stderr
    assert "check --timeout" in done.stderr
    assert done.returncode == 2


def test_the_users_script_has_no_time_limit_unless_one_is_set():
    from torchdoctor.cli import build_parser

    assert DEFAULT_TIMEOUTS["run_script"] is None
    assert build_parser("run").parse_args(["run", "train.py"]).timeout is None


@pytest.mark.slow
def test_run_timeout_says_which_limit_fired():
    done = torchdoctor("run", "--no-tui", "--no-session", "--timeout", "2",
                       f"{FAULTS}/sleeps_then_fails.py", "60")
    assert "within 2 s" in done.stdout
    assert "run --timeout" in done.stdout
    assert done.returncode == 1


@pytest.mark.slow
def test_a_script_runs_past_a_probe_budget_with_no_limit_of_its_own():
    client = PatientClient.start(budget=1)
    try:
        reply = client.run_script(str(ROOT / FAULTS / "sleeps_then_fails.py"), ["3"])
    finally:
        client.close()
    assert reply["error"]["message"] == "failed after 3 s of training"


def test_the_repro_verification_budget_is_settable():
    program = "from torchdoctor import repro; print(repro.DEFAULT_TIMEOUT)"
    done = subprocess.run([sys.executable, "-c", program], cwd=ROOT, capture_output=True,
                          text=True, timeout=60, check=True,
                          env={**os.environ, "TORCHDOCTOR_REPRO_TIMEOUT": "7.5"})
    assert done.stdout.strip() == "7.5"


# ---------------------------------------------------------------- the user's error, whole


@pytest.mark.slow
def test_a_harness_that_raises_shows_the_users_traceback():
    done = torchdoctor("check", f"{FAULTS}/harness_missing_checkpoint.py:make")
    assert done.returncode == 2
    assert "Traceback (most recent call last)" in done.stderr
    assert "in build_model" in done.stderr
    assert "FileNotFoundError" in done.stderr
    assert "torchdoctor/patient" not in done.stderr


@pytest.mark.slow
def test_check_json_reports_a_harness_that_raises():
    done = torchdoctor("check", f"{FAULTS}/harness_missing_checkpoint.py:make", "--json")
    assert done.returncode == 2
    report = json.loads(done.stdout)
    assert report["error"]["type"] == "FileNotFoundError"
    assert "in build_model" in report["error"]["traceback"]
    assert report["findings"] == []


def test_an_exception_whose_str_raises_keeps_its_type_and_place():
    with PatientClient.start() as client:
        reply = client.run_script(str(ROOT / FAULTS / "unprintable_error.py"))
    assert reply["exited"] == "raised"
    assert reply["error"]["type"] == "ShapeReport"
    assert reply["error"]["message"] == "<exception str() failed>"
    assert 'unprintable_error.py", line 7, in check' in reply["traceback"]


@pytest.mark.slow
def test_a_syntax_error_is_placed_without_a_function():
    done = torchdoctor("run", "--no-tui", "--no-session", f"{FAULTS}/syntax_error.py")
    assert "raised SyntaxError" in done.stdout
    assert "syntax_error.py:3" in done.stdout
    assert "None" not in done.stdout


@pytest.mark.slow
def test_the_output_before_a_segfault_is_kept():
    done = torchdoctor("run", "--no-tui", "--no-session", f"{FAULTS}/segfault_after_output.py")
    assert "killed by SIGSEGV" in done.stdout
    assert "step 2 loss 0.7\nsaving checkpoint\n" in done.stdout


@pytest.mark.slow
def test_output_cut_for_size_says_so():
    done = torchdoctor("run", "--no-tui", "--no-session", f"{FAULTS}/prints_megabytes.py")
    assert "last line of stdout" in done.stdout
    cut = re.search(r"torchdoctor: the script's stdout was cut: its first ([\d,]+) bytes"
                    r" are not shown", done.stderr)
    assert cut is not None, done.stderr[-2000:]
    assert int(cut.group(1).replace(",", "")) > 8_000_000


# ---------------------------------------------------------------- deep stacks


@pytest.mark.slow
def test_a_million_frames_deep_recursion_is_linear_and_cut():
    with PatientClient.start() as client:
        reply = client.run_script(str(ROOT / FAULTS / "deep_recursion.py"), timeout=60)
    text = reply["traceback"]
    assert reply["error"]["type"] == "RecursionError"
    assert 'deep_recursion.py", line 10, in <module>' in text
    dropped = re.search(r"\[\.\.\. skipping (\d+) frames", text)
    assert dropped is not None and int(dropped.group(1)) > 990_000
    assert text.count("\n") < 400
    assert text.rstrip().endswith("RecursionError: maximum recursion depth exceeded")
