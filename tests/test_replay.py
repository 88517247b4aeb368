"""The failing run, replayed under the recorder, and provenance back to the fix line.

Each program in ``tests/replay/programs`` fails somewhere the model's forward
alone never reaches (the loss call, a helper, a second backward after an
optimizer step, collate, load_state_dict) and marks two lines: ``# RAISES``
and ``# FIX``. The probes must name the first as ``raised_at`` and the second
as ``fix_at``, and the knowledge base's hypotheses must be judged by them.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
import torch
from torch import nn

from torchdoctor.criteria import verdict
from torchdoctor.investigation.verdicts import judge
from torchdoctor.knowledge import load_knowledge
from torchdoctor.patient import targets
from torchdoctor.patient.context import ProbeContext
from torchdoctor.patient.probes import run_probe
from torchdoctor.patient.recorder.fix_site import with_fix_site
from torchdoctor.patient.recorder.recorder import Recorder
from torchdoctor.patient.recorder.replay import recording_for
from torchdoctor.probes_manifest import PROBES
from torchdoctor.provenance import trace_back

PROGRAMS = Path(__file__).parent / "replay" / "programs"


def marked(name: str, marker: str) -> int:
    lines = (PROGRAMS / f"{name}.py").read_text().splitlines()
    hits = [i for i, line in enumerate(lines, 1) if f"# {marker}" in line]
    assert len(hits) == 1, f"{name}.py marks {len(hits)} lines with # {marker}"
    return hits[0]


def crashed(name: str, seconds: float | None = None) -> ProbeContext:
    """The context the patient keeps after running the script, as its worker fills it."""
    path = str(PROGRAMS / f"{name}.py")
    started = time.perf_counter()
    outcome = targets.run_script(path, [])
    assert outcome.report["exited"] == "raised", outcome.report
    outcome.context.extras["script"] = {
        "path": path, "argv": [], "cwd": None,
        "seconds": time.perf_counter() - started if seconds is None else seconds}
    return outcome.context


def hypothesis(entry_id: str, hyp_id: str) -> dict:
    entry = load_knowledge(include_user=False).by_id[entry_id]
    return next(h for h in entry.hypotheses if h.id == hyp_id)


def judged(entry_id: str, hyp_id: str, answer: dict) -> str:
    return verdict(hypothesis(entry_id, hyp_id), answer, {})


def engine_verdict(entry_id: str, hyp_id: str, answer: dict) -> str:
    """The verdict the investigation draws, which also weighs the probe's status."""
    return judge(hypothesis(entry_id, hyp_id), answer, {}).verdict


def check_contract(name: str, answer: dict) -> None:
    missing = set(PROBES[name].facts) - set(answer["facts"])
    assert not missing, f"{name} lacks manifest facts {sorted(missing)}"
    json.dumps(answer)


@pytest.mark.parametrize("name", [
    "step_between_backwards", "inplace_mask", "slice_assign", "flatten_batch", "numpy_double",
    "bce_no_sigmoid", "accuracy_helper", "device_moved",
])
def test_provenance_names_the_line_that_raised_and_the_line_to_fix(name):
    answer = run_probe("provenance", crashed(name), {})
    check_contract("provenance", answer)
    assert answer["status"] == "fail", answer["summary"]
    assert answer["facts"]["replay"] == "script" and answer["facts"]["reproduced"] is True
    assert answer["raised_at"]["line"] == marked(name, "RAISES")
    assert answer["fix_at"]["line"] == marked(name, "FIX"), answer["summary"]
    assert answer["fix_at"]["code"] and answer["fix_at"]["file"].endswith(f"{name}.py")


