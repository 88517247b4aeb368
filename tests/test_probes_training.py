"""The silent-failure probes, run in-process on the zoo of silently broken harnesses.

Each zoo file carries a ``# BUG`` marker on the line a probe should point at;
the healthy harnesses must come back clean from every probe.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
import torch

from torchdoctor.patient.context import ProbeContext
from torchdoctor.patient.probes import run_probe
from torchdoctor.probes_manifest import PROBES

ZOO = Path(__file__).parent / "zoo" / "silent"
OURS = ("grad_flow", "weights_update", "loop_order", "loss_at_init", "output_head",
        "overfit_batch", "lr_range", "nonfinite_steps", "determinism", "memory_phases",
        "memory_growth", "dataloader")
HEALTHY = ("healthy_mlp", "healthy_cnn", "healthy_transformer")


def load(name: str) -> ProbeContext:
    spec = importlib.util.spec_from_file_location(f"silent_zoo_{name}", ZOO / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return ProbeContext(**module.harness())


def bug_line(name: str) -> int:
    lines = (ZOO / f"{name}.py").read_text().splitlines()
    return next(i for i, line in enumerate(lines, 1) if "# BUG" in line)


def check(name: str, probe: str, **params) -> dict:
    result = run_probe(probe, load(name), params)
    missing = set(PROBES[probe].facts) - set(result["facts"])
    assert not missing, f"{probe} lacks manifest facts {missing}"
    return result


@pytest.mark.slow
@pytest.mark.parametrize("harness", HEALTHY)
def test_healthy_harness_passes_every_probe(harness):
    lighter = {"memory_growth": {"steps": 6}, "nonfinite_steps": {"steps": 15},
               "lr_range": {"points": 5}}
    verdicts = {p: check(harness, p, **lighter.get(p, {}))["status"] for p in OURS}
    if harness != "healthy_mlp":  # only the MLP comes with a loader
        assert verdicts.pop("dataloader") == "inconclusive"
    assert verdicts == {p: "pass" for p in verdicts}


def assert_points_at_bug(result: dict, name: str) -> None:
    loc = result["location"]
    assert loc["file"] == str(ZOO / f"{name}.py")
    assert loc["line"] == bug_line(name)


def test_missing_step_leaves_every_weight_unchanged():
    result = check("missing_step", "weights_update")
    assert result["status"] == "fail"
    assert result["facts"]["step_called"] is False
    assert result["facts"]["changed_count"] == 0
    assert_points_at_bug(result, "missing_step")


def test_missing_zero_grad_shows_accumulating_gradients():
    result = check("missing_zero_grad", "loop_order")
    assert result["status"] == "fail"
    assert result["facts"]["accumulating"] is True
    assert result["facts"]["zero_grad_called"] is False
    assert result["facts"]["order"][:2] == ["backward", "step"]
    assert_points_at_bug(result, "missing_zero_grad")


def test_softmax_before_cross_entropy():
    result = check("softmax_before_ce", "output_head")
    assert result["status"] == "fail"
    assert result["facts"]["softmax_before_ce"] is True
    assert result["location"]["module"] == "head"
    assert_points_at_bug(result, "softmax_before_ce")


def test_raw_logits_into_bce_loss():
    result = check("logits_into_bce", "output_head")
    assert result["status"] == "fail"
    assert result["facts"]["logits_into_bce"] is True
    assert result["location"]["module"] == "head"


def test_detached_encoder_gets_no_gradient():
    result = check("detached_encoder", "grad_flow")
    assert result["status"] == "fail"
    assert result["facts"]["no_grad_count"] == 4
    assert all(n.startswith("encoder.") for n in result["facts"]["no_grad_params"])
    assert result["location"]["module"] == "encoder"
    assert result["location"]["op"] == "detach"
    assert_points_at_bug(result, "detached_encoder")


def test_parameters_left_out_of_the_optimizer():
    result = check("params_not_in_optimizer", "weights_update")
    assert result["status"] == "fail"
    assert result["facts"]["not_in_optimizer"] == ["head.weight", "head.bias"]
    assert result["location"]["module"] == "head"


def test_exploding_learning_rate_turns_nan():
    result = check("lr_explodes", "nonfinite_steps")
    assert result["status"] == "fail"
    assert result["facts"]["first_bad_step"] > 0
    history = result["facts"]["grad_norm_history"]
    numbers = [h for h in history if isinstance(h, float)]
    assert numbers == sorted(numbers), "gradient norms grow before the blow-up"
    sweep = check("lr_explodes", "lr_range")
    assert sweep["status"] == "fail"
    assert sweep["facts"]["diverge_lr"] <= sweep["facts"]["user_lr"]
    flow = check("lr_explodes", "grad_flow")
    assert flow["status"] == "fail" and flow["facts"]["exploding_growing"] is True


def test_log_of_zero_in_hand_written_loss():
    result = check("log_zero_loss", "nonfinite_steps")
    assert result["status"] == "fail"
    assert result["facts"]["what"] == "loss"
    assert result["location"]["op"] == "log"
    assert_points_at_bug(result, "log_zero_loss")


def test_eval_mode_left_on_during_training():
    result = check("eval_mode_left_on", "loop_order")
    assert result["status"] == "fail"
    assert result["facts"]["eval_mode_during_training"] is True
    assert set(result["facts"]["eval_modules"]) == {"1", "3"}
    assert_points_at_bug(result, "eval_mode_left_on")


def test_losses_kept_with_their_graph():
    result = check("loss_history_leak", "memory_growth", steps=10)
    assert result["status"] == "fail"
    holder = result["facts"]["holders"][0]
    assert holder["name"] == "losses" and holder["tensors_with_graph"] == 10
    assert "list `losses`" in result["summary"]
    assert_points_at_bug(result, "loss_history_leak")
    leak = sys.modules["silent_zoo_loss_history_leak"].losses
    assert leak == [], "the probe undoes what its own steps appended"


def test_lambda_in_dataset_with_spawn_workers():
    result = check("lambda_spawn_loader", "dataloader")
    assert result["status"] == "fail"
    assert result["facts"]["picklable"] is False
    assert result["facts"]["unpicklable"] == "dataset.transform is a lambda"
    assert_points_at_bug(result, "lambda_spawn_loader")


def test_hanging_dataset_is_reported_as_a_hang():
    result = check("hanging_dataset", "dataloader", timeout=1.0)
    assert result["status"] == "fail"
    assert result["facts"]["hang"] is True
    assert "num_workers=0" in result["facts"]["suggestion"]


def test_workers_that_each_yield_the_whole_iterable_dataset_are_found():
    result = check("iterable_not_sharded", "dataloader")
    assert result["status"] == "fail" and result["facts"]["worker_copies"] is True
    assert "the data 2 times" in result["summary"]
    assert_points_at_bug(result, "iterable_not_sharded")


class SplitByWorker(torch.utils.data.IterableDataset):
    """The zoo's records, each worker taking every num_workers-th one."""

    def __init__(self, features, labels):
        self.features, self.labels = features, labels

    def __iter__(self):
        info = torch.utils.data.get_worker_info()
        for i, record in enumerate(zip(self.features, self.labels)):
            if info is None or i % info.num_workers == info.id:
                yield record


