"""The rewrites that fix a batch where it is made, and autograd's bookkeeping where it breaks.

Each family is shown twice: on source text (what the diff changes, and that
comments and layout survive), and on a small program that really fails under
torch and really trains once patched.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from torchdoctor.rewrites.operations import NotApplicable
from torchdoctor.rewrites.patch import make_patches

ROOT = Path(__file__).resolve().parent.parent


def patched(source: str, op: str, line: int | None, params: dict | None = None,
            fields: dict | None = None) -> str:
    source = textwrap.dedent(source)
    return make_patches("p.py", source, {"op": op, "params": params or {}}, line,
                        fields or {})[0].patched


# --- on source text --------------------------------------------------------------------


def test_drop_last_is_added_to_the_loader_and_keeps_a_multiline_layout():
    source = '''\
        loader = DataLoader(
            data,  # the training set
            batch_size=3,
        )
    '''
    assert patched(source, "drop_last_batch", 1) == textwrap.dedent('''\
        loader = DataLoader(
            data,  # the training set
            batch_size=3,
            drop_last=True,
        )
    ''')


def test_drop_last_false_becomes_true_and_a_loader_that_drops_is_left_alone():
    assert "drop_last=True" in patched("l = DataLoader(d, drop_last=False)\n",
                                       "drop_last_batch", 1)
    with pytest.raises(NotApplicable, match="short last batch"):
        patched("l = DataLoader(d, drop_last=True)\n", "drop_last_batch", 1)


def test_pad_collate_is_defined_after_the_imports_and_named_at_the_loader():
    text = patched('''\
        """Training."""
        import torch
        from torch.utils.data import DataLoader

        # the data
        loader = DataLoader(data, batch_size=8)  # keep
    ''', "pad_collate", 6)
    lines = text.splitlines()
    assert lines[:3] == ['"""Training."""', "import torch",
                         "from torch.utils.data import DataLoader"]
    assert lines[5] == "def pad_collate(batch):"
    assert "# the data" in text
    assert lines[-1] == "loader = DataLoader(data, batch_size=8, collate_fn=pad_collate)  # keep"
    with pytest.raises(NotApplicable, match="default collate_fn"):
        patched("loader = DataLoader(d, collate_fn=mine)\n", "pad_collate", 1)


def test_pad_collate_is_not_defined_twice():
    source = "def pad_collate(batch):\n    return batch\n\n\nl = DataLoader(d)\n"
    assert patched(source, "pad_collate", 5).count("def pad_collate") == 1


def test_images_are_converted_where_they_are_opened_or_named():
    assert patched("img = Image.open(path)\n", "image_mode", 1, {"channels": 3}) == \
        'img = Image.open(path).convert("RGB")\n'
    assert patched("img = Image.open(path).convert('L')\n", "image_mode", 1,
                   {"channels": "want"}, {"want": 3}) == "img = Image.open(path).convert('RGB')\n"
    assert patched('x = load(g, "RGB")  # validation\n', "image_mode", 1, {"channels": 1}) == \
        'x = load(g, "L")  # validation\n'
    with pytest.raises(NotApplicable, match="no image"):
        patched("x = load(g)\n", "image_mode", 1, {"channels": 3})


def test_a_gray_channel_axis_is_repeated_in_the_reader_not_in_the_model():
    source = '''\
        def read(img):
            return np.expand_dims(img, axis=2)

        def to_tensor(t):
            return t.unsqueeze(0)

        class Net(nn.Module):
            def forward(self, x):
                return x.unsqueeze(1)
    '''
    text = patched(source, "repeat_gray_channels", 2, {"channels": 3})
    assert "return np.repeat(np.expand_dims(img, axis=2), 3, axis=2)" in text
    text = patched(source, "repeat_gray_channels", 5, {"channels": 3})
    assert "return t.unsqueeze(0).repeat_interleave(3, dim=0)" in text
    assert "return x.unsqueeze(1)\n" in text
    with pytest.raises(NotApplicable):
        patched(source, "repeat_gray_channels", 2, {"channels": 1})


def test_an_index_assignment_writes_into_a_clone():
    source = '''\
        def forward(self, x):
            h = torch.sigmoid(x)
            # zero the first feature
            h[:, 0] = 0
            return h
    '''
    assert patched(source, "clone_before_index_assign", 4) == textwrap.dedent('''\
        def forward(self, x):
            h = torch.sigmoid(x)
            # zero the first feature
            h = h.clone()
            h[:, 0] = 0
            return h
    ''')


def test_an_index_augmented_assignment_is_not_made_out_of_place_by_rebinding():
    # x[i] = x[i] + v still writes into x: only the clone fixes it.
    with pytest.raises(NotApplicable):
        patched("def f(x):\n    x[0] += 1\n", "out_of_place", 2)
    assert "x = x.clone()" in patched("def f(x):\n    x[0] += 1\n", "clone_before_index_assign", 2)


def test_a_carried_state_is_detached_at_the_call_that_carries_it():
    text = patched('''\
        import torch

        h = None
        for x in data:
            out, h = rnn(x, h)  # carry the state
            y = model(x, w)
    ''', "detach_carried_state", 5)
    assert "    out, h = rnn(x, detach_state(h))  # carry the state\n" in text
    assert "def detach_state(state):" in text
    assert "y = model(x, w)" in text


def test_a_lambda_becomes_a_module_level_function_unless_it_reads_locals():
    text = patched('''\
        import torch


        def make(scale):
            data = Readings(transform=lambda x: x / x.std())
            kept = Readings(transform=lambda x: x * scale)
            return data, kept
    ''', "lambda_to_function", 5)
    assert "def transform(x):\n    return x / x.std()\n" in text
    assert "data = Readings(transform=transform)" in text
    assert "kept = Readings(transform=lambda x: x * scale)" in text
    with pytest.raises(NotApplicable):
        patched("def make(s):\n    return DataLoader(d, collate_fn=lambda b: b * s)\n",
                "lambda_to_function", 2)


def test_an_unreduced_loss_is_reduced_before_backward_and_stays_reduced():
    source = "for x in data:\n    loss = f(x)\n    loss.backward()  # step\n    print(loss.item())\n"
    assert patched(source, "reduce_before_backward", 3) == (
        "for x in data:\n    loss = f(x)\n    loss = loss.mean()\n    loss.backward()  # step\n"
        "    print(loss.item())\n")
    assert patched("(a + b).backward()\nloss.mean().backward()\n", "reduce_before_backward",
                   1) == "(a + b).mean().backward()\nloss.mean().backward()\n"


def test_a_manual_update_runs_under_no_grad_and_a_library_call_is_not_wrapped():
    source = '''\
        import torch

        torch.nn.utils.clip_grad_norm_(params, 1.0)
        for p in params:
            p.add_(p.grad, alpha=-0.1)  # SGD by hand
    '''
    assert patched(source, "no_grad_update", 5).splitlines()[3:] == [
        "for p in params:", "    with torch.no_grad():",
        "        p.add_(p.grad, alpha=-0.1)  # SGD by hand"]
    assert "with torch.no_grad():\n    torch.nn" not in patched(source, "no_grad_update", 3)


def test_labels_with_a_trailing_dimension_are_squeezed_at_the_loss():
    assert patched("loss = ce(out, labels)\n", "squeeze_argument", 1, {"index": 1}) == \
        "loss = ce(out, labels.squeeze(-1))\n"


def test_a_checkpoint_keeps_the_model_values_only_where_sizes_differ():
    text = patched("import torch\n\nnet.load_state_dict(torch.load(p))\n",
                   "keep_matching_sizes", 3)
    assert text.endswith("net.load_state_dict(keep_matching_sizes(net, torch.load(p)))\n")
    assert "def keep_matching_sizes(model, state):" in text


def test_every_skip_concatenation_of_the_failing_function_is_resized():
    source = '''\
        import torch.nn.functional as F

        def forward(self, x1, x2):
            up = torch.cat((x2, self.up(x1)), dim=1)
            return torch.cat([x1, up], dim=1)

        def other(a, b):
            return torch.cat((a, b), dim=1)
    '''
    text = patched(source, "resize_before_cat", 4)
    assert "torch.cat((x2, F.interpolate(self.up(x1), size=x2.shape[2:])), dim=1)" in text
    assert "torch.cat([x1, F.interpolate(up, size=x1.shape[2:])], dim=1)" in text
    assert "return torch.cat((a, b), dim=1)" in text


def test_the_head_is_built_for_the_classes_the_labels_hold():
    source = "bert = Bert.from_pretrained(name)\nhead = nn.Linear(64, 2)\nnet = Net(num_classes=2)\n"
    assert patched(source, "head_classes", 1, {"largest": "target"}, {"target": 4}) \
        .splitlines()[0] == "bert = Bert.from_pretrained(name, num_labels=5)"
    text = make_patches("p.py", source, {"op": "head_classes", "params": {
        "largest": "label_max", "wrong": "num_classes"}}, 2, {"label_max": 4, "num_classes": 2})
    assert text[0].patched.splitlines()[1:] == ["head = nn.Linear(64, 5)",
                                                "net = Net(num_classes=2)"]
    assert "net = Net(num_classes=5)" in [c.patched.splitlines()[2] for c in text]
    with pytest.raises(NotApplicable):
        patched(source, "head_classes", 1, {"largest": "label_max"}, {})


def test_one_hot_label_rows_are_returned_as_class_indices_where_they_are_built():
    source = '''\
        def encode(labels):
            ids = torch.zeros(len(labels), 4, dtype=torch.long)
            for row, label in enumerate(labels):
                ids[row, NAMES.index(label)] = 1  # one-hot
            return ids
    '''
    assert patched(source, "class_index_labels", 4).splitlines()[-1] == "    return ids.argmax(1)"
    with pytest.raises(NotApplicable):
        patched("ids = torch.zeros(3, 4)\nids[0, 1] = 1\n", "class_index_labels", 2)


# --- on programs that fail under torch --------------------------------------------------

PROGRAMS = {
    "last_batch_of_one": ("drop_last_batch", {}, "DataLoader(", '''\
        import torch
        from torch import nn
        from torch.utils.data import DataLoader, TensorDataset

        torch.manual_seed(0)
        data = TensorDataset(torch.randn(10, 4), torch.randint(0, 2, (10,)))
        loader = DataLoader(data, batch_size=3)
        model = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.Linear(8, 2))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for x, y in loader:
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
    ''', "Expected more than 1 value per channel"),
    "variable_length": ("pad_collate", {}, "DataLoader(", '''\
        import torch
        from torch import nn
        from torch.utils.data import DataLoader, Dataset

        class Sentences(Dataset):
            def __len__(self):
                return 8

            def __getitem__(self, i):
                return torch.arange(1, 3 + i % 3), torch.tensor(i % 2)

        torch.manual_seed(0)
        embed, head = nn.Embedding(10, 4), nn.Linear(4, 2)
        opt = torch.optim.SGD([*embed.parameters(), *head.parameters()], lr=0.1)
        for ids, y in DataLoader(Sentences(), batch_size=4):
            loss = nn.functional.cross_entropy(head(embed(ids).mean(1)), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
    ''', "stack expects each tensor to be equal size"),
    "gray_reader": ("repeat_gray_channels", {"channels": 3}, "expand_dims", '''\
        import numpy as np
        import torch
        from torch import nn

        def read(stored):
            img = stored.astype(np.float32) / 255.0
            if img.ndim == 2:
                img = np.expand_dims(img, axis=2)
            return torch.from_numpy(img).permute(2, 0, 1)

        torch.manual_seed(0)
        conv = nn.Conv2d(3, 4, 3)
        opt = torch.optim.SGD(conv.parameters(), lr=0.1)
        batch = torch.stack([read(np.zeros((8, 8), dtype=np.uint8)) for _ in range(2)])
        loss = conv(batch).mean()
        loss.backward()
        opt.step()
    ''', "expected input"),
    "mode_at_reader": ("image_mode", {"channels": 1}, '"RGB"', '''\
        import torch
        from torch import nn

        def load(stored, mode):
            return stored.expand(3, -1, -1) if mode == "RGB" else stored

        conv = nn.Conv2d(1, 2, 3)
        opt = torch.optim.SGD(conv.parameters(), lr=0.1)
        batch = torch.stack([load(torch.rand(1, 8, 8), "RGB") for _ in range(2)])
        conv(batch).mean().backward()
        opt.step()
    ''', "expected input"),
    "index_assignment": ("clone_before_index_assign", {}, "h[:, 0] = 0", '''\
        import torch

        w = torch.randn(4, 3, requires_grad=True)
        opt = torch.optim.SGD([w], lr=0.1)
        h = torch.sigmoid(torch.randn(2, 4) @ w)
        h[:, 0] = 0
        h.sum().backward()
        opt.step()
    ''', "modified by an inplace operation"),
    "carried_lstm_state": ("detach_carried_state", {}, "lstm(x, state)", '''\
        import torch
        from torch import nn

        torch.manual_seed(0)
        lstm = nn.LSTM(2, 3, batch_first=True)
        opt = torch.optim.SGD(lstm.parameters(), lr=0.1)
        state = None
        for step in range(3):
            x = torch.randn(1, 4, 2)
            out, state = lstm(x, state)
            loss = out.pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
    ''', "backward through the graph a second time"),
    "unreduced_loss": ("reduce_before_backward", {}, "loss.backward()", '''\
        import torch
        from torch import nn

        model = nn.Linear(3, 2)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        loss = nn.CrossEntropyLoss(reduction="none")(model(torch.randn(4, 3)),
                                                       torch.tensor([0, 1, 0, 1]))
        loss.backward()
        opt.step()
    ''', "grad can be implicitly created only for scalar outputs"),
    "manual_sgd": ("no_grad_update", {}, "p.sub_", '''\
        import torch
        from torch import nn

        model = nn.Linear(3, 1)
        model(torch.randn(4, 3)).pow(2).mean().backward()
        for p in model.parameters():
            p.sub_(0.1 * p.grad)
    ''', "a leaf Variable that requires grad"),
    "trailing_label_dim": ("squeeze_argument", {"index": 1}, "ce(", '''\
        import torch
        from torch import nn

        model = nn.Linear(3, 2)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        ce = nn.CrossEntropyLoss()
        labels = torch.tensor([[0], [1], [1], [0]])
        loss = ce(model(torch.randn(4, 3)), labels)
        loss.backward()
        opt.step()
    ''', "0D or 1D target tensor expected"),
    "odd_size_skip": ("resize_before_cat", {}, "torch.cat", '''\
        import torch
        from torch import nn

        class Tiny(nn.Module):
            def __init__(self):
                super().__init__()
                self.down, self.up = nn.MaxPool2d(2), nn.Upsample(scale_factor=2)
                self.out = nn.Conv2d(2, 1, 1)

            def forward(self, x):
                skip = x
                x = self.up(self.down(x))
                return self.out(torch.cat([skip, x], dim=1))

        model = Tiny()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        model(torch.randn(2, 1, 9, 9)).mean().backward()
        opt.step()
    ''', "Sizes of tensors must match"),
    "narrow_head": ("head_classes", {"largest": 2, "wrong": 2}, "nn.Linear(4, 2)", '''\
        import torch
        from torch import nn

        model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        loss = nn.functional.cross_entropy(model(torch.randn(3, 3)), torch.tensor([0, 1, 2]))
        loss.backward()
        opt.step()
    ''', "out of bounds"),
    "other_class_count": ("keep_matching_sizes", {}, "load_state_dict", '''\
        import io

        import torch
        from torch import nn

        buffer = io.BytesIO()
        torch.save(nn.Sequential(nn.Linear(3, 4), nn.Linear(4, 10)).state_dict(), buffer)
        buffer.seek(0)
        model = nn.Sequential(nn.Linear(3, 4), nn.Linear(4, 5))
        model.load_state_dict(torch.load(buffer))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        model(torch.randn(2, 3)).sum().backward()
        opt.step()
    ''', "size mismatch"),
    "one_hot_labels": ("class_index_labels", {}, "= 1", '''\
        import torch
        from torch import nn

        def encode(labels):
            ids = torch.zeros(len(labels), 3, dtype=torch.long)
            for row, label in enumerate(labels):
                ids[row, label] = 1
            return ids

        torch.manual_seed(0)
        head = nn.Linear(5, 3)
        opt = torch.optim.SGD(head.parameters(), lr=0.1)
        targets = encode([0, 2, 1, 1]).view(-1)
        loss = nn.functional.cross_entropy(head(torch.randn(4, 5)), targets)
        loss.backward()
        opt.step()
    ''', "Expected input batch_size"),
}

RUNNER = '''\
import json, sys, traceback
results = {}
for name, source in json.load(open(sys.argv[1])).items():
    try:
        exec(compile(source, name, "exec"), {"__name__": "__main__"})
        results[name] = "ok"
    except Exception as error:
        results[name] = f"{type(error).__name__}: {error}"
print(json.dumps(results))
'''


def run_all(sources: dict[str, str], folder: Path) -> dict[str, str]:
    """Every program in one interpreter: one torch import for all of them."""
    (folder / "programs.json").write_text(json.dumps(sources))
    (folder / "runner.py").write_text(RUNNER)
    done = subprocess.run([sys.executable, "runner.py", "programs.json"], cwd=folder,
                          capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


@pytest.mark.slow
def test_each_family_fixes_a_program_that_fails_under_torch(tmp_path):
    sources, fixed = {}, {}
    for name, (op, params, near, source, _error) in PROGRAMS.items():
        sources[name] = textwrap.dedent(source)
        line = next(i for i, text in enumerate(sources[name].splitlines(), 1) if near in text)
        fixed[name] = make_patches(f"{name}.py", sources[name], {"op": op, "params": params},
                                   line, {})[0].patched
    before, after = run_all(sources, tmp_path), run_all(fixed, tmp_path)
    for name, (_op, _params, _near, _source, error) in PROGRAMS.items():
        assert error in before[name], (name, before[name])
        assert after[name] == "ok", (name, after[name], fixed[name])


LAMBDA_LOADER = '''\
import torch
from torch.utils.data import DataLoader, TensorDataset


def main():
    data = TensorDataset(torch.randn(8, 3), torch.randint(0, 2, (8,)))
    loader = DataLoader(data, batch_size=4, num_workers=1, multiprocessing_context="spawn",
                        collate_fn=lambda batch: torch.stack([x for x, _ in batch]))
    model = torch.nn.Linear(3, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for x in loader:
        model(x).sum().backward()
        opt.step()


if __name__ == "__main__":
    main()
'''


@pytest.mark.slow
def test_a_lambda_given_to_spawned_workers_becomes_a_function_they_can_unpickle(tmp_path):
    script = tmp_path / "loader.py"
    script.write_text(LAMBDA_LOADER)
    failed = subprocess.run([sys.executable, script.name], cwd=tmp_path, capture_output=True,
                            text=True, timeout=300, check=False)
    assert failed.returncode != 0 and "pickle" in failed.stderr
    line = next(i for i, text in enumerate(LAMBDA_LOADER.splitlines(), 1) if "lambda" in text)
    script.write_text(make_patches(script.name, LAMBDA_LOADER, {"op": "lambda_to_function"},
                                   line, {})[0].patched)
    trained = subprocess.run([sys.executable, script.name], cwd=tmp_path, capture_output=True,
                             text=True, timeout=300, check=False)
    assert trained.returncode == 0, trained.stderr


def test_a_nan_check_that_raised_in_the_caller_clamps_the_logs_it_called():
    source = textwrap.dedent('''\
        def bce(p, y):
            return -(y * torch.log(p)).mean()


        def main():
            loss = bce(model(x), y)
            if not torch.isfinite(loss):
                raise FloatingPointError("loss is nan")
    ''')
    text = make_patches("p.py", source, {"op": "clamp_domain"}, 8, {})[0].patched
    assert "return -(y * torch.log(p.clamp_min(1e-12))).mean()" in text


def test_a_no_grad_on_the_training_path_is_dropped_and_one_in_evaluation_kept():
    source = textwrap.dedent('''\
        def train_step(model, x, y, opt):
            # features first
            with torch.no_grad():
                h = model.encoder(x)
            loss = F.cross_entropy(model.head(h), y)
            loss.backward()


        def evaluate(model, x):
            with torch.no_grad():
                return model(x)
    ''')
    text = make_patches("p.py", source, {"op": "remove_no_grad"}, 3, {})[0].patched
    assert text.splitlines()[1:4] == ["    # features first", "    h = model.encoder(x)",
                                      "    loss = F.cross_entropy(model.head(h), y)"]
    assert "    with torch.no_grad():\n        return model(x)" in text


def test_a_linear_sized_by_an_expression_of_constants_becomes_lazy():
    source = textwrap.dedent('''\
        class Net(nn.Module):
            scale = 7 * 7

            def __init__(self, width=512):
                self.fc = nn.Linear(width * self.scale, 10)
    ''')
    text = make_patches("p.py", source, {"op": "lazy_linear", "params": {"wrong": 25088}}, 5,
                        {})[0].patched
    assert "        self.fc = nn.LazyLinear(10)\n" in text


def test_an_optimizer_built_before_its_model_changes_moves_after_the_change():
    source = textwrap.dedent('''\
        def make():
            model = Net()
            optimizer = torch.optim.SGD(model.parameters(), lr=0.01)  # momentum later
            model = prune(model)
            model.to(device)
            return model, optimizer
    ''')
    text = make_patches("p.py", source, {"op": "optimizer_after_model"}, 3, {})[0].patched
    assert [line.strip() for line in text.splitlines()[1:5]] == [
        "model = Net()", "model = prune(model)", "model.to(device)",
        "optimizer = torch.optim.SGD(model.parameters(), lr=0.01)  # momentum later"]


def test_train_mode_goes_on_the_model_the_step_function_is_given():
    source = textwrap.dedent('''\
        class VSE(nn.Module):
            def val_start(self):
                self.img_enc.eval()


        def make():
            def train_step(model, batch, loss_fn, optimizer):
                loss = loss_fn(model(batch[0]), batch[1])
                loss.backward()
                validate(model)
            return train_step
    ''')
    text = make_patches("p.py", source, {"op": "train_mode_in_loop"}, 10, {})[0].patched
    assert "    def train_step(model, batch, loss_fn, optimizer):\n        model.train()\n" in text
    assert "self.img_enc.train()" not in text
