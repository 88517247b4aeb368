"""The error-driven probes, run in-process on the zoo's real buggy models.

Each zoo program is also a script that crashes with the real error; here its
``harness()`` builds the context, the probe its bug calls for runs, and the
test checks the verdict, the place (found by the zoo's marker comments, not
hard-coded line numbers) and the key facts.
"""

from __future__ import annotations

import copy
import importlib.util
import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from torch import nn

from torchdoctor.patient.context import ProbeContext
from torchdoctor.patient.probes import run_probe
from torchdoctor.probes_manifest import PROBES

ZOO = Path(__file__).parent / "zoo" / "errors"
OWN_PROBES = ("env", "census", "trace", "cpu_fallback", "index_range", "anomaly_rerun",
              "inplace_finder", "first_nonfinite", "bisect")


def load_zoo(name: str):
    spec = importlib.util.spec_from_file_location(f"zoo_errors_{name}", ZOO / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def context(name: str) -> ProbeContext:
    return ProbeContext(**load_zoo(name).harness())


def marker_line(name: str, marker: str) -> int:
    lines = (ZOO / f"{name}.py").read_text().splitlines()
    hits = [i for i, line in enumerate(lines, 1) if line.rstrip().endswith(f"# {marker}")
            or f"# {marker}:" in line]
    assert len(hits) == 1, f"{name}.py should mark exactly one line with # {marker}"
    return hits[0]


def healthy() -> ProbeContext:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                          nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 4))
    batch = (torch.randn(6, 3, 16, 16), torch.randint(0, 4, (6,)))
    return ProbeContext(model=model, batch=batch, loss_fn=nn.CrossEntropyLoss(),
                        optimizer=torch.optim.SGD(model.parameters(), lr=0.01))


def check_contract(name: str, answer: dict) -> None:
    """Every probe keeps its manifest facts and answers in plain JSON."""
    assert answer["status"] in ("pass", "warn", "fail", "inconclusive", "error")
    missing = set(PROBES[name].facts) - set(answer["facts"])
    assert not missing, f"{name} lacks manifest facts {sorted(missing)}"
    json.dumps(answer)


ZOO_RUNS = [
    ("flatten_linear", "trace", {}),
    ("embedding_index", "index_range", {}),
    ("embedding_index", "cpu_fallback", {}),
    ("one_based_labels", "census", {}),
    ("one_based_labels", "index_range", {}),
    ("float_labels", "census", {}),
    ("inplace_saved", "inplace_finder", {}),
    ("inplace_saved", "anomaly_rerun", {}),
    ("backward_twice", "anomaly_rerun", {}),
    ("view_permute", "trace", {}),
    ("wrong_channels", "trace", {}),
    ("nan_log", "anomaly_rerun", {}),
    ("nan_log", "first_nonfinite", {}),
    ("huge_lr", "bisect", {"over": "steps", "steps": 32}),
    ("flatten_linear", "bisect", {}),
]


@pytest.mark.parametrize(("zoo", "name", "params"), ZOO_RUNS)
def test_every_probe_finds_its_zoo_bug_and_keeps_the_contract(zoo, name, params):
    answer = run_probe(name, context(zoo), params)
    check_contract(name, answer)
    assert answer["status"] == "fail", answer["summary"]


@pytest.mark.parametrize("name", OWN_PROBES)
def test_every_probe_passes_a_healthy_model_and_keeps_the_contract(name):
    ctx = healthy()
    before = copy.deepcopy(ctx.model.state_dict())
    answer = run_probe(name, ctx, {})
    check_contract(name, answer)
    assert answer["status"] == "pass", answer["summary"]
    after = ctx.model.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before), "the probe changed the model"
    assert all(p.grad is None for p in ctx.model.parameters())
    assert not ctx.model[0]._forward_hooks and not ctx.model[0]._forward_pre_hooks


