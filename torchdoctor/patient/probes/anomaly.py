"""The ``anomaly_rerun`` and ``inplace_finder`` probes: backward errors mapped to forward lines.

A backward error names an autograd node (``LogBackward0``) but not the line
that built it. Anomaly mode records the forward stack of every node and,
when one fails, warns with it; these probes rerun the step under it, read
that stack back, and tie it to the user's line and module. For the in-place
error they also watch every in-place op to name the one that bumped the
saved tensor's version.
"""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass, field
from typing import Any

import torch

from torchdoctor.patient.context import ProbeContext
from torchdoctor.patient.probes import probe, result
from torchdoctor.patient.probes._copies import preserved
from torchdoctor.patient.probes._describe import shape
from torchdoctor.patient.probes._errors import error_facts, first_line, never_raises
from torchdoctor.patient.probes._frames import DOCTOR, USER, file_kind, file_name, frame_info
from torchdoctor.patient.probes._harness import can_run_loss
from torchdoctor.patient.probes._tensors import first_tensor
from torchdoctor.patient.probes.trace import ModuleRecorder, OpRecorder, is_inplace

_FORWARD_HEADER = "Traceback of forward call that caused the error"
_NODE = re.compile(r"Error detected in (?P<node>\w+)")
_FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<function>[^\n]+)')
_INPLACE = re.compile(
    r"\[(?P<type>[\w.]+) \[(?P<shape>[\d, ]*)\]\], which is output (?P<output>\d+) of "
    r"(?P<op>\w+), is at version (?P<found>\d+); expected version (?P<expected>\d+)")
_TENSOR_TYPES = {"Float": "torch.float32", "Double": "torch.float64", "Half": "torch.float16",
                 "BFloat16": "torch.bfloat16", "Long": "torch.int64", "Int": "torch.int32"}


@dataclass
class AnomalyRun:
    """What one anomaly-mode rerun of the step saw."""

    error: BaseException | None = None
    node: str | None = None
    forward_frames: list[dict[str, Any]] = field(default_factory=list)
    line_modules: dict[tuple[str, int], str] = field(default_factory=dict)
    inplace_ops: list[dict[str, Any]] = field(default_factory=list)
    first_seen: dict[tuple[str, int], int] = field(default_factory=dict)
    ops_seen: int = 0


def rerun_under_anomaly(ctx: ProbeContext) -> AnomalyRun:
    """The user's step (or forward + loss + backward) under detect_anomaly(check_nan=True)."""
    run = AnomalyRun()
    modules = ModuleRecorder(ctx.model)

    def on_op(name: str, args: tuple, kwargs: dict, out: Any, where: dict | None) -> None:
        if where is None:
            return
        key = (where["file"], where["line"])
        run.ops_seen += 1
        if modules.stack:
            run.line_modules[key] = modules.stack[-1]
        run.first_seen.setdefault(key, run.ops_seen)
        if is_inplace(name, kwargs) or kwargs.get("inplace") is True:
            target = kwargs.get("out") if kwargs.get("out") is not None else first_tensor(args)
            run.inplace_ops.append({
                "op": name, "file": where["file"], "line": where["line"],
                "function": where["function"], "order": run.ops_seen,
                "shape": shape(target) if isinstance(target, torch.Tensor) else None,
                "module": modules.stack[-1] if modules.stack else None,
            })

    ops = OpRecorder(ring=16, on_op=on_op)
    uses_step = ctx.train_step is not None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with preserved(ctx.model, ctx.optimizer, parameters=uses_step):
            try:
                with modules, ops, torch.autograd.detect_anomaly(check_nan=True):
                    if uses_step:
                        ctx.step()
                    else:
                        output = ctx.forward()
                        if can_run_loss(ctx):
                            ctx.loss(output).backward()
                        del output
            except Exception as exc:  # noqa: BLE001 - the user's error is the finding
                run.error = exc
    for warning in caught:
        text = str(warning.message)
        if _FORWARD_HEADER in text:
            node = _NODE.search(text)
            run.node = node["node"] if node else None
            frames = [frame_info(m["file"], int(m["line"]), m["function"].strip())
                      for m in _FRAME.finditer(text.split(_FORWARD_HEADER, 1)[1])]
            run.forward_frames = frames_below_probe(frames)
    if run.node is None and run.error is not None:
        node = re.search(r"Function '(?P<node>\w+)' returned nan", str(run.error))
        run.node = node["node"] if node else None
    return run