def test_an_optimizer_step_between_two_backwards_is_told_from_an_inplace_op():
    step = run_probe("provenance", crashed("step_between_backwards"), {})
    assert step["facts"]["write_kind"] == "optimizer_step"
    assert step["facts"]["written_param"] == "2.weight"
    entry = "autograd.inplace_modified"
    assert judged(entry, "optimizer_step_before_backward", step) == "confirmed"
    assert judged(entry, "inplace_activation", step) == "rejected"
    assert judged(entry, "index_assignment", step) == "rejected"

    mask = run_probe("provenance", crashed("inplace_mask"), {})
    assert (mask["facts"]["write_kind"], mask["facts"]["write_op"]) == ("inplace_op",
                                                                        "Tensor.mul_")
    assert mask["fix_at"]["module"] == "GatedNet"
    assert judged(entry, "inplace_activation", mask) == "confirmed"
    assert judged(entry, "optimizer_step_before_backward", mask) == "rejected"

    sliced = run_probe("provenance", crashed("slice_assign"), {})
    assert judged(entry, "index_assignment", sliced) == "confirmed"
    assert judged(entry, "inplace_activation", sliced) == "rejected"


def test_a_flatten_that_merged_the_batch_points_at_where_the_module_was_built():
    answer = run_probe("provenance", crashed("flatten_batch"), {})
    facts = answer["facts"]
    assert (facts["property"], facts["batch_size"], facts["merged_by"]) == (
        "batch_dimension", 8, "Tensor.flatten")
    assert answer["fix_at"]["module"] == "Sequential[3] (Flatten)"
    assert answer["raised_at"]["module"] == "Sequential[4] (Linear)"
    assert judged("shape.linear_in_features", "flattened_batch", answer) == "confirmed"


def test_wrong_in_features_is_rejected_when_the_linear_got_no_batch_dimension():
    ctx = crashed("flatten_batch")
    answer = run_probe("trace", ctx, {"backward": False})
    fields = {"features": answer["facts"]["feature_count"]}
    assert verdict(hypothesis("shape.linear_in_features", "wrong_in_features"), answer,
                   fields) == "rejected"


def test_a_numpy_float64_source_is_found_through_the_arithmetic_after_it():
    answer = run_probe("provenance", crashed("numpy_double"), {})
    facts = answer["facts"]
    assert facts["odd_value"] == "float64"
    assert facts["chain"][0]["op"] == "torch.from_numpy"
    assert judged("dtype.float64_vs_float32", "numpy_float64", answer) == "confirmed"


def test_the_loss_inputs_are_measured_at_the_loss_call_with_where_each_was_made():
    answer = run_probe("loss_inputs", crashed("bce_no_sigmoid"), {})
    check_contract("loss_inputs", answer)
    facts = answer["facts"]
    assert answer["status"] == "fail"
    assert facts["found_from"] == "failing_frames"
    assert facts["input_in_unit_range"] is False and facts["target_in_unit_range"] is True
    assert facts["input_produced_at"]["line"] == marked("bce_no_sigmoid", "FIX")
    assert facts["target_produced_at"]["code"].startswith("y = ")
    assert answer["fix_at"]["line"] == marked("bce_no_sigmoid", "FIX")
    assert judged("numerics.bce_input_range", "arguments_swapped", answer) == "rejected"


def test_a_loss_probe_without_a_loss_call_says_why_in_one_line():
    answer = run_probe("loss_inputs", crashed("accuracy_helper"), {})
    assert answer["status"] == "inconclusive"
    assert "\n" not in answer["summary"] and "no loss call" in answer["summary"]


def test_collate_items_lists_the_samples_that_do_not_stack():
    answer = run_probe("collate_items", crashed("collate_ragged"), {})
    check_contract("collate_items", answer)
    facts = answer["facts"]
    assert answer["status"] == "fail" and facts["found_from"] == "failing_frames"
    assert facts["dataset"] == "Sentences" and facts["common_size"] == [12]
    assert [(d["index"], d["size"]) for d in facts["differing"]] == [(3, [9]), (6, [15])]
    entry = "dataloader.collate_stack_size"
    assert judged(entry, "variable_length_sequences", answer) == "confirmed"
    assert judged(entry, "variable_image_size", answer) == "rejected"
    assert judged(entry, "grayscale_or_rgba", answer) == "rejected"
    assert answer["raised_at"]["line"] == marked("collate_ragged", "RAISES")
    assert answer["fix_at"] is None  # padding belongs in a collate_fn at the loader


def test_collate_items_fixes_images_of_two_sizes_where_the_dataset_makes_them():
    answer = run_probe("collate_items", crashed("collate_images"), {})
    assert (answer["facts"]["field"], answer["facts"]["differing_dims"]) == ("image", [1, 2])
    assert judged("dataloader.collate_stack_size", "variable_image_size", answer) == "confirmed"
    assert answer["fix_at"]["line"] == marked("collate_images", "FIX")