_RUN_AS_SCRIPTS = """
import json, runpy, sys
crashes = {}
for path in sys.argv[1:]:
    try:
        runpy.run_path(path, run_name="__main__")
        crashes[path] = None
    except Exception as exc:
        crashes[path] = [type(exc).__name__, str(exc).splitlines()[0]]
print(json.dumps(crashes))
"""
EXPECTED_CRASH = {
    "flatten_linear": ("RuntimeError", "mat1 and mat2 shapes cannot be multiplied (8x57600"),
    "embedding_index": ("IndexError", "index out of range in self"),
    "one_based_labels": ("IndexError", "Target 10 is out of bounds"),
    "float_labels": ("RuntimeError", "expected target dtype to be Long"),
    "inplace_saved": ("RuntimeError", "modified by an inplace operation"),
    "backward_twice": ("RuntimeError", "Trying to backward through the graph a second time"),
    "view_permute": ("RuntimeError", "view size is not compatible"),
    "wrong_channels": ("RuntimeError", "to have 1 channels, but got 3 channels"),
    "nan_log": ("FloatingPointError", "loss is nan at step 0"),
    "huge_lr": ("FloatingPointError", "loss became"),
    "device_mismatch": ("RuntimeError", "Expected all tensors to be on the same device"),
}


@pytest.fixture(scope="module")
def script_crashes() -> dict[str, list[str] | None]:
    """Every zoo program run as ``__main__`` in one child process (one torch import)."""
    paths = sorted(str(p) for p in ZOO.glob("*.py"))
    proc = subprocess.run([sys.executable, "-c", _RUN_AS_SCRIPTS, *paths], check=False,
                          capture_output=True, text=True, timeout=300, cwd=ZOO)
    assert proc.returncode == 0, proc.stderr
    return {Path(k).stem: v for k, v in json.loads(proc.stdout.splitlines()[-1]).items()}


@pytest.mark.parametrize("name", sorted(p.stem for p in ZOO.glob("*.py")))
def test_zoo_program_crashes_as_a_script_with_its_real_error(name, script_crashes):
    if name == "device_mismatch" and not torch.cuda.is_available():
        assert script_crashes[name] is None
        pytest.skip("the device mismatch needs a CUDA device to fail")
    error_type, message = EXPECTED_CRASH[name]
    assert script_crashes[name] is not None, f"{name}.py ran clean"
    assert script_crashes[name][0] == error_type
    assert message in script_crashes[name][1]


def test_trace_names_the_linear_and_the_conv_that_fed_it():
    answer = run_probe("trace", context("flatten_linear"), {"backward": False})
    facts = answer["facts"]
    assert facts["failing_module"] == "classifier.0"
    assert facts["failing_op"] == "F.linear"
    assert facts["failing_line"] == marker_line("flatten_linear", "RAISES")
    assert facts["failing_function"] == "SeqNet.forward"
    assert facts["feature_count"] == 57600 == 64 * 30 * 30
    assert facts["expected_features"] == 9216
    assert facts["feeding_module"] == "features.2"
    assert facts["feeding_shape"] == [8, 64, 30, 30]
    assert facts["chw"] == "64 × 30 × 30"
    assert facts["input_shapes"][0] == [8, 57600]
    assert facts["flatten_op"]["line"] == marker_line("flatten_linear", "FLATTEN")
    assert facts["flatten_op"]["code"].startswith("x = x.view(x.size(0), -1)")
    assert answer["location"] == {"module": "classifier.0", "op": "F.linear",
                                  "file": str(ZOO / "flatten_linear.py"),
                                  "line": marker_line("flatten_linear", "RAISES")}


def test_trace_names_view_on_a_permuted_tensor():
    facts = run_probe("trace", context("view_permute"), {})["facts"]
    assert facts["failing_op"] == "Tensor.view"
    assert facts["failing_line"] == marker_line("view_permute", "BUG")
    assert facts["failing_module"] == "SeqNet"
    assert facts["input_shapes"][0] == [4, 20, 16]
    assert facts["input_contiguous"][0] is False


def test_trace_reports_the_conv_channels():
    facts = run_probe("trace", context("wrong_channels"), {})["facts"]
    assert facts["failing_module"] == "conv1"
    assert facts["failing_line"] == marker_line("wrong_channels", "RAISES")
    assert (facts["expected_channels"], facts["channels"]) == (1, 3)


