"""Each rewrite operation on a small source: what it changes, and that it changes nothing else."""

from __future__ import annotations

import textwrap

import pytest

from torchdoctor.rewrites.catalog import OPERATIONS as CATALOG
from torchdoctor.rewrites.catalog import check_rewrite
from torchdoctor.rewrites.operations import OPERATIONS, NotApplicable
from torchdoctor.rewrites.patch import make_patches

TRAIN = textwrap.dedent('''\
    import torch
    from torch import nn
    import torch.nn.functional as F

    VOCAB = 1000


    class Net(nn.Module):
        def __init__(self, vocab=VOCAB):
            super().__init__()
            self.embed = nn.Embedding(vocab, 16)
            self.conv = nn.Conv2d(1, 8, 3)
            self.fc = nn.Linear(64 * 12 * 12, 10)  # sized for 14x14 inputs
            self.act = nn.ReLU(inplace=True)

        def forward(self, x):
            h = self.conv(x)
            h += 1  # shift
            h = h.detach()
            h = h.permute(0, 2, 3, 1).view(h.size(0), -1)
            return F.softmax(self.fc(h), dim=1)


    def train(model, loader, optimizer):
        criterion = nn.CrossEntropyLoss()
        total = 0
        for epoch in range(3):
            for x, y in loader:
                out = model(x)
                loss = criterion(out, y)
                loss.backward()
                optimizer.zero_grad()
                optimizer.step()
                total += loss
        state = torch.load("ckpt.pt")
        model.load_state_dict(state)
        return torch.log(total)
''')


def line_of(text: str) -> int:
    return next(i for i, line in enumerate(TRAIN.splitlines(), 1) if text in line)


def changed(op: str, params: dict | None = None, line: int | None = None,
            fields: dict | None = None) -> tuple[list[str], list[str]]:
    """The removed and added lines of the best patch."""
    patch = make_patches("train.py", TRAIN, {"op": op, "params": params or {}}, line,
                         fields or {})[0]
    lines = patch.diff.splitlines()[2:]
    return ([l[1:].strip() for l in lines if l.startswith("-")],
            [l[1:].strip() for l in lines if l.startswith("+")])


def test_catalog_and_operations_agree():
    assert set(CATALOG) == set(OPERATIONS)


def test_augmented_assignment_becomes_out_of_place_and_keeps_its_comment():
    assert changed("out_of_place", {"prefer_function": "forward"}, line_of("h += 1")) == (
        ["h += 1  # shift"], ["h = h + 1  # shift"])


def test_inplace_true_becomes_false():
    assert changed("inplace_false") == (["self.act = nn.ReLU(inplace=True)"],
                                        ["self.act = nn.ReLU(inplace=False)"])


def test_linear_gets_the_features_that_arrive_where_the_number_is_written():
    _removed, added = changed("linear_in_features", {"wrong": "in_features", "right": "features"},
                             line_of("self.fc(h)"), {"in_features": "9216", "features": "57600"})
    assert added == ["self.fc = nn.Linear(57600, 10)  # sized for 14x14 inputs"]


def test_lazy_linear_drops_in_features():
    _removed, added = changed("lazy_linear", {"wrong": 9216}, None)
    assert added == ["self.fc = nn.LazyLinear(10)  # sized for 14x14 inputs"]


def test_embedding_rows_follow_the_constant_behind_a_default_argument():
    removed, added = changed("embedding_rows", {"wrong": "vocab_size", "largest": "max_index"},
                             None, {"vocab_size": 1000, "max_index": 1009})
    assert (removed, added) == (["VOCAB = 1000"], ["VOCAB = 1010"])


def test_conv_in_channels():
    assert changed("conv_in_channels", {"wrong": "expected", "right": "got"}, None,
                   {"expected": "1", "got": "3"})[1] == ["self.conv = nn.Conv2d(3, 8, 3)"]


def test_view_after_permute_becomes_reshape():
    assert changed("view_to_reshape", line=line_of("permute"))[1] == [
        "h = h.permute(0, 2, 3, 1).reshape(h.size(0), -1)"]


def test_loss_target_is_converted_at_the_call():
    assert changed("cast_argument", {"index": 1, "method": "long"}, line_of("criterion(out"))[1] \
        == ["loss = criterion(out, y.long())"]


def test_one_based_labels_are_shifted_at_the_call():
    assert changed("shift_argument", {"index": 1, "by": -1}, line_of("criterion(out"))[1] == [
        "loss = criterion(out, y - 1)"]


def test_target_takes_the_output_shape():
    assert changed("view_as_argument", {"index": 1, "like": 0}, line_of("criterion(out"))[1] == [
        "loss = criterion(out, y.view_as(out))"]


def test_zero_grad_moves_before_backward():
    removed, added = changed("zero_grad_before_backward", line=line_of("loss.backward()"))
    assert removed == ["optimizer.zero_grad()"] and added == ["optimizer.zero_grad()"]
    patched = make_patches("train.py", TRAIN, {"op": "zero_grad_before_backward"},
                           line_of("loss.backward()"), {})[0].patched
    order = [l.strip() for l in patched.splitlines() if "optimizer." in l or "backward" in l]
    assert order == ["optimizer.zero_grad()", "loss.backward()", "optimizer.step()"]


def test_accumulated_loss_keeps_a_number():
    assert changed("accumulate_item", line=line_of("total += loss"))[1] == [
        "total += loss.item()"]


def test_softmax_in_forward_is_dropped():
    assert changed("drop_softmax", line=line_of("criterion(out"))[1] == ["return self.fc(h)"]


def test_detach_in_forward_is_dropped():
    assert changed("remove_detach")[1] == ["h = h"]