def test_state_dict_diff_explains_a_head_of_1000_classes_loaded_into_7():
    answer = run_probe("state_dict_diff", crashed("state_dict_head"), {})
    check_contract("state_dict_diff", answer)
    facts = answer["facts"]
    assert facts["head_mismatch"] == {"layer": "4", "checkpoint_classes": 1000,
                                      "model_classes": 7}
    assert "1000 classes" in facts["size_mismatches"][0]["meaning"]
    assert judged("state_dict.size_mismatch", "different_num_classes", answer) == "confirmed"
    assert judged("state_dict.size_mismatch", "different_config", answer) == "rejected"
    # The head's size was set where the model was built; the load only found it out.
    assert answer["raised_at"]["line"] == marked("state_dict_head", "RAISES")
    assert answer["fix_at"]["line"] == marked("state_dict_head", "FIX")


def test_a_head_of_another_size_is_fixed_where_the_model_was_built_not_where_loaded():
    answer = run_probe("state_dict_diff", crashed("state_dict_head_helper"), {})
    assert answer["facts"]["head_mismatch"]["model_classes"] == 40
    assert judged("state_dict.size_mismatch", "different_num_classes", answer) == "confirmed"
    assert answer["raised_at"]["line"] == marked("state_dict_head_helper", "RAISES")
    assert answer["fix_at"]["line"] == marked("state_dict_head_helper", "FIX")


def test_state_dict_diff_finds_the_wrapper_prefix_and_groups_keys_by_layer():
    answer = run_probe("state_dict_diff", crashed("state_dict_prefix"), {})
    facts = answer["facts"]
    assert facts["prefix_in_checkpoint"] == "module." and facts["matches_after_prefix"] == 9
    assert facts["missing_by_layer"]["features.1"] == [
        "bias", "num_batches_tracked", "running_mean", "running_var", "weight"]
    assert judged("state_dict.module_prefix", "saved_from_wrapper", answer) == "confirmed"
    assert judged("state_dict.module_prefix", "loading_into_wrapper", answer) == "rejected"


def test_a_late_failure_replays_only_the_failing_step_and_says_what_it_missed():
    ctx = crashed("inplace_mask", seconds=3600.0)
    recording = recording_for(ctx, budget=30.0)
    assert recording["replay"] == "failing_step" and recording["reproduced"] is True
    assert "3600 s of the script" in recording["could_not_see"][0]
    assert any("own loop" in line for line in recording["could_not_see"])
    assert trace_back(recording)["fix_at"]["line"] == marked("inplace_mask", "FIX")


def test_the_replay_is_shared_by_the_probes_of_one_investigation():
    ctx = crashed("bce_no_sigmoid")
    first = recording_for(ctx)
    assert recording_for(ctx) is first
    assert recording_for(ctx, ring=16) is not first


def test_the_ring_keeps_the_last_events_and_counts_what_it_dropped():
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with Recorder(ring=32) as recorder:
        for _ in range(50):
            opt.zero_grad()
            model(torch.randn(2, 4)).sum().backward()
            opt.step()
    recording = recorder.to_json()
    assert recording["kept"] == 32 == len(recording["events"])
    assert recording["optimizer_steps"] == 50
    assert recording["dropped"] == recording["recorded"] - 32 > 0
    assert recording["events"][-1]["kind"] == "optimizer_step"
    assert {p["name"] for p in recording["events"][-1]["outputs"]} == {
        "0.weight", "0.bias", "2.weight", "2.bias"}


def test_ops_torchdoctor_runs_itself_have_no_user_site():
    from torchdoctor.patient.probes._describe import tensor_stats

    values = torch.randn(5)
    with Recorder() as recorder:
        values.sum()  # the user's op, from this file
        tensor_stats(values)  # torchdoctor's own ops
    events = recorder.to_json()["events"]
    assert events[0]["file"] == __file__ and events[0]["op"] == "Tensor.sum"
    assert len(events) > 1 and all(e["file"] is None for e in events[1:])


