"""Probes that read the cause off the failing frames (and the recording of the failing run).

Each program below crashes the way a family of real bugs does and marks the
line the fix belongs on with ``# FIX``. The probe runs on the patient's own
context of the crash (the script run for real, its frames kept), and its
answer is judged against the knowledge-base hypothesis it exists to test:
the right cause is confirmed with the fix line, and the rival cause of the
same error (a leaf written while initialising, a parameter handed to NumPy,
an unconverted array) is told apart.
"""

from __future__ import annotations

import json
import textwrap
import time
from pathlib import Path

import pytest

from torchdoctor.investigation.verdicts import judge
from torchdoctor.knowledge import load_knowledge
from torchdoctor.patient import targets
from torchdoctor.patient.probes import run_probe
from torchdoctor.probes_manifest import PROBES

KB = load_knowledge(include_user=False)


def crash(tmp_path: Path, source: str) -> tuple:
    """Run ``source`` as a script; the probe context of its failure, and its # FIX line."""
    path = tmp_path / "train.py"
    path.write_text(textwrap.dedent(source))
    started = time.perf_counter()
    outcome = targets.run_script(str(path), [])
    assert outcome.report["exited"] == "raised", outcome.report
    outcome.context.extras["script"] = {"path": str(path), "argv": [], "cwd": None,
                                        "seconds": time.perf_counter() - started}
    lines = path.read_text().splitlines()
    fix = [i for i, line in enumerate(lines, 1) if line.rstrip().endswith("# FIX")]
    return outcome.context, (fix[0] if fix else None)


def probed(name: str, ctx) -> dict:
    answer = run_probe(name, ctx, {})
    assert set(PROBES[name].facts) <= set(answer["facts"]), answer
    json.dumps(answer)
    return answer


def verdict(entry: str, hyp: str, answer: dict, ctx) -> str:
    hypothesis = next(h for h in KB.by_id[entry].hypotheses if h.id == hyp)
    return judge(hypothesis, answer, {}, ctx.error).verdict


def test_manual_update_of_a_parameter_is_confirmed_at_its_line(tmp_path):
    ctx, fix = crash(tmp_path, """
        import torch
        model = torch.nn.Linear(4, 2)
        model(torch.randn(8, 4)).pow(2).mean().backward()
        for p in model.parameters():
            p -= 0.1 * p.grad  # FIX
    """)
    answer = probed("inplace_leaf", ctx)
    assert answer["facts"]["has_grad"] is True and answer["facts"]["is_parameter"] is True
    assert answer["fix_at"]["line"] == fix
    assert verdict("autograd.leaf_inplace", "manual_update", answer, ctx) == "confirmed"
    assert verdict("autograd.leaf_inplace", "init_in_place", answer, ctx) == "rejected"


def test_writing_a_weight_in_init_is_initialisation_not_an_update(tmp_path):
    ctx, fix = crash(tmp_path, """
        import torch
        from torch import nn

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.weight = nn.Parameter(torch.randn(3, 3))
                self.weight[0] = 1.0  # FIX

        Net()
    """)
    answer = probed("inplace_leaf", ctx)
    assert answer["facts"]["initialising"] is True
    assert answer["fix_at"]["line"] == fix
    assert verdict("autograd.leaf_inplace", "init_in_place", answer, ctx) == "confirmed"
    assert verdict("autograd.leaf_inplace", "manual_update", answer, ctx) == "rejected"


def test_a_loss_class_called_with_tensors_is_confirmed_at_the_call(tmp_path):
    ctx, fix = crash(tmp_path, """
        import torch
        from torch import nn
        out, y = torch.randn(8, 3), torch.randint(0, 3, (8,))
        loss = nn.CrossEntropyLoss(out, y)  # FIX
    """)
    answer = probed("loss_construction", ctx)
    assert answer["facts"]["loss_class"] == "CrossEntropyLoss"
    assert answer["fix_at"]["line"] == fix
    assert verdict("other.bool_ambiguous", "loss_module_called_with_tensors", answer,
                   ctx) == "confirmed"


def test_an_if_on_a_tensor_rejects_the_loss_construction(tmp_path):
    ctx, _ = crash(tmp_path, """
        import torch
        scores = torch.randn(5)
        if scores > 0:
            print("positive")
    """)
    answer = probed("loss_construction", ctx)
    assert answer["facts"]["constructed_with_tensors"] is False
    assert verdict("other.bool_ambiguous", "loss_module_called_with_tensors", answer,
                   ctx) == "rejected"