def test_trace_runs_forward_only_for_a_script_context_without_loss():
    ctx = healthy()
    ctx = ProbeContext(model=ctx.model, batch=(ctx.inputs, None), source="script",
                       error={"type": "RuntimeError", "message": "x", "traceback": ""})
    facts = run_probe("trace", ctx, {})["facts"]
    assert facts["raised"] is False and facts["ran_backward"] is False


def test_index_range_finds_tokens_past_the_vocabulary():
    answer = run_probe("index_range", context("embedding_index"), {})
    facts = answer["facts"]
    assert facts["embedding"] == "embedding" and facts["vocab_size"] == 1000
    assert facts["max_index"] == 1009 and facts["out_of_range"] is True
    assert facts["offenders"] == [{"position": [3, 5], "value": 1004},
                                  {"position": [9, 0], "value": 1009}]
    assert facts["one_based"] is False
    assert answer["location"]["module"] == "embedding"


def test_index_range_and_census_see_one_based_labels():
    facts = run_probe("index_range", context("one_based_labels"), {})["facts"]
    assert (facts["label_min"], facts["label_max"], facts["num_classes"]) == (1, 10, 10)
    assert facts["one_based"] is True and facts["offenders"][0]["value"] == 10
    census = run_probe("census", context("one_based_labels"), {})["facts"]
    assert census["label_out_of_range"] is True and census["classes_out"] == 10


def test_census_fails_float_targets_for_cross_entropy_and_groups_parameters():
    answer = run_probe("census", context("float_labels"), {})
    facts = answer["facts"]
    assert facts["target_dtype"] == "torch.float32" and facts["target_not_class_index"]
    assert facts["parameters"]["text"] == "4: float32 on cpu, all trainable"
    assert facts["mixed_devices"] is False and facts["params_count"] == 4


def test_census_lists_the_frozen_and_double_exceptions():
    ctx = healthy()
    ctx.model[0].weight.requires_grad_(False)
    ctx.model[5].double()
    facts = run_probe("census", ctx, {})["facts"]
    assert facts["frozen_count"] == 1 and facts["mixed_dtypes"] is True
    names = {e["name"] for e in facts["parameters"]["exceptions"]}
    assert {"0.weight", "5.weight", "5.bias"} <= names
    ctx.model[1].eval()
    assert run_probe("census", ctx, {})["facts"]["mode_disagrees"] == ["1"]


def test_census_tells_an_idle_gpu_only_where_one_exists():
    from torchdoctor.patient.probes.census import accelerator_unused
    on_cpu = {"cpu": ["buffers", "inputs", "parameters"]}
    assert accelerator_unused(on_cpu, "cuda") is True
    assert accelerator_unused({"cuda:0": ["inputs", "parameters"]}, "cuda") is False
    assert accelerator_unused({"cpu": ["inputs"], "cuda:0": ["parameters"]}, "cuda") is False
    assert accelerator_unused(on_cpu, None) is None
    facts = run_probe("census", healthy(), {})["facts"]
    gpu = torch.cuda.is_available() or torch.backends.mps.is_available()
    expected = True if gpu else None
    assert facts["accelerator_unused"] is expected