def frames_below_probe(frames: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The frames the probe called into: not what called the probe, nor its recorders."""
    kinds = [file_kind(f["file"]) == DOCTOR for f in frames]
    if True in kinds:
        frames = frames[kinds.index(True):]
    return [f for f in frames if file_kind(f["file"]) != DOCTOR]


def user_forward_frame(run: AnomalyRun) -> dict[str, Any] | None:
    user = [f for f in run.forward_frames if file_kind(f["file"]) == USER]
    return user[-1] if user else None


def shared_graph(exc: BaseException | None) -> dict[str, Any] | None:
    """Two live results of the failing user frame whose graphs meet in an interior node.

    "Backward through the graph a second time" after two ``backward()`` calls on
    losses that share part of the model: the first call freed the shared part.
    The failing frame still holds the outputs (``logits, aux = model(x)``), so
    the node where their graphs meet names what the two losses share. Parameter
    leaves do not count: every output of one model shares those.
    """
    tb = exc.__traceback__ if exc is not None else None
    frames = []
    while tb is not None:
        if file_kind(tb.tb_frame.f_code.co_filename) == USER:
            frames.append((tb.tb_frame, tb.tb_lineno))
        tb = tb.tb_next
    for frame, line in reversed(frames):
        roots = _graph_roots(frame.f_locals)
        for i, (name_a, node_a) in enumerate(roots):
            seen_a = _interior_nodes(node_a)
            for name_b, node_b in roots[i + 1:]:
                common = _first_common(node_b, seen_a)
                if common is not None:
                    info = frame_info(frame.f_code.co_filename, line, frame.f_code.co_name)
                    return {"tensors": [name_a, name_b], "node": type(common).__name__,
                            **info}
    return None


def _graph_roots(namespace: dict[str, Any]) -> list[tuple[str, Any]]:
    roots: list[tuple[str, Any]] = []
    for name, value in list(namespace.items())[:256]:
        values = value if isinstance(value, (tuple, list)) else (value,)
        for index, item in enumerate(values[:8]):
            if isinstance(item, torch.Tensor) and item.grad_fn is not None:
                label = name if len(values) == 1 else f"{name}[{index}]"
                if not any(node is item.grad_fn for _, node in roots):
                    roots.append((label, item.grad_fn))
    return roots


def _walk(node: Any, limit: int = 20_000) -> list[Any]:
    """Interior autograd nodes reachable from ``node``, nearest first (breadth-first)."""
    order, queue, seen = [], [node], {id(node)}
    while queue and len(order) < limit:
        current = queue.pop(0)
        if type(current).__name__ == "AccumulateGrad":
            continue
        order.append(current)
        for child, _ in getattr(current, "next_functions", ()):
            if child is not None and id(child) not in seen:
                seen.add(id(child))
                queue.append(child)
    return order


def _interior_nodes(node: Any) -> set[int]:
    return {id(n) for n in _walk(node)}


def _first_common(node: Any, others: set[int]) -> Any:
    return next((n for n in _walk(node) if id(n) in others), None)


@probe("anomaly_rerun")
@never_raises
def anomaly_rerun(ctx: ProbeContext) -> dict:
    facts: dict[str, Any] = dict.fromkeys(
        ("error_type", "error_message", "backward_op", "forward_file", "forward_line",
         "forward_code", "module", "forward_function"))
    facts["raised"] = False
    if ctx.model is None:
        return result("inconclusive", "no model to rerun", facts)
    run = rerun_under_anomaly(ctx)
    frame = user_forward_frame(run)
    facts["backward_op"] = run.node
    facts["forward_stack"] = [f for f in run.forward_frames if file_kind(f["file"]) == USER]
    if frame is not None:
        facts.update(forward_file=frame["file"], forward_line=frame["line"],
                     forward_code=frame["code"], forward_function=frame["function"],
                     module=run.line_modules.get((frame["file"], frame["line"])))
    facts["shared_graph"] = shared_graph(run.error) or shared_graph(ctx.extras.get("exception"))
    if run.error is None:
        if facts["shared_graph"] is not None:
            return _shared_graph_result(facts)
        return result("pass", "forward and backward ran clean under anomaly detection "
                      "(no NaN produced in backward)", facts)
    facts.update(error_facts(run.error), raised=True)
    summary = f"{facts['error_type']}: {first_line(facts['error_message'], 140)}"
    if frame is not None:
        summary = (f"{run.node or 'the failing op'} was built by `{frame['code']}` at "
                   f"{file_name(frame['file'])}:{frame['line']} in {frame['function']}"
                   + (f" (module {facts['module']})" if facts["module"] else "")
                   + f" — {summary}")
        loc = {"module": facts["module"], "op": run.node, "file": frame["file"],
               "line": frame["line"]}
        return result("fail", summary, facts, loc)
    return result("fail", summary + " (anomaly mode gave no forward trace in user code)", facts)


def _shared_graph_result(facts: dict[str, Any]) -> dict:
    """The rerun (one backward) ran clean, but the failure shows two graphs sharing a node."""
    shared = facts["shared_graph"]
    a, b = shared["tensors"]
    summary = (f"one backward runs clean; in the failure, the graphs of `{a}` and `{b}` meet at"
               f" {shared['node']}, so the backward at {file_name(shared['file'])}:{shared['line']}"
               f" (`{shared['code']}`) walked into the part the first backward freed")
    loc = {"module": None, "op": shared["node"], "file": shared["file"], "line": shared["line"]}
    return result("fail", summary, facts, loc)


def parse_inplace_message(message: str) -> dict[str, Any] | None:
    match = _INPLACE.search(message)
    if not match:
        return None
    raw_type = match["type"].rsplit(".", 1)[-1].replace("Tensor", "")
    return {
        "tensor_shape": [int(d) for d in match["shape"].split(",") if d.strip()],
        "tensor_dtype": _TENSOR_TYPES.get(raw_type, match["type"]),
        "producing_op": match["op"],
        "output_index": int(match["output"]),
        "version_found": int(match["found"]),
        "version_expected": int(match["expected"]),
    }


@probe("inplace_finder")
@never_raises
def inplace_finder(ctx: ProbeContext) -> dict:
    facts: dict[str, Any] = dict.fromkeys(
        ("op", "file", "line", "code", "tensor_shape", "version_expected", "version_found",
         "producing_op", "saved_by_file", "saved_by_line", "saved_by_code", "module"))
    facts.update(found=False, inplace_ops=[])
    if ctx.model is None:
        return result("inconclusive", "no model to rerun", facts)
    run = rerun_under_anomaly(ctx)
    message = str(run.error) if run.error is not None else (ctx.error or {}).get("message", "")
    parsed = parse_inplace_message(message or "")
    if parsed:
        facts.update(parsed)
    facts["inplace_ops"] = run.inplace_ops[:20]
    if run.error is not None:
        facts.update(error_facts(run.error))
    saver = user_forward_frame(run)
    if saver is not None:
        facts.update(saved_by_file=saver["file"], saved_by_line=saver["line"],
                     saved_by_code=saver["code"], backward_op=run.node)
    if parsed is None:
        if run.error is None:
            return result("pass", "the step ran clean: no in-place modification error here",
                          facts)
        return result("inconclusive", "the rerun failed, but not with the in-place error: "
                      f"{first_line(message, 140)}", facts)
    culprit = _match_inplace(run, parsed["tensor_shape"], saver)
    if culprit is None:
        return result("inconclusive", f"a {parsed['tensor_shape']} tensor saved by "
                      f"{parsed['producing_op']} was modified in place, but no recorded "
                      "in-place op matches it", facts)
    info = frame_info(culprit["file"], culprit["line"], culprit["function"])
    facts.update(found=True, op=culprit["op"], file=culprit["file"], line=culprit["line"],
                 code=info["code"], function=culprit["function"], module=culprit["module"])
    summary = (f"`{info['code']}` ({culprit['op']}) at {file_name(culprit['file'])}:"
               f"{culprit['line']} modifies the {parsed['tensor_shape']} tensor that "
               f"{parsed['producing_op']} saved")
    if saver is not None:
        summary += f" at {file_name(saver['file'])}:{saver['line']} (`{saver['code']}`)"
    loc = {"module": culprit["module"], "op": culprit["op"], "file": culprit["file"],
           "line": culprit["line"]}
    return result("fail", summary, facts, loc)


def _match_inplace(run: AnomalyRun, tensor_shape: list[int],
                   saver: dict[str, Any] | None) -> dict[str, Any] | None:
    """The first in-place op on a tensor of the saved shape, after the op that saved it."""
    candidates = [op for op in run.inplace_ops if op["shape"] == tensor_shape]
    if saver is not None:
        saved_at = run.first_seen.get((saver["file"], saver["line"]), 0)
        after = [op for op in candidates if op["order"] > saved_at
                 and (op["file"], op["line"]) != (saver["file"], saver["line"])]
        candidates = after or candidates
    return candidates[0] if candidates else None