def test_an_iterable_dataset_split_by_worker_passes():
    ctx = load("iterable_not_sharded")
    records = ctx.loader.dataset
    ctx.loader = torch.utils.data.DataLoader(SplitByWorker(records.features, records.labels),
                                             batch_size=8, num_workers=2)
    result = run_probe("dataloader", ctx, {})
    assert result["status"] == "pass", result["summary"]
    assert result["facts"]["worker_copies"] is False and result["facts"]["shuffle"] is None


def test_unshuffled_training_loader_warns():
    ctx = load("healthy_mlp")
    ctx.loader = torch.utils.data.DataLoader(ctx.loader.dataset, batch_size=16)
    result = run_probe("dataloader", ctx, {})
    assert result["status"] == "warn" and result["facts"]["shuffle"] is False


def test_collate_failure_names_the_odd_sample():
    ctx = load("healthy_mlp")
    samples = [(torch.randn(20), 0)] * 5 + [(torch.randn(19), 1)] + [(torch.randn(20), 0)] * 2
    ctx.loader = torch.utils.data.DataLoader(samples, batch_size=8, shuffle=True)
    result = run_probe("dataloader", ctx, {})
    assert result["status"] == "fail"
    assert result["facts"]["collate_error"]
    assert "sample 5 differs" in result["summary"]


def test_probes_leave_the_users_model_and_optimizer_untouched():
    ctx = load("missing_zero_grad")
    ctx.step()  # give the optimizer momentum state to preserve
    params = {n: p.detach().clone() for n, p in ctx.model.named_parameters()}
    state = {k: v["momentum_buffer"].clone() for k, v in ctx.optimizer.state.items()}
    for name in OURS:
        run_probe(name, ctx, {"steps": 5} if name == "memory_growth" else {})
    for n, p in ctx.model.named_parameters():
        assert torch.equal(p, params[n]), n
    for k, v in ctx.optimizer.state.items():
        assert torch.equal(v["momentum_buffer"], state[k])
    assert torch.autograd.backward.__module__ == "torch.autograd"
    assert torch.nn.Module.train.__qualname__ == "Module.train"