@pytest.mark.slow
def test_a_patient_replays_the_script_it_ran_and_probes_a_failure_without_a_model():
    from torchdoctor.patient.client import PatientClient

    with PatientClient.start() as client:
        client.run_script(str(PROGRAMS / "step_between_backwards.py"))
        answer = client.probe("provenance", {"events": 4})
        assert answer["fix_at"]["line"] == marked("step_between_backwards", "FIX")
        assert answer["facts"]["replay"] == "script"
        assert len(answer["facts"]["recording_tail"]) == 4
        report = client.run_script(str(PROGRAMS / "collate_ragged.py"))
        assert "model" not in report["found"]
        collate = client.probe("collate_items")
        assert collate["status"] == "fail", collate["summary"]


def healthy_harness() -> ProbeContext:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                          nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 4))
    data = torch.utils.data.TensorDataset(torch.randn(12, 3, 16, 16),
                                          torch.randint(0, 4, (12,)))
    loader = torch.utils.data.DataLoader(data, batch_size=6)
    return ProbeContext(model=model, batch=next(iter(loader)), loss_fn=nn.CrossEntropyLoss(),
                        optimizer=torch.optim.SGD(model.parameters(), lr=0.1), loader=loader)


@pytest.mark.parametrize(("name", "status"), [
    ("provenance", "pass"), ("loss_inputs", "pass"), ("collate_items", "pass"),
    ("state_dict_diff", "inconclusive"),
])
def test_the_new_probes_leave_a_healthy_harness_as_it_was(name, status):
    ctx = healthy_harness()
    before = {k: v.clone() for k, v in ctx.model.state_dict().items()}
    answer = run_probe(name, ctx, {})
    check_contract(name, answer)
    assert answer["status"] == status, answer["summary"]
    assert all(torch.equal(before[k], v) for k, v in ctx.model.state_dict().items())
    assert all(p.grad is None for p in ctx.model.parameters())
    assert not ctx.optimizer.state, "the replayed step left optimizer state behind"


def test_a_harness_step_replay_finds_the_inplace_write_in_the_models_own_code():
    zoo = Path(__file__).parent / "zoo" / "errors" / "inplace_saved.py"
    spec = __import__("importlib.util").util.spec_from_file_location("zoo_inplace", zoo)
    module = __import__("importlib.util").util.module_from_spec(spec)
    spec.loader.exec_module(module)
    answer = run_probe("provenance", ProbeContext(**module.harness()), {})
    assert answer["facts"]["replay"] == "harness_step"
    assert answer["facts"]["reproduced"] is None  # a harness has no first failure to compare
    assert answer["fix_at"]["code"].startswith("x += self.shift")
    assert answer["fix_at"]["module"] == "block (ShiftedBlock)"


def test_labels_passed_as_the_loss_input_are_told_from_scores_without_a_sigmoid():
    swapped = run_probe("loss_inputs", crashed("bce_swapped"), {})
    assert (swapped["facts"]["input_whole"], swapped["facts"]["target_whole"]) == (True, False)
    assert judged("numerics.bce_input_range", "arguments_swapped", swapped) == "confirmed"
    scores = run_probe("loss_inputs", crashed("bce_no_sigmoid"), {})
    assert judged("numerics.bce_input_range", "arguments_swapped", scores) == "rejected"


def test_a_view_after_permute_is_fixed_at_the_view_with_the_permute_named():
    path = Path(__file__).parent / "zoo" / "errors" / "view_permute.py"
    outcome = targets.run_script(str(path), [])
    outcome.context.extras["script"] = {"path": str(path), "argv": [], "cwd": None,
                                        "seconds": 1.0}
    answer = run_probe("provenance", outcome.context, {})
    assert answer["facts"]["property"] == "contiguity"
    assert answer["fix_at"]["code"].startswith("x = x.view(")
    assert answer["facts"]["made_noncontiguous_at"]["code"].startswith("x = x.permute(")
    assert judged("shape.view_noncontiguous", "after_permute", answer) == "confirmed"


def test_the_device_a_batch_was_moved_to_is_traced_to_the_move():
    answer = run_probe("provenance", crashed("device_moved"), {})
    assert (answer["facts"]["property"], answer["facts"]["odd_value"]) == ("device", "meta")
    assert answer["facts"]["chain"][-1]["op"] == "Tensor.to"