class ListEncoder(nn.Module):
    """Encoder layers kept in a plain list: eval(), .to() and parameters() miss them."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Linear(8, 16)
        self.layers = [nn.Sequential(nn.Linear(16, 16), nn.Dropout(0.5)) for _ in range(2)]
        self.head = nn.Linear(16, 3)

    def forward(self, x):
        x = self.embed(x)
        for layer in self.layers:
            x = layer(x)
        return self.head(x)


def test_census_names_layers_kept_where_eval_does_not_reach_them():
    model = ListEncoder().eval()
    batch = (torch.randn(4, 8), torch.randint(0, 3, (4,)))
    answer = run_probe("census", ProbeContext(model=model, batch=batch,
                                              loss_fn=nn.CrossEntropyLoss()), {})
    assert answer["facts"]["unregistered_modules"] == ["layers"]
    assert answer["facts"]["unregistered_count"] == 1
    assert "plain Python container (layers)" in answer["summary"]
    assert model.layers[0].training, "eval() did not reach the listed layer"
    assert run_probe("census", healthy(), {})["facts"]["unregistered_count"] == 0


def test_a_census_warning_confirms_only_a_cause_that_reads_what_it_warned_of():
    from torchdoctor.investigation.checkup import judge
    from torchdoctor.knowledge import load_knowledge
    kb = load_knowledge(include_user=False, use_cache=False, report=False)
    model = ListEncoder()  # in train mode, as every model starts: no cause by itself
    batch = (torch.randn(4, 8), torch.randint(0, 3, (4,)))
    result = run_probe("census", ProbeContext(model=model, batch=batch,
                                              loss_fn=nn.CrossEntropyLoss()), {})
    assert result["status"] == "warn"
    assert result["facts"]["flagged"] == ["unregistered_count", "unregistered_modules"]
    check = judge("census", result, kb)
    assert check.finding.hypothesis == "training.eval_mode_left_on/layers_in_plain_list"


def test_cpu_fallback_turns_index_errors_into_index_and_size():
    facts = run_probe("cpu_fallback", context("embedding_index"), {})["facts"]
    assert facts["reproduced_on_cpu"] is True and facts["cpu_error_type"] == "IndexError"
    assert (facts["index"], facts["size"]) == (1009, 1000)
    assert facts["line"] == marker_line("embedding_index", "RAISES")
    labels = run_probe("cpu_fallback", context("one_based_labels"), {})["facts"]
    assert (labels["index"], labels["size"]) == (10, 10)


def test_inplace_finder_names_the_add_that_bumped_the_relu_output():
    answer = run_probe("inplace_finder", context("inplace_saved"), {})
    facts = answer["facts"]
    assert facts["found"] is True and facts["op"] == "Tensor.add_"
    assert facts["line"] == marker_line("inplace_saved", "BUG")
    assert facts["tensor_shape"] == [8, 64]
    assert (facts["version_expected"], facts["version_found"]) == (0, 1)
    assert facts["saved_by_line"] == marker_line("inplace_saved", "SAVED")
    assert answer["location"]["module"] == "block"


def test_anomaly_rerun_maps_backward_errors_to_forward_lines():
    nan = run_probe("anomaly_rerun", context("nan_log"), {})["facts"]
    assert nan["backward_op"] == "LogBackward0"
    assert nan["forward_line"] == marker_line("nan_log", "BUG")
    assert nan["forward_function"] == "binary_cross_entropy"
    inplace = run_probe("anomaly_rerun", context("inplace_saved"), {})["facts"]
    assert inplace["backward_op"] == "ReluBackward0" and inplace["module"] == "block.relu"
    twice = run_probe("anomaly_rerun", context("backward_twice"), {})["facts"]
    assert twice["forward_line"] == marker_line("backward_twice", "SHARED")
    assert "second time" in twice["error_message"]


def test_first_nonfinite_names_log_in_the_hand_written_loss():
    answer = run_probe("first_nonfinite", context("nan_log"), {})
    facts = answer["facts"]
    assert facts["op"] == "torch.log" and facts["phase"] == "loss"
    assert facts["produced"] is True and facts["input_finite"] is True
    assert facts["line"] == marker_line("nan_log", "BUG")
    assert facts["stats"][0]["inf"] == 16


def test_first_nonfinite_tells_the_producer_from_those_that_pass_it_on():
    ctx = healthy()
    with torch.no_grad():
        ctx.model[1].running_var.fill_(-1.0)  # a corrupted checkpoint: sqrt of a negative
    ctx.model.eval()
    facts = run_probe("first_nonfinite", ctx, {})["facts"]
    assert facts["module"] == "1" and facts["produced"] is True
    assert facts["stats"][0]["nan"] > 0 and facts["input_finite"] is True
    ctx.model.train()
    bad_input = ProbeContext(model=ctx.model, batch=(torch.full((2, 3, 16, 16), math.nan),
                                                      torch.zeros(2, dtype=torch.long)))
    passed_on = run_probe("first_nonfinite", bad_input, {})["facts"]
    assert passed_on["module"] == "0" and passed_on["produced"] is False
    assert passed_on["batch_finite"] is False


def test_bisect_over_modules_stays_within_budget_and_records_each_step():
    torch.manual_seed(0)
    layers = [nn.Linear(16, 16) for _ in range(20)]
    with torch.no_grad():
        layers[13].weight[0, 0] = math.inf
    ctx = ProbeContext(model=nn.Sequential(*layers), batch=(torch.randn(4, 16), None))
    answer = run_probe("bisect", ctx, {})
    facts = answer["facts"]
    assert facts["first_bad"]["module"] == "Sequential[13]"  # a bare "13" names nothing
    assert facts["first_bad"]["path"] == "13"
    assert facts["runs"] <= math.ceil(math.log2(20)) + 2
    assert all({"lo", "hi", "cut", "ran", "outcome"} <= set(s) for s in facts["steps"])
    narrowed = run_probe("bisect", ctx, {"lo": 10, "hi": 15})["facts"]
    assert narrowed["first_bad"]["path"] == "13" and narrowed["steps"][0]["lo"] == 10


def test_bisect_over_steps_finds_the_step_the_script_dies_at(script_crashes):
    ctx = context("huge_lr")
    before = copy.deepcopy(ctx.model.state_dict())
    answer = run_probe("bisect", ctx, {"over": "steps", "steps": 64})
    facts = answer["facts"]
    died_at = int(script_crashes["huge_lr"][1].rsplit(" ", 1)[-1])
    assert facts["first_bad"]["step"] == died_at
    assert facts["runs"] <= math.ceil(math.log2(64)) + 2
    assert all(torch.equal(before[k], v) for k, v in ctx.model.state_dict().items())


def test_env_reports_versions():
    facts = run_probe("env", healthy(), {})["facts"]
    assert facts["torch"] == torch.__version__
    assert facts["cuda_available"] == torch.cuda.is_available()
    assert facts["devices"][0]["type"] == "cpu"


def test_a_probe_that_breaks_reports_error_instead_of_raising():
    ctx = ProbeContext(model=nn.Linear(2, 2), batch=object())
    answer = run_probe("census", ctx, {"no_such_param": 1})
    assert answer["status"] == "error" and "traceback" in answer["facts"]


class _PermuteThenView(nn.Module):
    """conv → permute → view → head, the view raising in the parent's own forward."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3)
        self.head = nn.Linear(4 * 6 * 6, 10)

    def forward(self, x):
        x = self.conv(x).permute(0, 2, 3, 1)
        x = x.view(x.size(0), -1)  # permute made it non-contiguous: view raises here
        return self.head(x)


