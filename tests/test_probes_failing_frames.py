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
                                  "backward_root", "argument_value", "label_encoding",
                                  "sampled_ids"])
def test_without_a_failure_the_probes_conclude_nothing(name):
    answer = run_probe(name, None, {})
    assert answer["status"] in ("inconclusive", "pass") and answer["status"] != "error"
    assert answer.get("fix_at") is None


def test_one_hot_labels_flattened_point_at_the_encoding(tmp_path):
    ctx, fix = crash(tmp_path, """
        import torch
        import torch.nn.functional as F
        from torch.utils.data import DataLoader, TensorDataset

        labels = torch.zeros(12, 3, dtype=torch.long)
        for row in range(12):
            labels[row, row % 3] = 1  # FIX
        loader = DataLoader(TensorDataset(torch.randn(12, 5), labels), batch_size=4)
        head = torch.nn.Linear(5, 3)
        for x, y in loader:
            loss = F.cross_entropy(head(x), y.view(-1))
    """)
    answer = probed("label_encoding", ctx)
    assert answer["facts"]["flattened_rows"] is True and answer["facts"]["one_hot"] is True
    assert answer["fix_at"]["line"] == fix
    assert verdict("shape.loss_batch_size", "one_hot_flattened", answer, ctx) == "confirmed"


def test_a_view_that_merges_the_batch_of_scores_is_not_flattened_labels(tmp_path):
    ctx, _ = crash(tmp_path, """
        import torch
        import torch.nn.functional as F
        x = torch.randn(8, 4, 2, 2)
        logits = torch.nn.Linear(8, 3)(x.view(-1, 8))
        F.cross_entropy(logits, torch.randint(0, 3, (8,)))
    """)
    answer = probed("label_encoding", ctx)
    assert answer["facts"]["flattened_rows"] is False
    assert verdict("shape.loss_batch_size", "one_hot_flattened", answer, ctx) == "rejected"


def test_multi_hot_rows_are_fixed_where_the_loss_is_chosen(tmp_path):
    ctx, fix = crash(tmp_path, """
        import argparse
        import torch
        from torch import nn
        parser = argparse.ArgumentParser()
        parser.add_argument("--criterion", default="ce")  # FIX
        args = parser.parse_args([])
        labels = torch.tensor([[1, 0, 1], [0, 1, 1], [1, 0, 0], [1, 1, 1]])
        criterion = nn.CrossEntropyLoss() if args.criterion == "ce" else nn.BCEWithLogitsLoss()
        loss = criterion(torch.randn(4, 3), labels)
    """)
    answer = probed("label_encoding", ctx)
    assert answer["facts"]["multi_hot"] is True and answer["facts"]["ones_per_row"] == [1, 3]
    assert answer["fix_at"]["line"] == fix
    entry = "dtype.ce_probability_target"
    assert verdict(entry, "multi_label_task", answer, ctx) == "confirmed"
    assert verdict(entry, "one_hot_integer_target", answer, ctx) == "rejected"


def test_one_hot_rows_shaped_like_the_scores_are_single_label(tmp_path):
    ctx, fix = crash(tmp_path, """
        import torch
        from torch import nn
        one_hot = nn.functional.one_hot(torch.tensor([0, 2, 1, 0]), 3)  # FIX
        nn.CrossEntropyLoss()(torch.randn(4, 3), one_hot)
    """)
    answer = probed("label_encoding", ctx)
    assert answer["facts"]["one_hot"] is True and answer["facts"]["rows_match_input"] is True
    assert answer["fix_at"]["line"] == fix
    entry = "dtype.ce_probability_target"
    assert verdict(entry, "one_hot_integer_target", answer, ctx) == "confirmed"
    assert verdict(entry, "multi_label_task", answer, ctx) == "rejected"


GENERATOR = """
    import torch
    from torch import nn

    class TinyLM(nn.Module):
        def __init__(self, vocab):
            super().__init__()
            self.embed = nn.Embedding(vocab, 16)
            self.head = nn.Linear(16, {head})  # FIX

        def forward(self, idx):
            return self.head(self.embed(idx))

    def generate(model, idx, steps):
        for _ in range(steps):
            scores = model(idx)[:, -1]
            nxt = torch.argmax(scores, dim=-1, keepdim=True)
            idx = torch.cat([idx, nxt], dim=1)
        return idx

    torch.manual_seed(0)
    model = TinyLM(10)
    with torch.no_grad():
        model.head.bias[:10] = -100.0  # every score past the vocabulary wins the argmax
    {call}
"""


def test_ids_sampled_from_scores_wider_than_the_table_point_at_the_head(tmp_path):
    start = "generate(model, torch.zeros(1, 1, dtype=torch.long), 3)"
    ctx, fix = crash(tmp_path, GENERATOR.format(head=40, call=start))
    answer = probed("sampled_ids", ctx)
    assert answer["facts"]["output_width"] == 40 and answer["facts"]["ids_fed_back"] is True
    assert answer["fix_at"]["line"] == fix
    entry = "index.embedding_out_of_range"
    assert verdict(entry, "scores_wider_than_table", answer, ctx) == "confirmed"


def test_data_ids_past_a_table_as_wide_as_the_scores_are_not_sampled(tmp_path):
    ctx, _ = crash(tmp_path, GENERATOR.format(head=10, call="model(torch.tensor([[3, 12]]))"))
    answer = probed("sampled_ids", ctx)
    assert answer["facts"]["output_wider_than_table"] is False
    entry = "index.embedding_out_of_range"
    assert verdict(entry, "scores_wider_than_table", answer, ctx) == "rejected"