def test_tensors_without_a_version_or_a_single_shape_are_recorded_without_breaking_the_op():
    model = nn.Linear(3, 2)
    with Recorder() as recorder, torch.inference_mode():
        model(torch.randn(4, 3)).add_(1)
    recording = recorder.to_json()
    written = recording["events"][-1]
    assert written["op"] == "Tensor.add_" and written["outputs"][0]["version"] is None
    assert trace_back({**recording, "failure": {"seq": 99, "inputs": [], "file": None,
                                                "line": None}},
                      {"message": "is at version 1; expected version 0"})["fix_at"] is None


def test_a_checkpoint_saved_from_the_wrapper_is_fixed_where_the_run_saved_it():
    answer = run_probe("state_dict_diff", crashed("state_dict_saved_wrapped"), {})
    assert answer["facts"]["prefix_in_checkpoint"] == "module."
    assert answer["raised_at"]["line"] == marked("state_dict_saved_wrapped", "RAISES")
    assert answer["fix_at"]["line"] == marked("state_dict_saved_wrapped", "FIX")


def test_a_loss_rebuilt_from_argmax_is_traced_back_to_the_cut_in_the_graph():
    answer = run_probe("provenance", crashed("argmax_cut"), {})
    check_contract("provenance", answer)
    assert answer["facts"]["property"] == "graph_cut"
    assert answer["facts"]["cut_by"].endswith("argmax")
    assert answer["raised_at"]["line"] == marked("argmax_cut", "RAISES")
    assert answer["fix_at"]["line"] == marked("argmax_cut", "FIX")
    assert engine_verdict("autograd.no_grad_fn", "graph_broken", answer) == "confirmed"


def test_a_loss_computed_under_no_grad_is_no_cut_on_its_data_path():
    answer = run_probe("provenance", crashed("under_no_grad"), {})
    assert answer["facts"]["property"] != "graph_cut"
    assert judged("autograd.no_grad_fn", "graph_broken", answer) != "confirmed"


def test_integer_labels_into_bce_are_read_at_the_loss_call_and_traced_to_where_made():
    answer = run_probe("loss_inputs", crashed("bce_integer_labels"), {})
    check_contract("loss_inputs", answer)
    assert answer["status"] == "fail" and answer["facts"]["target_dtype"] == "int64"
    assert engine_verdict("dtype.bce_integer_target", "integer_labels", answer) == "confirmed"
    assert answer["raised_at"]["line"] == marked("bce_integer_labels", "RAISES")
    assert answer["fix_at"]["line"] == marked("bce_integer_labels", "FIX")


def test_labels_with_a_trailing_dimension_are_read_at_the_loss_call():
    answer = run_probe("loss_inputs", crashed("labels_trailing_dim"), {})
    assert answer["facts"]["target_shape"] == [6, 1]
    assert engine_verdict("shape.multi_target", "trailing_dim", answer) == "confirmed"
    assert judged("shape.multi_target", "one_hot_integer", answer) == "inconclusive"
    assert answer["raised_at"]["line"] == marked("labels_trailing_dim", "RAISES")
    assert answer["fix_at"]["line"] == marked("labels_trailing_dim", "FIX")


def test_a_failure_on_the_short_last_batch_is_fixed_where_the_loader_was_built():
    answer = run_probe("provenance", crashed("last_batch_view"), {})
    check_contract("provenance", answer)
    assert answer["status"] == "fail", answer["summary"]
    facts = answer["facts"]
    assert (facts["property"], facts["last_batch"]) == ("last_batch", True)
    assert (facts["batch_size"], facts["last_batch_size"], facts["dataset_len"]) == (4, 2, 10)
    assert answer["fix_at"]["line"] == marked("last_batch_view", "FIX")
    assert answer["raised_at"]["line"] == marked("last_batch_view", "RAISES")
    assert engine_verdict("shape.view_invalid_size", "hardcoded_batch", answer) == "confirmed"