def test_bisect_blames_the_parents_glue_code_not_the_child_before_it():
    torch.manual_seed(0)
    ctx = ProbeContext(model=_PermuteThenView(), batch=(torch.randn(2, 1, 8, 8), None))
    answer = run_probe("bisect", ctx, {})
    facts = answer["facts"]
    assert answer["status"] == "fail" and facts["first_bad"] is None
    glue = facts["glue"]
    assert glue["parent"] == "_PermuteThenView" and glue["parent_path"] == ""
    assert glue["before"] == "conv" and glue["after"] == "head"
    assert glue["op"] == "Tensor.view" and glue["input_shapes"][0] == [2, 6, 6, 4]
    assert Path(glue["file"]).resolve() == Path(__file__).resolve()
    assert glue["code"] == "x = x.view(x.size(0), -1)  # permute made it non-contiguous: view raises here"
    assert answer["location"]["line"] == glue["line"]
    assert "no child module is to blame" in answer["summary"] and "conv" in answer["summary"]


def test_unnamed_modules_get_a_readable_name():
    from torchdoctor.patient.probes._modules import readable_name

    root = nn.Sequential(nn.Conv2d(1, 1, 3), nn.Sequential(nn.ReLU(), nn.Linear(3, 2)))
    assert readable_name(root, "0") == "Sequential[0]"
    assert readable_name(root, "1.1") == "Sequential[1][1]"
    assert readable_name(nn.Conv2d(1, 1, 3), "") == "Conv2d(1→1, 3×3)"
    assert readable_name(nn.Linear(8, 1), "") == "Linear(8→1)"
    named = nn.Module()
    named.features = root
    assert readable_name(named, "features.0") == "features.0"
