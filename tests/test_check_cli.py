"""``torchdoctor check`` end to end: a real patient process on the zoo harnesses."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from torchdoctor.investigation.checkup import CHECK_ORDER, Check, exit_status, judge, plan
from torchdoctor.knowledge import Entry, Fix, Hypothesis, KnowledgeBase

ROOT = Path(__file__).resolve().parent.parent
ZOO = "tests/zoo/silent"


def check(*args: str, timeout: float = 240) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "torchdoctor", "check", *args],
                          check=False, cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout)


@pytest.mark.slow
def test_healthy_cnn_full_checkup_passes_as_json():
    done = check(f"{ZOO}/healthy_cnn.py:harness", "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["target"] == f"{ZOO}/healthy_cnn.py:harness"
    probes = [f["probe"] for f in report["findings"]]
    assert probes == [p for p in CHECK_ORDER if p in probes]
    assert "overfit_batch" in probes and "dataloader" not in probes
    assert {f["status"] for f in report["findings"]} == {"pass"}
    assert "running overfit_batch (up to 20 s)…" in done.stderr


def test_missing_step_fails_with_exit_status_one():
    done = check(f"{ZOO}/missing_step.py:harness", "--only", "weights_update,loop_order")
    assert done.returncode == 1, done.stderr
    lines = done.stdout.splitlines()
    assert any(line.startswith("✗ weights_update") for line in lines)
    assert any(line.startswith("⚠ loop_order") for line in lines)
    assert "missing_step.py:11" in done.stdout


@pytest.mark.slow
def test_a_hanging_check_is_reported_and_the_checkup_goes_on():
    # --timeout bounds loading the harness too: long enough for a loaded machine to load
    # it, far shorter than the dataset's 120 s stall.
    done = check(f"{ZOO}/hanging_dataset.py:harness", "--only", "dataloader,weights_update",
                 "--timeout", "20", "--json")
    findings = {f["probe"]: f for f in json.loads(done.stdout)["findings"]}
    assert findings["dataloader"]["status"] == "error"
    assert "timed out" in findings["dataloader"]["summary"]
    assert findings["weights_update"]["status"] == "pass"
    assert done.returncode == 3  # a check that could not run: the checkup did not pass


@pytest.mark.parametrize(("args", "message"), [
    (("tests/zoo/silent/nothing_here.py:harness",), "not found"),
    ((f"{ZOO}/healthy_cnn.py:no_such_name",), "no 'no_such_name'"),
    (("model.py",), "not a harness target"),
    ((f"{ZOO}/healthy_cnn.py:harness", "--only", "grad_flow,bogus"), "unknown check bogus"),
    ((f"{ZOO}/healthy_cnn.py:harness", "--steps", "0"), "--steps"),
])
def test_usage_errors_exit_two_with_one_clear_line(args, message):
    done = check(*args)
    assert done.returncode == 2
    assert message in done.stderr
    assert "Traceback" not in done.stderr


def test_plan_skips_the_dataloader_without_a_loader_and_passes_steps():
    planned = plan({"model": "Net"}, steps=7)
    names = [n for n, _ in planned]
    assert "dataloader" not in names and names[0] == "census"
    assert dict(planned)["memory_growth"] == {"steps": 7}
    assert [n for n, _ in plan({"loader": "DataLoader"}, only=["overfit_batch", "grad_flow"])] \
        == ["grad_flow", "overfit_batch"]


def _kb() -> KnowledgeBase:
    hypothesis = Hypothesis(
        id="no_step", statement="optimizer.step() is never called, so weights never change.",
        probe="weights_update", confirm=[{"fact": "step_called", "eq": False}],
        reject=[{"status": "pass"}], fix=Fix(summary="Call optimizer.step() after backward."))
    entry = Entry(id="training.weights_frozen", title="Weights do not change",
                  category="training", symptoms=[], hypotheses=[hypothesis])
    return KnowledgeBase(entries=[entry])


def test_a_failing_check_confirms_the_knowledge_base_hypothesis():
    result = {"status": "fail", "summary": "optimizer.step() is never called",
              "facts": {"step_called": False}, "location": None}
    judged = judge("weights_update", result, _kb())
    assert judged.finding.hypothesis == "training.weights_frozen/no_step"
    assert judged.finding.verdict == "confirmed"
    assert judged.hypothesis.fix.summary.startswith("Call optimizer.step()")
    assert exit_status([judged]) == 1


def test_a_passing_check_rejects_the_hypothesis():
    result = {"status": "pass", "summary": "all changed", "facts": {"step_called": True},
              "location": None}
    judged = judge("weights_update", result, _kb())
    assert (judged.finding.hypothesis, judged.finding.verdict) == \
        ("training.weights_frozen/no_step", "rejected")
    assert judged.hypothesis is None
    assert exit_status([judged, Check(judged.finding)]) == 0


def test_an_error_probe_on_a_crashing_harness_confirms_the_entry_of_that_error():
    done = check("tests/zoo/errors/flatten_linear.py:harness", "--only", "trace", "--json")
    findings = json.loads(done.stdout)["findings"]
    assert [f["hypothesis"] for f in findings] == ["shape.linear_in_features/flatten_size"]
    assert findings[0]["verdict"] == "confirmed"
    text = check("tests/zoo/errors/flatten_linear.py:harness", "--only", "trace").stdout
    assert "emits 57600 features per sample" in text and "?" not in text