def test_a_reshape_that_fails_on_the_first_batch_is_not_blamed_on_the_last_one():
    answer = run_probe("provenance", crashed("first_batch_view"), {})
    assert answer["facts"]["last_batch"] is None
    assert answer["facts"]["property"] != "last_batch"
    assert engine_verdict("shape.view_invalid_size", "hardcoded_batch", answer) != "confirmed"


def test_a_probe_that_found_the_cause_gets_the_fix_site_the_replay_traced():
    ctx = crashed("target_view_merges_batch")
    answer = with_fix_site(ctx, run_probe("trace", ctx, {"backward": True}))
    assert answer["status"] == "fail", answer["summary"]
    assert answer["fix_at"]["line"] == marked("target_view_merges_batch", "FIX")
    assert "view" in answer["facts"]["fix_why"]


def test_a_probe_that_found_nothing_gets_no_fix_site():
    ctx = crashed("target_view_merges_batch")
    passed = {"status": "pass", "summary": "", "facts": {}, "location": None}
    assert "fix_at" not in with_fix_site(ctx, passed)


def test_the_failing_call_of_a_child_module_is_what_the_probes_replay():
    ctx = crashed("children_loop")
    assert isinstance(ctx.model, nn.Sequential) and isinstance(ctx.model[0], nn.Linear)
    with pytest.raises(RuntimeError) as raised:
        ctx.forward()
    assert str(raised.value) == ctx.error["message"]


def test_a_state_carried_into_the_next_iteration_is_fixed_where_the_loop_binds_it():
    answer = run_probe("provenance", crashed("carried_hidden"), {})
    check_contract("provenance", answer)
    assert answer["facts"]["property"] == "carried_state"
    assert answer["fix_at"]["line"] == marked("carried_hidden", "FIX")
    assert answer["raised_at"]["line"] == marked("carried_hidden", "RAISES")
    assert engine_verdict("autograd.backward_twice", "state_carried_over", answer) == "confirmed"


def test_two_losses_of_one_forward_are_not_taken_for_carried_state():
    answer = run_probe("provenance", crashed("two_losses_shared"), {})
    assert answer["facts"]["property"] != "carried_state"
    assert engine_verdict("autograd.backward_twice", "state_carried_over", answer) != "confirmed"


@pytest.mark.parametrize("name", ["skip_size_odd", "skip_size_literal"])
def test_feature_maps_that_no_longer_line_up_are_fixed_where_the_input_size_is_set(name):
    answer = run_probe("provenance", crashed(name), {})
    check_contract("provenance", answer)
    assert answer["facts"]["property"] == "input_size"
    assert answer["fix_at"]["line"] == marked(name, "FIX")
    assert answer["raised_at"]["line"] == marked(name, "RAISES")


def test_tensors_made_with_different_sizes_are_fixed_where_they_were_made():
    answer = run_probe("provenance", crashed("collate_label_lengths"), {})
    check_contract("provenance", answer)
    facts = answer["facts"]
    assert (facts["property"], facts["odd_shape"], facts["common_shape"]) == ("item_size", [5], [4])
    assert answer["fix_at"]["line"] == marked("collate_label_lengths", "FIX")
    assert answer["raised_at"]["line"] == marked("collate_label_lengths", "RAISES")


def test_an_out_of_range_label_gets_no_fix_site_where_the_labels_were_made():
    ctx = crashed("head_too_narrow")
    answer = with_fix_site(ctx, run_probe("index_range", ctx, {}))
    assert answer["status"] == "fail", answer["summary"]
    assert answer.get("fix_at") is None


def test_images_with_the_wrong_channels_are_fixed_in_the_reader_that_shaped_the_array():
    ctx = crashed("gray_reader")
    answer = run_probe("provenance", ctx, {})
    check_contract("provenance", answer)
    facts = answer["facts"]
    assert (facts["property"], facts["channels_expected"], facts["channels_got"]) == (
        "channels", 3, 1)
    assert facts["data_source"]["op"] == "torch.from_numpy"
    assert answer["fix_at"]["line"] == marked("gray_reader", "FIX")
    census = with_fix_site(ctx, run_probe("census", ctx, {}))
    assert census["status"] == "fail", census["summary"]
    assert census["fix_at"]["line"] == marked("gray_reader", "FIX")