def test_a_loss_total_handed_to_numpy_points_at_the_accumulation(tmp_path):
    ctx, fix = crash(tmp_path, """
        import numpy as np
        import torch
        model, criterion = torch.nn.Linear(4, 3), torch.nn.CrossEntropyLoss()

        def evaluate():
            total = 0
            for _ in range(2):
                total += criterion(model(torch.randn(8, 4)), torch.randint(0, 3, (8,)))  # FIX
            return total

        losses = [evaluate(), evaluate()]
        print(np.mean(losses))
    """)
    answer = probed("graph_carrier", ctx)
    assert answer["facts"]["carrier_computed"] is True
    assert answer["fix_at"]["line"] == fix
    assert verdict("autograd.numpy_requires_grad", "metrics_on_outputs", answer,
                   ctx) == "confirmed"


def test_model_outputs_converted_directly_are_fixed_where_converted(tmp_path):
    ctx, fix = crash(tmp_path, """
        import torch
        model = torch.nn.Linear(4, 1)
        preds = model(torch.randn(8, 4))
        values = preds.numpy()  # FIX
    """)
    answer = probed("graph_carrier", ctx)
    assert answer["facts"]["carrier_computed"] is True
    assert answer["fix_at"]["line"] == fix


def test_a_parameter_handed_to_numpy_is_not_a_metric_on_outputs(tmp_path):
    ctx, _ = crash(tmp_path, """
        import numpy as np
        import torch
        model = torch.nn.Linear(4, 1)
        print(np.abs(model.weight).max())
    """)
    answer = probed("graph_carrier", ctx)
    assert answer["facts"]["carrier_computed"] is False
    assert verdict("autograd.numpy_requires_grad", "metrics_on_outputs", answer,
                   ctx) == "rejected"


def test_an_unreduced_loss_points_at_the_line_choosing_the_reduction(tmp_path):
    ctx, fix = crash(tmp_path, """
        import torch
        from torch import nn

        class Tagger(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(6, 5)
                reduction = "none"  # FIX
                self.criterion = nn.CrossEntropyLoss(reduction=reduction)

            def forward(self, x, y):
                return self.criterion(self.fc(x), y)

        loss = Tagger()(torch.randn(12, 6), torch.randint(0, 5, (12,)))
        loss.backward()
    """)
    answer = probed("backward_root", ctx)
    assert answer["facts"]["reduction_none"] is True and answer["facts"]["root_numel"] == 12
    assert answer["fix_at"]["line"] == fix
    assert verdict("autograd.grad_non_scalar", "unreduced_loss", answer, ctx) == "confirmed"


def test_a_vector_that_no_loss_returned_confirms_no_unreduced_loss(tmp_path):
    ctx, _ = crash(tmp_path, """
        import torch
        out = torch.nn.Linear(4, 3)(torch.randn(8, 4))
        out.backward()
    """)
    answer = probed("backward_root", ctx)
    assert answer["facts"]["reduction_none"] is None
    assert verdict("autograd.grad_non_scalar", "unreduced_loss", answer, ctx) == "inconclusive"


def test_a_module_returning_several_outputs_is_fixed_where_bound(tmp_path):
    ctx, fix = crash(tmp_path, """
        import torch
        from torch import nn
        rnn, head = nn.GRU(4, 3, batch_first=True), nn.Linear(3, 2)
        out = rnn(torch.randn(2, 5, 4))  # FIX
        scores = head(out)
    """)
    answer = probed("argument_value", ctx)
    assert answer["facts"]["holds_tensors"] is True and answer["facts"]["from_module_call"]
    assert answer["fix_at"]["line"] == fix
    entry = "other.argument_wrong_type"
    assert verdict(entry, "tuple_from_previous_layer", answer, ctx) == "confirmed"
    assert verdict(entry, "numpy_or_list_input", answer, ctx) == "rejected"


def test_an_unconverted_array_is_data_not_a_model_output(tmp_path):
    ctx, fix = crash(tmp_path, """
        import numpy as np
        import torch
        layer = torch.nn.Linear(2, 2)
        features = np.zeros((1, 2), dtype=np.float32)  # FIX
        layer(features)
    """)
    answer = probed("argument_value", ctx)
    assert answer["facts"]["value_type"] == "ndarray"
    assert answer["fix_at"]["line"] == fix
    entry = "other.argument_wrong_type"
    assert verdict(entry, "numpy_or_list_input", answer, ctx) == "confirmed"
    assert verdict(entry, "tuple_from_previous_layer", answer, ctx) == "rejected"


@pytest.mark.parametrize("name", ["inplace_leaf", "loss_construction", "graph_carrier",
                                  "backward_root", "argument_value"])
def test_without_a_failure_the_probes_conclude_nothing(name):
    answer = run_probe(name, None, {})
    assert answer["status"] in ("inconclusive", "pass") and answer["status"] != "error"
    assert answer.get("fix_at") is None
