"""The rewrite operations the knowledge base may name, and their parameters.

Kept free of LibCST so that validating a knowledge base (``kb check``, every
``diagnose``) costs nothing: the operations themselves live in
``operations.py`` and are imported only when a patch is made.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# name -> {parameter: what it means}; every parameter is optional unless marked "required".
OPERATIONS: dict[str, dict[str, str]] = {
    "out_of_place": {
        "prefer_function": "rank candidates inside functions of this name first (e.g. forward)",
    },
    "inplace_false": {},
    "keep_batch_flatten": {},
    "batch_from_tensor": {},
    "view_to_reshape": {},
    "linear_in_features": {
        "wrong": "required: the field holding the in_features the layer was built with",
        "right": "required: the field holding the number of features that arrive",
    },
    "lazy_linear": {"wrong": "required: the field holding the in_features to replace"},
    "cast_argument": {
        "index": "required: which positional argument of the call at the site",
        "method": "required: long | float | int | bool",
    },
    "cast_source": {"method": "required: float | long"},
    "move_argument": {
        "index": "required: the argument to move",
        "like": "required: the argument whose device it should follow",
    },
    "shift_argument": {
        "index": "required: the argument to shift",
        "by": "required: the integer to add (-1 for one-based labels)",
    },
    "view_as_argument": {
        "index": "required: the argument to reshape",
        "like": "required: the argument whose shape it should take",
    },
    "rename_call": {
        "from": "required: the callable's name today (e.g. BCELoss)",
        "to": "required: the name to call instead (e.g. BCEWithLogitsLoss)",
    },
    "drop_softmax": {},
    "accumulate_item": {},
    "zero_grad_before_backward": {},
    "train_mode_in_loop": {},
    "strip_prefix_on_load": {"prefix": "required: the prefix to strip, or a field holding it"},
    "map_location_cpu": {},
    "conv_in_channels": {
        "wrong": "required: the field holding the channels the layer was built for",
        "right": "required: the field holding the channels that arrive",
    },
    "embedding_rows": {
        "wrong": "required: the field holding the table's row count",
        "largest": "required: the field holding the largest id that arrives",
    },
    "sum_losses_one_backward": {},
    "clamp_domain": {},
    "step_after_backward": {},
    "defer_step": {},
    "detach_before_numpy": {},
    "first_output": {},
    "construct_then_call": {},
    "optimizer_over_model": {},
    "remove_detach": {},
    "squeeze_argument": {
        "index": "required: the argument to squeeze",
        "dim": "the dimension to drop (default -1)",
    },
    "keep_matching_sizes": {},
    "resize_before_cat": {},
    "head_classes": {
        "largest": "required: the field holding the largest label that arrives",
        "wrong": "the field holding the number of classes the head was built for",
    },
    "drop_last_batch": {},
    "pad_collate": {},
    "image_mode": {"channels": "required: the channels the model takes, or a field holding "
                               "them (1 → L, 3 → RGB, 4 → RGBA)"},
    "repeat_gray_channels": {"channels": "required: the channels the model takes, or a field "
                                         "holding them"},
    "lambda_to_function": {},
    "class_index_labels": {},
    "clone_before_index_assign": {},
    "detach_carried_state": {},
    "reduce_before_backward": {},
    "no_grad_update": {},
    "remove_no_grad": {},
    "optimizer_after_model": {},
    "lower_learning_rate": {"factor": "how much lower (default 10)",
                            "best": "the field holding the rate a sweep found best"},
}

_METHODS = {"long", "float", "int", "bool"}


def check_rewrite(spec: Any) -> list[str]:
    """Problems with one ``rewrite:`` item of a knowledge-base fix (empty when valid)."""
    if not isinstance(spec, Mapping):
        return ["a rewrite is a mapping with 'op' and optional 'params'"]
    op = spec.get("op")
    if op not in OPERATIONS:
        return [f"unknown rewrite op {op!r} (known: {', '.join(sorted(OPERATIONS))})"]
    params = spec.get("params", {})
    if not isinstance(params, Mapping):
        return [f"rewrite {op}: params must be a mapping"]
    problems = []
    allowed = OPERATIONS[op]
    for name in params:
        if name not in allowed:
            problems.append(f"rewrite {op}: unknown parameter {name!r}")
    for name, meaning in allowed.items():
        if meaning.startswith("required") and name not in params:
            problems.append(f"rewrite {op}: parameter {name!r} is required")
    for name, value in params.items():
        if not isinstance(value, (str, int, float, bool)):
            problems.append(f"rewrite {op}: parameter {name!r} must be a literal")
    method = params.get("method")
    if method is not None and method not in _METHODS:
        problems.append(f"rewrite {op}: method must be one of {', '.join(sorted(_METHODS))}")
    return problems
