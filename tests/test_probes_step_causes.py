"""Causes that only the harness's own training step shows, each with the line to fix.

Every harness here is a small program written to a file, loaded the way the
patient loads one (``load_harness``), so the lines the probes name are lines of
a user's file.
"""

from __future__ import annotations

import textwrap

from torchdoctor.patient.probes import run_probe
from torchdoctor.patient.targets import load_harness

HEAD = """\
import torch
import torch.nn.functional as F
from torch import nn

"""


def harness(tmp_path, body: str, name: str = "harness") -> tuple:
    path = tmp_path / f"{name}.py"
    path.write_text(HEAD + textwrap.dedent(body))
    return load_harness(f"{path}:make"), path


def line_of(path, text: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if text in line)


def test_an_optimizer_built_before_the_model_changed_is_fixed_where_it_was_built(tmp_path):
    ctx, path = harness(tmp_path, """\
        def make():
            model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)  # built here
            model[2] = nn.Linear(16, 3)
            return {"model": model, "loss_fn": nn.CrossEntropyLoss(), "optimizer": optimizer,
                    "batch": (torch.randn(4, 8), torch.tensor([0, 1, 2, 0]))}
        """)
    result = run_probe("weights_update", ctx, {})
    assert result["status"] == "fail" and result["facts"]["not_in_optimizer_count"] == 2
    assert result["fix_at"]["line"] == line_of(path, "# built here")
    assert result["facts"]["optimizer_built_at"]["file"] == str(path)


def test_eval_left_on_by_a_helper_is_fixed_at_the_steps_call_to_it(tmp_path):
    ctx, path = harness(tmp_path, """\
        def validate(model, batch):
            model.body.eval()  # switched here
            with torch.no_grad():
                return model(batch[0]).argmax(1)

        def step(model, batch, loss_fn, optimizer):
            optimizer.zero_grad()
            loss = loss_fn(model(batch[0]), batch[1])
            loss.backward()
            optimizer.step()
            validate(model, batch)  # called here
            return loss

        def make():
            model = nn.Module()
            model.body = nn.Sequential(nn.Linear(8, 16), nn.BatchNorm1d(16), nn.Linear(16, 3))
            model.forward = lambda x: model.body(x)
            return {"model": model, "loss_fn": nn.CrossEntropyLoss(), "train_step": step,
                    "optimizer": torch.optim.SGD(model.parameters(), lr=0.1),
                    "batch": (torch.randn(4, 8), torch.tensor([0, 1, 2, 0]))}
        """)
    result = run_probe("loop_order", ctx, {"steps": 3})
    assert result["status"] == "fail" and result["facts"]["eval_mode_during_training"]
    assert result["location"]["line"] == line_of(path, "# switched here")
    assert result["fix_at"]["line"] == line_of(path, "# called here")


def test_a_step_that_encodes_under_no_grad_cuts_the_encoder_at_the_with_line(tmp_path):
    ctx, path = harness(tmp_path, """\
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.encoder = nn.Linear(8, 16)
                self.head = nn.Linear(16, 3)

            def forward(self, x):
                return self.head(self.encoder(x))

        def step(model, batch, loss_fn, optimizer):
            with torch.no_grad():  # cut here
                features = model.encoder(batch[0])
            loss = loss_fn(model.head(features), batch[1])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            return loss

        def make():
            model = Net()
            return {"model": model, "loss_fn": nn.CrossEntropyLoss(), "train_step": step,
                    "optimizer": torch.optim.SGD(model.parameters(), lr=0.1),
                    "batch": (torch.randn(4, 8), torch.tensor([0, 1, 2, 0]))}
        """)
    result = run_probe("grad_flow", ctx, {})
    assert result["status"] == "fail"
    assert sorted(result["facts"]["no_grad_params"]) == ["encoder.bias", "encoder.weight"]
    assert result["fix_at"]["line"] == line_of(path, "# cut here")
    assert result["facts"]["graph_cuts"][0]["op"] == "no_grad"


def test_a_relu_on_the_last_layer_keeps_every_sigmoid_probability_above_a_half(tmp_path):
    ctx, path = harness(tmp_path, """\
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(8, 1)

            def forward(self, x):
                return F.relu(self.fc(x)).squeeze(1)  # clamped here

        def make():
            return {"model": Net(), "batch": (torch.randn(6, 8), torch.tensor([0., 1.] * 3)),
                    "loss_fn": lambda out, y: F.binary_cross_entropy(torch.sigmoid(out), y)}
        """)
    result = run_probe("output_head", ctx, {})
    assert result["status"] == "fail"
    assert result["facts"]["output_floor_before_sigmoid"] is True
    assert result["facts"]["output_made_by"] == "relu"
    assert result["fix_at"]["line"] == line_of(path, "# clamped here")


def test_logits_that_may_be_negative_into_a_sigmoid_are_no_clamp(tmp_path):
    ctx, _ = harness(tmp_path, """\
        def make():
            model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
            return {"model": model, "batch": (torch.randn(6, 8), torch.rand(6, 1).round()),
                    "loss_fn": nn.BCEWithLogitsLoss()}
        """)
    result = run_probe("output_head", ctx, {})
    assert result["facts"]["output_floor_before_sigmoid"] is False
    assert result["status"] == "pass"


def test_an_overfit_run_out_of_time_before_its_steps_cannot_tell(tmp_path):
    ctx, _ = harness(tmp_path, """\
        def make():
            model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
            return {"model": model, "loss_fn": nn.CrossEntropyLoss(),
                    "optimizer": torch.optim.SGD(model.parameters(), lr=1e-4),
                    "batch": (torch.randn(4, 8), torch.tensor([0, 1, 2, 0]))}
        """)
    result = run_probe("overfit_batch", ctx, {"steps": 150, "seconds": 0.0})
    assert result["status"] == "inconclusive"
    assert result["facts"]["out_of_time"] is True and result["facts"]["steps_run"] == 1
    assert "too few to tell" in result["summary"]


def test_an_objective_that_ignores_the_targets_has_no_zero_floor_to_miss(tmp_path):
    ctx, _ = harness(tmp_path, """\
        def make():
            model = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 1))
            x = torch.randn(32, 8)
            return {"model": model, "batch": (x, torch.zeros(32)),
                    "loss_fn": lambda out, _targets: (out - x.sum(1, keepdim=True)).pow(2).mean() + 5,
                    "optimizer": torch.optim.SGD(model.parameters(), lr=1e-3)}
        """)
    result = run_probe("overfit_batch", ctx, {"steps": 20})
    assert result["facts"]["loss_reads_targets"] is False
    assert result["status"] == "inconclusive"
