"""``torchdoctor run`` end to end, as a user types it: a real CLI process, a real patient."""

from __future__ import annotations

import json
import subprocess
import sys
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
    assert len(lines) < 15


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