def test_a_raising_train_step_is_an_error_result_not_an_exception():
    ctx = load("healthy_mlp")

    def broken_step(model, batch, loss_fn, optimizer):
        raise ValueError("the user's step is broken")

    ctx.train_step = broken_step
    for name in ("weights_update", "loop_order", "overfit_batch", "nonfinite_steps",
                 "memory_growth"):
        result = run_probe(name, ctx, {})
        assert result["status"] == "error", name
        assert "the user's step is broken" in result["summary"]


def test_loss_at_init_warns_on_confident_wrong_predictions():
    ctx = load("healthy_mlp")
    with torch.no_grad():
        ctx.model[-1].weight.mul_(200)
    result = run_probe("loss_at_init", ctx, {})
    assert result["status"] == "warn"
    assert result["facts"]["ratio"] > 2.5


def test_a_loss_at_init_far_above_chance_is_no_evidence_against_the_labels():
    from torchdoctor.criteria import verdict
    from torchdoctor.knowledge import load_knowledge

    result = check("loud_logits_at_init", "loss_at_init")
    assert result["status"] == "warn" and result["facts"]["ratio"] > 2.5
    entry = load_knowledge(include_user=False).by_id["training.cannot_overfit_batch"]
    labels = next(h for h in entry.hypotheses if h.id == "labels_inputs_mismatched")
    assert verdict(labels, result, {}) == "inconclusive"


def test_the_census_reads_the_class_count_off_the_logits_not_the_last_linear():
    from torchdoctor.criteria import verdict
    from torchdoctor.knowledge import load_knowledge

    result = check("similarity_logits", "census")
    assert result["facts"]["classes_out"] == 32
    assert result["facts"]["label_out_of_range"] is False
    entry = load_knowledge(include_user=False).by_id["training.head_width_mismatch"]
    zero_based = next(h for h in entry.hypotheses if h.id == "labels_not_zero_based")
    assert verdict(zero_based, result, {}) != "confirmed"


def test_a_running_total_kept_as_a_tensor_is_a_holder_of_every_steps_graph():
    ctx = load("running_total_leak")
    result = run_probe("memory_growth", ctx, {"steps": 10})
    assert result["status"] == "fail"
    holder = result["facts"]["holders"][0]
    assert holder["name"] == "total" and holder["graph_nodes_added"] >= 10
    assert_points_at_bug(result, "running_total_leak")
    cell = dict(zip(ctx.train_step.__code__.co_freevars, ctx.train_step.__closure__))["total"]
    assert cell.cell_contents == 0.0, "the probe undoes what its own steps accumulated"


def test_a_batch_that_would_fit_within_patience_is_no_optimisation_bug():
    from torchdoctor.investigation.verdicts import judge
    from torchdoctor.knowledge import load_knowledge

    result = check("healthy_mlp", "overfit_batch", steps=4)
    facts = result["facts"]
    assert facts["learned"] is False and facts["reduction"] > 0.75
    assert facts["steps_to_fit"] <= facts["patience_steps"]
    entry = load_knowledge(include_user=False).by_id["training.cannot_overfit_batch"]
    bug = next(h for h in entry.hypotheses if h.id == "optimisation_bug")
    assert judge(bug, result, {}).verdict == "rejected"


def test_a_batch_whose_loss_does_not_fall_at_all_confirms_an_optimisation_bug():
    from torchdoctor.investigation.verdicts import judge
    from torchdoctor.knowledge import load_knowledge

    result = check("missing_step", "overfit_batch", steps=20)
    assert result["status"] == "fail" and result["facts"]["steps_to_fit"] is None
    entry = load_knowledge(include_user=False).by_id["training.cannot_overfit_batch"]
    bug = next(h for h in entry.hypotheses if h.id == "optimisation_bug")
    assert judge(bug, result, {}).verdict == "confirmed"


def test_gradients_read_after_zero_grad_is_rejected_only_when_the_weights_do_not_move():
    from torchdoctor.investigation.verdicts import judge
    from torchdoctor.knowledge import load_knowledge
    kb = load_knowledge(include_user=False, use_cache=False, report=False)
    hypothesis = next(h for e in kb.entries if e.id == "autograd.grad_read_after_zero_grad"
                      for h in e.hypotheses)
    assert judge(hypothesis, check("missing_step", "weights_update"), {}).verdict == "rejected"
    assert judge(hypothesis, check("healthy_mlp", "weights_update"), {}).verdict == "inconclusive"
