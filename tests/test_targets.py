"""Target loading in-process: harness validation and live-object recovery from a failed script."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch
from torch import nn

from torchdoctor.patient import targets
from torchdoctor.patient.context import ProbeContext

FAULTS = Path(__file__).parent / "zoo" / "faults"


def good_parts(**changes):
    model = nn.Linear(4, 2)
    parts = {"model": model, "batch": (torch.ones(3, 4), torch.zeros(3, dtype=torch.long)),
             "loss_fn": nn.CrossEntropyLoss(),
             "optimizer": torch.optim.SGD(model.parameters(), lr=0.1)}
    parts.update(changes)
    return {k: v for k, v in parts.items() if v is not None}


def test_a_valid_harness_becomes_a_context():
    ctx = targets.context_from_parts(good_parts(num_classes=2, tag="kept"))
    assert isinstance(ctx, ProbeContext)
    assert ctx.source == "harness" and ctx.num_classes == 2
    assert ctx.inputs.shape == (3, 4)
    assert ctx.extras == {"tag": "kept"}
    assert ctx.loss(ctx.forward()).ndim == 0


@pytest.mark.parametrize(("parts", "message"), [
    (good_parts(model=None), "harness returned no 'model'"),
    (good_parts(batch=None), "harness returned no 'batch'"),
    (good_parts(model=lambda: nn.Linear(4, 2)),
     "'model' is a function, expected torch.nn.Module — did you forget to call it?"),
    (good_parts(batch=(torch.ones(1), torch.ones(1), torch.ones(1))),
     "'batch' is a tuple of 3 items"),
    (good_parts(batch=torch.ones(3)), "'batch' is a Tensor"),
    (good_parts(loss_fn=3), "'loss_fn' is a int, expected a callable"),
    (good_parts(optimizer="sgd"), "'optimizer' is a str, expected torch.optim.Optimizer"),
    (good_parts(train_step=1.5), "'train_step' is a float, expected a callable"),
    (good_parts(num_classes="10"), "'num_classes' is a str, expected an int"),
])
def test_a_malformed_harness_names_the_key(parts, message):
    with pytest.raises(targets.TargetError) as caught:
        targets.context_from_parts(parts)
    assert message in str(caught.value)


def test_harness_by_module_path(monkeypatch):
    monkeypatch.syspath_prepend(str(FAULTS))
    ctx = targets.load_harness("harness_good:make")
    assert type(ctx.model).__name__ == "Sequential" and ctx.num_classes == 3
    monkeypatch.delitem(sys.modules, "harness_good")


def test_failed_script_yields_the_model_its_inputs_and_training_parts():
    outcome = targets.run_script(str(FAULTS / "linear_mismatch.py"), ["2"])
    report, ctx = outcome.report, outcome.context
    assert report["exited"] == "raised" and report["exit_code"] == 1
    assert "mat1 and mat2 shapes cannot be multiplied (8x15376 and 3600x10)" in report[
        "traceback"]
    assert "torchdoctor" not in report["traceback"]
    assert type(ctx.model).__name__ == "SeqNet"
    # The model's own input, not the activation named ``x`` inside forward.
    assert ctx.inputs.shape == (8, 3, 64, 64)
    assert ctx.targets.shape == (8,) and ctx.targets.dtype == torch.long
    assert isinstance(ctx.loss_fn, nn.CrossEntropyLoss)
    assert isinstance(ctx.optimizer, torch.optim.SGD)
    assert ctx.source == "script" and ctx.error["type"] == "RuntimeError"
    assert report["found"]["inputs"] == "Tensor[8, 3, 64, 64] float32 cpu"
    with pytest.raises(RuntimeError, match="mat1 and mat2"):
        ctx.forward()  # the live objects reproduce the failure


def test_clean_script_reports_clean_with_python_semantics(capsys):
    outcome = targets.run_script(str(FAULTS / "clean_exit.py"), ["a", "--flag"])
    assert outcome.report == {"exited": "clean", "exit_code": 0, "traceback": None,
                              "error": None, "found": outcome.report["found"]}
    out = capsys.readouterr().out
    assert f"path0 {FAULTS}" in out
    assert f"argv ['{FAULTS / 'clean_exit.py'}', 'a', '--flag']" in out
    assert outcome.report["found"]["model"].startswith("Linear")


def test_the_recorder_is_removed_after_the_script():
    targets.run_script(str(FAULTS / "clean_exit.py"))
    recorder = targets.CallRecorder()
    with recorder:
        nn.Sequential(nn.Linear(2, 2), nn.ReLU())(torch.ones(1, 2))
        nn.MSELoss()(torch.ones(1), torch.zeros(1))
    assert type(recorder.model).__name__ == "Sequential"
    assert isinstance(recorder.loss, nn.MSELoss) and recorder.depth == 0
    nn.Linear(2, 2)(torch.ones(1, 2))
    assert type(recorder.model).__name__ == "Sequential"


def test_describe_is_short_and_safe():
    assert targets.describe(torch.zeros(2, 3, dtype=torch.float16)) == "Tensor[2, 3] float16 cpu"
    assert targets.describe(nn.Linear(2, 3)) == "Linear (9 parameters)"