def test_checkpoint_loads_on_cpu_and_without_the_wrapper_prefix():
    assert changed("map_location_cpu")[1] == ['state = torch.load("ckpt.pt", map_location="cpu")']
    assert changed("strip_prefix_on_load", {"prefix": "module."})[1] == [
        'model.load_state_dict({k.removeprefix("module."): v for k, v in state.items()})']


def test_train_mode_at_the_start_of_the_epoch_loop():
    removed, added = changed("train_mode_in_loop")
    assert removed == [] and added == ["model.train()"]


def test_domain_clamp_in_the_failing_function_only():
    assert changed("clamp_domain", line=line_of("torch.log(total)"))[1] == [
        "return torch.log(total.clamp_min(1e-12))"]


def test_two_backwards_through_one_graph_become_one():
    source = "def step(a, b):\n    a.backward()\n    b.backward()\n    opt.step()\n"
    patch = make_patches("s.py", source, {"op": "sum_losses_one_backward"}, 3, {})[0]
    assert patch.patched == "def step(a, b):\n    (a + b).backward()\n    opt.step()\n"


def test_missing_step_and_narrow_optimizer_and_high_rate():
    source = textwrap.dedent('''\
        def step(model, batch, loss_fn, optimizer):
            optimizer.zero_grad()
            loss_fn(model(batch[0]), batch[1]).backward()

        opt = torch.optim.SGD(model.backbone.parameters(), lr=0.5)
    ''')
    assert "    optimizer.step()\n" in make_patches(
        "s.py", source, {"op": "step_after_backward"}, 3, {})[0].patched
    assert "SGD(model.parameters(), lr=0.5)" in make_patches(
        "s.py", source, {"op": "optimizer_over_model"}, None, {})[0].patched
    assert "lr=0.05)" in make_patches(
        "s.py", source, {"op": "lower_learning_rate", "params": {"factor": 10}}, None, {})[0].patched
    assert "lr=1e-05)" in make_patches(
        "s.py", source, {"op": "lower_learning_rate", "params": {"best": "best_lr"}}, None,
        {"best_lr": 1e-05})[0].patched


def test_an_operation_with_nothing_to_rewrite_says_why():
    with pytest.raises(NotApplicable, match="no nn.Linear"):
        make_patches("train.py", TRAIN, {"op": "lazy_linear", "params": {"wrong": 4}}, None, {})


def test_unparsable_file_is_not_applicable():
    with pytest.raises(NotApplicable, match="does not parse"):
        make_patches("bad.py", "def f(:\n", {"op": "inplace_false"}, None, {})


@pytest.mark.parametrize("spec, problem", [
    ({"op": "rm_rf"}, "unknown rewrite op"),
    ({"op": "cast_argument", "params": {"index": 1}}, "'method' is required"),
    ({"op": "cast_argument", "params": {"index": 1, "method": "eval"}}, "method must be"),
    ({"op": "inplace_false", "params": {"code": ["x"]}}, "unknown parameter"),
])
def test_knowledge_base_rewrites_are_checked(spec, problem):
    assert any(problem in p for p in check_rewrite(spec))


def test_validating_rewrites_does_not_import_libcst():
    import subprocess
    import sys

    code = ("import sys; from torchdoctor.knowledge import load_knowledge; "
            "load_knowledge(use_cache=False); print('libcst' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.stdout.strip() == "False", done.stderr


def test_a_step_between_two_backwards_moves_after_the_last():
    source = textwrap.dedent('''\
        for step in range(3):
            opt_d.zero_grad()
            d_loss.backward(retain_graph=True)
            opt_d.step()
            opt_g.zero_grad()
            g_loss.backward()
            opt_g.step()
    ''')
    patched = make_patches("gan.py", source, {"op": "defer_step"}, 4, {})[0].patched
    order = [line.strip() for line in patched.splitlines()[1:]]
    assert order == ["opt_d.zero_grad()", "d_loss.backward(retain_graph=True)", "opt_g.zero_grad()",
                     "g_loss.backward()", "opt_d.step()", "opt_g.step()"]


def test_numpy_of_a_tensor_with_grad_is_detached_and_copied_to_the_host():
    source = "acc = (out.argmax(1) == y).numpy()\nprobs = logits.cpu().numpy()\n"
    patch = make_patches("m.py", source, {"op": "detach_before_numpy"}, 2, {})[0]
    assert patch.patched.splitlines()[1] == "probs = logits.detach().cpu().numpy()"


def test_a_model_with_several_outputs_gives_its_first():
    source = "output = model(images)\nloss = criterion(output, target)\n"
    patch = make_patches("m.py", source, {"op": "first_output"}, 1, {})[0]
    assert patch.patched.splitlines()[0] == "output = model(images)[0]"


def test_a_loss_accumulated_from_its_call_keeps_a_number():
    source = "loss = 0\nfor x, y in data:\n    loss += self.loss(model(x), y)\n"
    patch = make_patches("m.py", source, {"op": "accumulate_item"}, 3, {})[0]
    assert patch.patched.splitlines()[2] == "    loss += self.loss(model(x), y).item()"


def test_a_loss_class_given_tensors_is_built_then_called():
    source = "loss = nn.CrossEntropyLoss(y_hat, y)\n"
    patch = make_patches("m.py", source, {"op": "construct_then_call"}, 1, {})[0]
    assert patch.patched == "loss = nn.CrossEntropyLoss()(y_hat, y)\n"


def test_the_format_doc_names_every_operation():
    from pathlib import Path

    doc = (Path(__file__).resolve().parent.parent / "docs" / "knowledge-format.md").read_text()
    assert [op for op in CATALOG if f"`{op}`" not in doc] == []
