"""Which phase of training raised: forward, backward, optimizer step, data loading, load.

Judged frame by frame from the innermost outwards: the deepest frame that belongs to a
phase wins, because that is the code that was running. Two exceptions keep the answer
honest: a forward frame inside backward, data loading or checkpoint loading belongs to
the outer phase (activation checkpointing recomputes forward during backward; datasets
and load_state_dict call modules), so an enclosing phase of those three takes priority.
When no frame says anything, a few unmistakable messages decide.
"""

from __future__ import annotations

import re

from torchdoctor.parsing.model import ChainLink, Frame

PHASES = ("forward", "backward", "optimizer_step", "data_loading", "checkpoint_load", "other")
ENCLOSING = frozenset({"backward", "data_loading", "checkpoint_load"})
FORWARD_FUNCTIONS = frozenset({"_call_impl", "_wrapped_call_impl", "forward", "__call__"})
# torch/autograd/ holds the backward engine's entry points, but also what runs forward:
# Function.apply (a custom op's forward), before torch 0.4 every Variable op (variable.py's
# view and cat, _functions/*.py's forward), and the no_grad/enable_grad decorators around
# inference code. Only the engine's entry points are the backward pass.
AUTOGRAD_BACKWARD = frozenset({"backward", "grad", "_engine_run_backward", "run_backward",
                               "_make_grads"})
USER_BACKWARD = re.compile(r"\.backward\(|autograd\.grad\(|\bbackward\(")
USER_STEP = re.compile(r"\b\w*(?:optim|opt)\w*\.step\(|scaler\.step\(")
USER_LOAD = re.compile(r"\.load_state_dict\(|torch\.load\(|load_checkpoint\(")
USER_DATA = re.compile(r"\bfor\b.+\bin\b.*\b\w*loader\w*\b|next\(iter\(")
USER_FORWARD = re.compile(r"\b(?:self\.)?(?:model|net|module|encoder|decoder)\s*\(")
MESSAGE_PHASES = (
    (re.compile(r"DataLoader worker|collate|Caught \w+ in pin memory"), "data_loading"),
    (re.compile(r"Error\(s\) in loading state_dict|Weights only load failed|"
                r"torch\.load|Attempting to deserialize"), "checkpoint_load"),
    (re.compile(r"modified by an inplace operation|backward through the graph a second time|"
                r"does not require grad and does not have a grad_fn|returned nan values in its"
                r"|differentiated Tensors appears to not have been used"), "backward"),
    (re.compile(r"mat1 and mat2 shapes|Expected input batch_size|Given groups=|"
                r"must match the size of tensor"), "forward"),
)


def _path(frame: Frame) -> str:
    return frame.file.replace("\\", "/")


def frame_phase(frame: Frame) -> str | None:
    path = _path(frame)
    function = (frame.function or "").rsplit(".", 1)[-1]
    code = frame.code or ""
    if not frame.is_user:
        if path.endswith("torch/_tensor.py") and function == "backward":
            return "backward"
        if "torch/autograd/" in path:
            if function in AUTOGRAD_BACKWARD:
                return "backward"
            if function in ("forward", "apply") or path.endswith("torch/autograd/variable.py"):
                return "forward"
            return None
        if "torch/optim/" in path or "torch/amp/grad_scaler" in path:
            return "optimizer_step"
        if "torch/utils/data/" in path:
            return "data_loading"
        if path.endswith("torch/serialization.py") or "load_state_dict" in function:
            return "checkpoint_load"
        if path.endswith("torch/nn/functional.py"):
            return "forward"
        if "torch/nn/modules/" in path:
            if path.endswith("module.py") and function not in FORWARD_FUNCTIONS:
                return None
            return "forward"
        return None
    if USER_BACKWARD.search(code):
        return "backward"
    if USER_STEP.search(code):
        return "optimizer_step"
    if USER_LOAD.search(code) or "load_state_dict" in function:
        return "checkpoint_load"
    if USER_DATA.search(code) or function in ("__getitem__", "collate_fn", "__getitems__"):
        return "data_loading"
    if function == "forward" or USER_FORWARD.search(code):
        return "forward"
    return None


def frames_phase(frames: list[Frame]) -> str | None:
    """The deepest phase, unless an enclosing backward/data/load frame outranks forward."""
    chosen = None
    for frame in frames:
        phase = frame_phase(frame)
        if phase is None:
            continue
        if chosen in ENCLOSING and phase == "forward":
            continue
        chosen = phase
    return chosen


def judge_phase(chain: list[ChainLink], root: int, worker: bool) -> str:
    """The diagnosed link's frames first, then the rest of the chain, then the message."""
    if worker:
        return "data_loading"
    if not chain:
        return "other"
    ordered = [chain[root]] + [link for i, link in enumerate(reversed(chain))
                               if len(chain) - 1 - i != root]
    for link in ordered:
        phase = frames_phase(link.frames)
        if phase:
            return phase
    for link in ordered:
        for pattern, phase in MESSAGE_PHASES:
            if pattern.search(link.message):
                return phase
    return "other"
