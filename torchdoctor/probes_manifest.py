"""The probes the patient can run, described without importing torch.

The doctor validates knowledge-base entries and builds requests from this
table; the patient implements each name in ``torchdoctor.patient.probes``.
A test keeps the two in step, so a probe cannot exist on one side only.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class ProbeParam:
    name: str
    type: str  # "int" | "float" | "str" | "bool" | "list"
    default: object
    doc: str


@dataclass(frozen=True)
class ProbeSpec:
    name: str
    family: str
    summary: str
    # "nothing" | "target" (script capture or harness, with a model) | "harness" |
    # "failure" (a loaded script or harness, model or not: it works from the failing frames)
    needs: str
    params: tuple[ProbeParam, ...] = field(default=())
    # Environments of fresh patients to run this probe in, instead of the
    # current one: a CUDA device-side assert poisons the process that saw it.
    fresh_envs: tuple[dict[str, str], ...] = field(default=())
    # The facts the probe reports; criteria in the knowledge base may test only
    # these (the validator checks, and the probe tests check the probe keeps them).
    facts: tuple[str, ...] = field(default=())

    def param(self, name: str) -> ProbeParam | None:
        return next((p for p in self.params if p.name == name), None)


def _p(name: str, type_: str, default: object, doc: str) -> ProbeParam:
    return ProbeParam(name, type_, default, doc)


PROBES: dict[str, ProbeSpec] = {
    spec.name: spec
    for spec in (
        ProbeSpec(
            "env",
            "environment",
            "torch, CUDA and cuDNN versions, devices, OS, Python",
            "nothing",
            facts=(
                "torch",
                "cuda",
                "cudnn",
                "python",
                "os",
                "devices",
                "cuda_available",
            ),
        ),
        ProbeSpec(
            "census",
            "census",
            "shape/dtype/device/requires_grad of inputs, targets, parameters and buffers;"
            " train/eval mode; label range versus classes emitted",
            "target",
            facts=(
                "inputs",
                "targets",
                "target_dtype",
                "target_min",
                "target_max",
                "target_whole",
                "classes_out",
                "label_out_of_range",
                "devices",
                "mixed_devices",
                "accelerator_unused",
                "unregistered_modules",
                "unregistered_count",
                "flagged",
                "dtypes",
                "mixed_dtypes",
                "training",
                "params_count",
                "frozen_count",
            ),
        ),
        ProbeSpec(
            "trace",
            "trace",
            "forward (and backward) under module hooks and an op trace that names the"
            " module or op that raised, with the shapes that reached it",
            "target",
            (_p("backward", "bool", True, "also run the loss and backward"),),
            facts=(
                "raised",
                "error_type",
                "error_message",
                "failing_module",
                "failing_op",
                "failing_file",
                "failing_line",
                "input_shapes",
                "input_dtypes",
                "input_devices",
                "feeding_module",
                "feeding_shape",
                "feature_count",
                "chw",
            ),
        ),
        ProbeSpec(
            "cpu_fallback",
            "cpu_fallback",
            "rerun the failing step on the CPU (and with CUDA_LAUNCH_BLOCKING=1 where"
            " CUDA exists) to turn a device-side assert into the real error",
            "target",
            fresh_envs=(
                {"CUDA_VISIBLE_DEVICES": "", "TORCHDOCTOR_DEVICE": "cpu"},
                {"CUDA_LAUNCH_BLOCKING": "1", "TORCHDOCTOR_ONLY_IF": "cuda"},
            ),
            facts=(
                "reproduced_on_cpu",
                "cpu_error_type",
                "cpu_error_message",
                "index",
                "size",
                "blocking_error_message",
            ),
        ),
        ProbeSpec(
            "index_range",
            "index",
            "min/max of every Embedding input and classification target versus the"
            " valid range, with the offending positions",
            "target",
            facts=(
                "out_of_range",
                "offenders",
                "label_min",
                "label_max",
                "num_classes",
                "embedding",
                "vocab_size",
                "max_index",
                "one_based",
            ),
        ),
        ProbeSpec(
            "anomaly_rerun",
            "anomaly",
            "rerun forward and backward under detect_anomaly(check_nan=True) and name"
            " the user's line that produced the failing op",
            "target",
            facts=(
                "raised",
                "error_type",
                "error_message",
                "backward_op",
                "forward_file",
                "forward_line",
                "forward_code",
                "module",
                "shared_graph",
            ),
        ),
        ProbeSpec(
            "first_nonfinite",
            "nonfinite",
            "one forward pass keeping statistics only; the first module whose output is NaN/Inf",
            "target",
            facts=(
                "found",
                "module",
                "produced",
                "input_finite",
                "stats",
                "op",
            ),
        ),
        ProbeSpec(
            "bisect",
            "bisect",
            "bisect the execution order of leaf modules (or training steps) to the first bad one",
            "target",
            (
                _p("over", "str", "modules", "'modules' or 'steps'"),
                _p("steps", "int", 64, "training steps to search when over='steps'"),
                _p("lo", "int", 0, "first leaf index to search from (to override a step)"),
                _p("hi", "int", -1, "last leaf index to search to; -1 for the last leaf"),
            ),
            facts=(
                "first_bad",
                "runs",
                "steps",
                "glue",
            ),
        ),
        ProbeSpec(
            "inplace_finder",
            "anomaly",
            "for 'modified by an inplace operation': the op and line that modified"
            " the saved tensor",
            "target",
            facts=(
                "found",
                "op",
                "file",
                "line",
                "code",
                "tensor_shape",
                "version_expected",
                "version_found",
            ),
        ),
        ProbeSpec(
            "grad_flow",
            "gradients",
            "parameters with no gradient, vanishing/exploding norms, non-finite"
            " gradients after one backward",
            "harness",
            (
                _p("vanish", "float", 1e-7, "norm below which a gradient is vanishing"),
                _p("explode", "float", 1e3, "norm above which a gradient is exploding"),
            ),
            facts=(
                "no_grad_params",
                "no_grad_count",
                "vanishing",
                "exploding",
                "nonfinite_grads",
                "max_norm",
                "min_norm",
                "no_grad_reasons",
                "frozen_params",
                "frozen_count",
                "exploding_growing",
                "norm_history",
                "layer_norms",
                "graph_cuts",
            ),
        ),
        ProbeSpec(
            "weights_update",
            "training",
            "run one training step and report parameters that did not change",
            "harness",
            facts=(
                "unchanged_params",
                "unchanged_count",
                "changed_count",
                "lr_zero",
                "not_in_optimizer",
                "not_in_optimizer_count",
                "optimizer_built_at",
                "frozen_count",
                "step_called",
                "step_calls",
                "reasons",
                "used_train_step",
            ),
        ),
        ProbeSpec(
            "loop_order",
            "training",
            "observe the order of zero_grad / backward / step in the user's train_step",
            "harness",
            (_p("steps", "int", 3, "train_step calls to observe"),),
            facts=(
                "order",
                "zero_grad_called",
                "accumulating",
                "step_before_backward",
                "zero_grad_before_step",
                "eval_mode_during_training",
                "eval_modules",
                "backward_calls",
                "step_calls",
                "train_step_calls",
            ),
        ),
        ProbeSpec(
            "loss_at_init",
            "training",
            "loss of the untrained model versus log(C)",
            "harness",
            facts=(
                "loss",
                "ln_classes",
                "ratio",
                "num_classes",
                "kind",
                "exactly_ln_classes",
            ),
        ),
        ProbeSpec(
            "output_head",
            "training",
            "softmax/sigmoid before the loss, raw logits into BCELoss, final layer"
            " width versus the classes in the targets",
            "harness",
            facts=(
                "softmax_before_ce",
                "logits_into_bce",
                "head_width",
                "num_classes",
                "width_mismatch",
                "sigmoid_before_bce_logits",
                "loss_functions",
                "head_module",
                "output_floor_before_sigmoid",
                "output_made_by",
            ),
        ),
        ProbeSpec(
            "overfit_batch",
            "training",
            "train on one batch and see whether the loss falls close to zero",
            "harness",
            (
                _p("steps", "int", 150, "optimisation steps"),
                _p("seconds", "float", 20.0, "time bound"),
            ),
            facts=(
                "initial_loss",
                "final_loss",
                "reduction",
                "learned",
                "curve",
                "steps_run",
                "used_train_step",
                "steps_to_fit",
                "patience_steps",
                "out_of_time",
                "loss_reads_targets",
            ),
        ),
        ProbeSpec(
            "lr_range",
            "training",
            "short sweep of learning rates on one batch",
            "harness",
            (
                _p("low", "float", 1e-6, "smallest learning rate"),
                _p("high", "float", 10.0, "largest learning rate"),
                _p("points", "int", 8, "rates tried"),
            ),
            facts=(
                "losses",
                "best_lr",
                "diverge_lr",
                "user_lr",
                "initial_loss",
            ),
        ),
        ProbeSpec(
            "nonfinite_steps",
            "numerics",
            "the first training step at which loss, a gradient or a parameter turns non-finite",
            "harness",
            (_p("steps", "int", 50, "training steps to run"),),
            facts=(
                "first_bad_step",
                "what",
                "name",
                "grad_norm_history",
                "op",
                "steps_run",
            ),
        ),
        ProbeSpec(
            "determinism",
            "training",
            "the same step twice from the same seed; names nondeterministic sources",
            "harness",
            facts=(
                "deterministic",
                "sources",
                "risks",
                "loss_difference",
                "differing_grads",
            ),
        ),
        ProbeSpec(
            "memory_phases",
            "memory",
            "peak memory of forward / loss / backward / optimizer step",
            "harness",
            facts=(
                "peaks",
                "largest_tensors",
                "peak_phase",
            ),
        ),
        ProbeSpec(
            "memory_growth",
            "memory",
            "memory per iteration over N steps, and what holds it when it grows",
            "harness",
            (_p("steps", "int", 20, "training steps to run"),),
            facts=(
                "growing",
                "per_iter_bytes",
                "holders",
                "growth_per_step",
            ),
        ),
        ProbeSpec(
            "dataloader",
            "data",
            "iterate with num_workers=0 and the user's setting; picklability; collate"
            " failures with per-sample sizes; shuffle; hangs; workers repeating an iterable dataset",
            "harness",
            (
                _p("batches", "int", 3, "batches to draw"),
                _p("timeout", "float", 20.0, "seconds to wait for a batch"),
            ),
            facts=(
                "hang",
                "picklable",
                "unpicklable",
                "collate_error",
                "sample_shapes",
                "shuffle",
                "num_workers",
                "start_method",
                "hang_num_workers",
                "worker_copies",
            ),
        ),
        ProbeSpec(
            "repro",
            "repro",
            "sources of a standalone repro script at increasing levels (failing module,"
            " failing op, whole model with the recorded batch) from the live failure",
            "target",
            facts=(
                "levels",
                "skipped",
                "error_type",
                "error_message",
            ),
        ),
        ProbeSpec(
            "provenance",
            "provenance",
            "replay the failing run under the op recorder (the script from the start, the"
            " failing step when it failed late, or the harness's step) and walk back from the"
            " failing value to the line that made it wrong",
            "failure",
            (
                _p("ring", "int", 0, "events the ring keeps (0: TORCHDOCTOR_RING or 4096)"),
                _p("budget", "float", 0.0, "seconds of first run past which only the failing"
                   " step is replayed (0: TORCHDOCTOR_REPLAY_BUDGET or 30)"),
                _p("events", "int", 0, "how many of the last recorded events to return"),
            ),
            facts=(
                "replay", "reproduced", "recorded", "kept", "dropped", "ring",
                "optimizer_steps", "could_not_see", "error_type", "error_message", "property",
                "raised_at", "fix_at", "why", "write_kind", "write_op", "written_param",
                "saved_at", "batch_merged", "batch_size", "merged_by", "called_at", "odd_value",
                "operands", "offending_argument", "made_noncontiguous_at", "cut_by", "chain",
                "recording_tail", "last_batch", "last_batch_size", "dataset_len", "loaded_at",
                "carried_shape", "made_at", "read_at", "input_shape", "size_set_at", "odd_shape",
                "common_shape", "channels_expected", "channels_got", "data_source",
            ),
        ),
        ProbeSpec(
            "collate_items",
            "data",
            "the samples of the failing batch from the failure's frames (or the loader's"
            " first batch): each one's sizes, and which indices differ from the rest",
            "failure",
            facts=(
                "found_from", "dataset", "dataset_len", "batch_size", "indices", "fields",
                "item_sizes", "differing", "common_size", "field", "field_rank",
                "differing_dims", "ragged", "error_type", "error_message",
            ),
        ),
        ProbeSpec(
            "state_dict_diff",
            "state_dict",
            "the checkpoint against the model in the failing load_state_dict: wrapper"
            " prefixes, missing and unexpected keys by layer, each size mismatch explained",
            "failure",
            facts=(
                "checkpoint_keys", "model_keys", "missing_count", "unexpected_count",
                "mismatched_count", "missing_by_layer", "unexpected_by_layer",
                "size_mismatches", "prefix_in_checkpoint", "prefix_in_model",
                "matches_after_prefix", "head_mismatch", "other_mismatches",
                "transposed_count", "nested_under", "error_type", "error_message",
            ),
        ),
        ProbeSpec(
            "loss_inputs",
            "loss",
            "ranges, dtypes and shapes of the input and target at the loss call, against"
            " the loss's contract, and the lines that produced each",
            "failure",
            (_p("where", "bool", True, "replay the run to find the lines that produced them"),),
            facts=(
                "found_from", "loss", "input_shape", "input_dtype", "input_min", "input_max",
                "target_shape", "target_dtype", "target_min", "target_max",
                "input_in_unit_range", "target_in_unit_range", "input_nonfinite",
                "target_nonfinite", "input_whole", "target_whole", "target_integer",
                "shapes_match", "classes", "target_in_class_range", "input_produced_at",
                "target_produced_at", "problems", "error_type", "error_message",
            ),
        ),
        ProbeSpec(
            "inplace_leaf",
            "autograd",
            "the leaf tensor the failing line writes in place, read in the failing frame: a"
            " parameter that already holds a gradient (a hand-written update) or one written"
            " while it is initialised",
            "failure",
            facts=("written", "is_parameter", "has_grad", "reads_grad", "function",
                   "updates_after_backward", "initialising"),
        ),
        ProbeSpec(
            "loss_construction",
            "loss",
            "a loss class being constructed in the failing frames with tensors among its"
            " arguments (nn.CrossEntropyLoss(output, target))",
            "failure",
            facts=("loss_class", "tensor_arguments", "constructed_with_tensors"),
        ),
        ProbeSpec(
            "graph_carrier",
            "autograd",
            "the tensor NumPy refused because it requires grad: computed or a leaf, read in"
            " the failing frames, and the line that made it, walked back in the recording",
            "failure",
            facts=("carrier_computed", "carrier_grad_fn", "carrier_shape", "made_at",
                   "reproduced"),
        ),
        ProbeSpec(
            "backward_root",
            "autograd",
            "the tensor backward() was called on, from the failing frames: its shape and"
            " whether a loss returned it unreduced (reduction='none'), and the line that"
            " chose the reduction",
            "failure",
            facts=("root_shape", "root_numel", "root_grad_fn", "reduction_none",
                   "loss_module", "built_at"),
        ),
        ProbeSpec(
            "argument_value",
            "other",
            "the value a torch op refused for a tensor argument, read in the failing frames:"
            " its type, whether it is a container of tensors, and the user's line that bound"
            " it (a module call or not)",
            "failure",
            facts=("argument", "value_type", "is_container", "holds_tensors", "held_as",
                   "from_module_call", "bound_at"),
        ),
        ProbeSpec(
            "label_encoding",
            "loss",
            "the target rows at a class-index loss, read in the failing frames against the"
            " input's classes: one-hot, multi-hot or one-hot flattened by view(-1); the fix"
            " where the labels were written or where the loss was chosen",
            "failure",
            facts=("loss", "input_shape", "target_shape", "classes", "target_binary",
                   "rows_match_input", "flattened_rows", "ones_per_row", "one_hot",
                   "multi_hot", "labels_made_at", "loss_chosen_at"),
        ),
        ProbeSpec(
            "sampled_ids",
            "index",
            "ids at an Embedding that reach past its table, read against the width of the"
            " model's own scores (the model run again on ids in range) and whether the caller"
            " samples ids from them; the line that built the module setting that width",
            "failure",
            facts=("num_embeddings", "max_id", "output_width", "widest_module",
                   "output_wider_than_table", "ids_within_output", "ids_fed_back"),
        ),
    )
}
