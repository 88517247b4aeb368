"""`torchdoctor check` on the silent-bug zoo, run as a user would: the real CLI, real patients.

Each bug must fail its check and confirm the knowledge-base hypothesis that
names it, pointing at the module or the ``# BUG`` line; the healthy harnesses
must come back with no confirmed hypothesis and exit 0. Most cases run only
the checks that test their bug (``--only``) to keep the suite fast; one bug and
one healthy harness get the whole default checkup.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
ZOO = ROOT / "tests" / "zoo" / "silent"


def check(name: str, *options: str, timeout: float = 240) -> tuple[int, dict]:
    target = f"{(ZOO / f'{name}.py').relative_to(ROOT)}:harness"
    proc = subprocess.run([sys.executable, "-m", "torchdoctor", "check", target, "--json",
                           *options], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout, check=False)
    assert proc.returncode in (0, 1), proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def bug_line(name: str) -> int:
    lines = (ZOO / f"{name}.py").read_text().splitlines()
    return next(number for number, line in enumerate(lines, 1) if "# BUG" in line)


def confirmed(report: dict) -> dict[str, dict]:
    """probe → its finding, for the findings that confirm a hypothesis."""
    return {f["probe"]: f for f in report["findings"] if f["verdict"] == "confirmed"}


# harness, checks to run, the failing check, the hypotheses that name the bug,
# and where the finding must point: "bug" for the # BUG line, else a module path.
BUGS = [
    ("missing_step", "weights_update", "weights_update",
     {"training.loss_constant/step_not_called"}, "bug"),
    ("missing_zero_grad", "loop_order", "loop_order",
     {"training.missing_zero_grad/no_zero_grad"}, "bug"),
    ("softmax_before_ce", "output_head", "output_head",
     {"training.softmax_into_cross_entropy/double_softmax"}, "bug"),
    ("logits_into_bce", "output_head", "output_head",
     {"numerics.bce_input_range/logits_into_bce"}, "head"),
    ("detached_encoder", "grad_flow", "grad_flow",
     {"training.detached_graph/graph_cut"}, "bug"),
    ("params_not_in_optimizer", "weights_update", "weights_update",
     {"training.loss_constant/params_not_in_optimizer"}, "head"),
    ("lr_explodes", "grad_flow", "grad_flow",
     {"numerics.exploding_gradients/lr_too_high"}, "Linear(8→1)"),
    ("zero_grad_before_step", "loop_order", "loop_order",
     {"training.missing_zero_grad/zero_grad_wrong_place"}, "bug"),
    ("log_zero_loss", "nonfinite_steps", "nonfinite_steps",
     {"numerics.nan_loss/unstable_op"}, "bug"),
    ("eval_mode_left_on", "loop_order", "loop_order",
     {"training.eval_mode_left_on/eval_not_undone"}, "bug"),
    ("loss_history_leak", "memory_growth", "memory_growth",
     {"memory.growing/tensors_kept_with_graph"}, "bug"),
    ("lambda_spawn_loader", "dataloader", "dataloader",
     {"dataloader.cannot_pickle_local/lambda_with_spawn"}, "bug"),
    ("iterable_not_sharded", "dataloader", "dataloader",
     {"dataloader.iterable_dataset_not_sharded/stream_not_split_by_worker"}, "bug"),
]


@pytest.mark.parametrize(("name", "only", "probe", "hypotheses", "where"), BUGS,
                         ids=[bug[0] for bug in BUGS])
def test_check_confirms_the_hypothesis_that_names_the_bug(name, only, probe, hypotheses,
                                                          where):
    status, report = check(name, "--only", only, "--steps", "10")
    assert status == 1
    assert report["target"].endswith(f"{name}.py:harness")
    finding = next(f for f in report["findings"] if f["probe"] == probe)
    assert finding["status"] == "fail", finding["summary"]
    assert finding["verdict"] == "confirmed", finding
    assert finding["hypothesis"] in hypotheses
    location = finding["location"]
    assert location, f"{name}: the finding points nowhere"
    if where == "bug":
        assert Path(location["file"]).resolve() == ZOO / f"{name}.py"
        assert location["line"] == bug_line(name)
    else:
        assert location["module"] == where


def test_exploding_lr_names_the_first_non_finite_step_and_op():
    """The learning rate lives in the harness, not the model: the finding names the step and op."""
    status, report = check("lr_explodes", "--only", "nonfinite_steps")
    assert status == 1
    finding = confirmed(report)["nonfinite_steps"]
    assert finding["hypothesis"] in {"numerics.nan_loss/lr_too_high",
                                     "training.lr_too_high/diverging_updates"}
    assert finding["facts"]["what"] == "loss" and finding["facts"]["first_bad_step"] > 0
    history = finding["facts"]["grad_norm_history"]
    assert history[1] > history[0]  # the norm grows before it overflows
    assert finding["location"]["op"] == "mse_loss"


def test_a_hanging_dataset_is_the_dataset_not_the_workers():
    status, report = check("hanging_dataset", "--only", "dataloader", "--timeout", "60")
    assert status == 1
    finding = confirmed(report)["dataloader"]
    assert finding["hypothesis"] == "dataloader.hang/dataset_blocks"
    assert finding["facts"]["hang"] is True and finding["facts"]["hang_num_workers"] == 0


@pytest.mark.slow
def test_full_checkup_of_a_bug_confirms_only_what_the_bug_explains():
    status, report = check("missing_step")
    assert status == 1
    found = confirmed(report)
    assert found["weights_update"]["hypothesis"] == "training.loss_constant/step_not_called"
    # One cause per checkup: the batch it cannot fit is what the missing step produces.
    overfit = next(f for f in report["findings"] if f["probe"] == "overfit_batch")
    assert overfit["hypothesis"] == "training.cannot_overfit_batch/optimisation_bug"
    assert overfit["verdict"] == "inconclusive"
    assert "training.loss_constant/step_not_called is confirmed" in overfit["reason"]
    # Nothing about gradients, numerics or memory: those checks pass on this harness.
    assert set(found) <= {"weights_update", "loop_order"}


@pytest.mark.slow
def test_full_checkup_of_a_healthy_harness_is_clean():
    status, report = check("healthy_mlp")
    assert status == 0
    assert len(report["findings"]) >= 12  # every default check ran, the loader's too
    assert not confirmed(report)
    assert {f["status"] for f in report["findings"]} <= {"pass", "inconclusive"}


@pytest.mark.parametrize("name", ["healthy_cnn", "healthy_transformer"])
def test_other_healthy_harnesses_raise_no_false_alarm(name):
    only = ("loss_at_init,output_head,grad_flow,weights_update,loop_order,nonfinite_steps,"
            "memory_growth")
    status, report = check(name, "--only", only, "--steps", "8")
    assert status == 0
    assert [f["probe"] for f in report["findings"]] == only.split(",")
    assert not confirmed(report)
    assert {f["status"] for f in report["findings"]} == {"pass"}


def test_a_diverging_learning_rate_is_never_called_too_low():
    status, report = check("lr_explodes", "--only", "lr_range")
    assert status == 1
    finding = confirmed(report)["lr_range"]
    assert finding["hypothesis"].startswith("training.lr_too_high/")


def test_a_model_that_learns_slowly_is_not_called_broken():
    """hanging_dataset's model is healthy: SGD on it learns one batch, just not to zero in time."""
    status, report = check("hanging_dataset", "--only", "overfit_batch")
    assert status == 0
    (finding,) = report["findings"]
    assert finding["status"] == "warn", finding["summary"]
    assert finding["facts"]["steps_to_fit"] <= finding["facts"]["patience_steps"]
    assert finding["verdict"] != "confirmed"


