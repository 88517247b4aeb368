"""The ``label_encoding`` probe: how the labels at a class-index loss are encoded.

Cross-entropy takes one class index per sample, or (since torch 1.10) float
class probabilities shaped like its input. Labels built for another task
break it in ways its messages only hint at: one-hot rows ``[N, C]`` of
integers take the probability path and fail on their dtype; one-hot rows
flattened with ``view(-1)`` become ``N*C`` targets for ``N`` rows; multi-hot
rows (several classes per sample) are a multi-label task, which wants
``BCEWithLogitsLoss``. The failing frames hold input and target at the loss
call, and the rows of the target, read against the input's classes, tell
these apart. The fix site follows: a one-hot encoding is fixed where the
labels were written (the recording walks the target back through collate and
views to the tensor the values were written into); a multi-label target is
right, and the loss is fixed where it was chosen (its construction, or the
command-line option whose default picked it).
"""

from __future__ import annotations

import argparse
import ast
from typing import Any

import torch

from torchdoctor.patient.context import ProbeContext
from torchdoctor.patient.probes import probe, result
from torchdoctor.patient.probes._errors import never_raises
from torchdoctor.patient.probes._failing_frames import failing_exception, find_local, frames
from torchdoctor.patient.probes._frames import INTERNAL, USER, file_kind, frame_info
from torchdoctor.patient.probes._recorded import Producers, site
from torchdoctor.patient.probes._statements import lookup, parsed, statement_at
from torchdoctor.patient.recorder.replay import recording_for

PROBE_FACTS = ("loss", "input_shape", "target_shape", "classes", "target_binary",
               "rows_match_input", "flattened_rows", "ones_per_row", "one_hot", "multi_hot",
               "labels_made_at", "loss_chosen_at")


@probe("label_encoding")
@never_raises
def label_encoding(ctx: ProbeContext | None) -> dict:
    facts: dict[str, Any] = dict.fromkeys(PROBE_FACTS)
    exc = failing_exception(ctx)
    found = find_local(exc, lambda name, value: name == "target"
                       and isinstance(value, torch.Tensor))
    inputs = found[1].f_locals.get("input") if found else None
    if found is None or not isinstance(inputs, torch.Tensor) or inputs.dim() < 2 or (
            file_kind(found[1].f_code.co_filename) != INTERNAL):
        return result("inconclusive", "no loss call with class scores in the failing frames",
                      facts)
    target, frame, _ = found
    owner = frame.f_locals.get("self")
    facts.update(loss=type(owner).__name__ if owner is not None else frame.f_code.co_name,
                 input_shape=list(inputs.shape), target_shape=list(target.shape),
                 classes=inputs.shape[1])
    rows = _rows(inputs, target, facts)
    if rows is None:
        return result("pass", f"target {facts['target_shape']} is not rows of"
                      f" {facts['classes']} classes for input {facts['input_shape']}", facts)
    sums = rows.sum(dim=1)
    facts["ones_per_row"] = [int(sums.min()), int(sums.max())]
    facts["one_hot"] = facts["target_binary"] and bool((sums == 1).all())
    facts["multi_hot"] = facts["target_binary"] and bool((sums > 1).any())
    if not facts["target_binary"]:
        return result("pass", "the target's rows hold other values than 0 and 1", facts)
    sites = _sites(ctx, exc, facts) if ctx is not None else {}
    return {**result("fail", _summary(facts), facts), **sites}


def _rows(inputs: torch.Tensor, target: torch.Tensor, facts: dict[str, Any]
          ) -> torch.Tensor | None:
    """The target as [samples, classes] rows, when it is shaped like the input or is such
    rows flattened; also decides ``target_binary``."""
    n, classes = inputs.shape[0], inputs.shape[1]
    facts["rows_match_input"] = inputs.dim() == 2 and list(target.shape) == [n, classes]
    facts["flattened_rows"] = target.dim() == 1 and classes > 1 and (
        target.numel() == n * classes)
    if not (facts["rows_match_input"] or facts["flattened_rows"]) or target.is_complex():
        return None
    with torch.no_grad():
        rows = target.detach().reshape(-1, classes)
        facts["target_binary"] = bool(((rows == 0) | (rows == 1)).all())
    return rows


def _sites(ctx: ProbeContext, exc: BaseException | None, facts: dict[str, Any]
           ) -> dict[str, Any]:
    recording = recording_for(ctx)
    failure = recording.get("failure") or {}
    if not recording.get("reproduced") or len(failure.get("inputs") or []) < 2:
        return {}
    producers = Producers(recording, failure.get("seq"))
    target = failure["inputs"][1]
    serial, made = producers.source(target["base"] if target.get("base") else target["id"])
    facts["labels_made_at"] = site(producers.last_write(serial) or made)
    label = failure.get("module_label")
    built = ((recording.get("modules") or {}).get(label) or {}).get("built_at") if label \
        else None
    chosen = _chosen_at(built, exc) if built else None
    facts["loss_chosen_at"] = chosen or (site({**built, "module": None}) if built else None)
    raised = site({**failure, "module": None})
    fix = facts["loss_chosen_at"] if facts["multi_hot"] else facts["labels_made_at"]
    return {"raised_at": raised, "fix_at": fix}


def _chosen_at(built: dict[str, Any], exc: BaseException | None) -> dict[str, Any] | None:
    """The command-line option that picked the loss, when the line building it chooses by
    an attribute of parsed arguments (``Loss() if args.loss == "ce" else Other()``): the
    ``add_argument`` call of that option, whose default made the choice."""
    if file_kind(built["file"]) != USER:
        return None
    statement = statement_at(built["file"], built["line"])
    choice = next((node for node in ast.walk(statement) if isinstance(node, ast.IfExp)),
                  None) if statement is not None else None
    if choice is None:
        return None
    frame = next((f for f, _ in frames(exc) if f.f_code.co_filename == built["file"]), None)
    option = next((node.attr for node in ast.walk(choice.test)
                   if isinstance(node, ast.Attribute) and frame is not None
                   and isinstance(lookup(node.value, frame), argparse.Namespace)), None)
    if option is None:
        return None
    line = _declared_at(parsed(built["file"]), option)
    if line is None:
        return None
    found = frame_info(built["file"], line, "")
    found["module"] = None
    return found


def _declared_at(tree: ast.AST | None, option: str) -> int | None:
    """The line of ``add_argument`` declaring ``option`` (``--option``, ``--op-tion``,
    or ``dest="option"``)."""
    names = {option, f"--{option}", f"--{option.replace('_', '-')}", f"-{option}"}
    for node in ast.walk(tree) if tree is not None else ():
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and (
                node.func.attr == "add_argument"):
            given = {a.value for a in node.args if isinstance(a, ast.Constant)}
            given |= {k.value.value for k in node.keywords if k.arg == "dest"
                      and isinstance(k.value, ast.Constant)}
            if given & names:
                return node.lineno
    return None


def _summary(facts: dict[str, Any]) -> str:
    low, high = facts["ones_per_row"]
    if facts["multi_hot"]:
        what = (f"the target rows are multi-hot ({low} to {high} classes per sample): a"
                f" multi-label task, which {facts['loss']} cannot score")
    elif facts["one_hot"]:
        what = "the target rows are one-hot (one class per sample, encoded as a row)"
    else:
        what = f"the target rows hold 0/1 with {low} to {high} ones per row"
    if facts["flattened_rows"]:
        what += (f", flattened to {facts['target_shape']} for {facts['input_shape'][0]}"
                 " rows of scores")
    return what