def test_a_statement_without_its_object_reads_as_a_sentence():
    """check reproduces no pickling error, so nothing fills {object}: no '?' reaches the user."""
    target = f"{(ZOO / 'lambda_spawn_loader.py').relative_to(ROOT)}:harness"
    proc = subprocess.run([sys.executable, "-m", "torchdoctor", "check", target, "--only",
                           "dataloader"], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          check=False)
    assert "confirms dataloader.cannot_pickle_local/lambda_with_spawn" in proc.stdout
    assert "The dataset holds a lambda or nested function;" in proc.stdout
    assert "?" not in proc.stdout


def test_one_error_that_stops_every_check_is_told_once():
    """BCELoss raises on logits in every forward: the checks after the first say 'the same error'."""
    target = f"{(ZOO / 'logits_into_bce.py').relative_to(ROOT)}:harness"
    proc = subprocess.run([sys.executable, "-m", "torchdoctor", "check", target, "--only",
                           "loss_at_init,grad_flow,weights_update"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120, check=False)
    lines = proc.stdout.splitlines()
    assert sum("all elements of input should be between 0 and 1" in line for line in lines) == 1
    assert any(line.startswith("✗ grad_flow") and "the same error as loss_at_init" in line
               for line in lines)
    assert "3 checks: 0 failed, 0 warned, 3 could not run" in proc.stdout


def test_modules_left_in_eval_mode_are_named_with_their_kind():
    status, report = check("eval_mode_left_on", "--only", "loop_order")
    assert status == 1
    summary = report["findings"][0]["summary"]
    assert "(BatchNorm1d)" in summary and "(Dropout)" in summary, summary
