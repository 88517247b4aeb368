"""The ``state_dict_diff`` probe: the checkpoint against the model it was loaded into.

``load_state_dict`` lists every key it missed and every shape it could not
copy; what a person needs is the pattern: one wrapper prefix on every key
(``module.`` from DataParallel, ``_orig_mod.`` from torch.compile), whole
layers missing or renamed, or a head of another size (1000 classes into 7).
The failing frame holds both the checkpoint and the model.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
from torch import nn

from torchdoctor.patient.context import ProbeContext
from torchdoctor.patient.probes import probe, result
from torchdoctor.patient.probes._errors import first_line, never_raises
from torchdoctor.patient.probes._failing_frames import (
    built_at,
    failing_exception,
    find_local,
    innermost_user_site,
)
from torchdoctor.patient.recorder.replay import recording_for
from torchdoctor.provenance.sites import site

PROBE_FACTS = ("checkpoint_keys", "model_keys", "missing_count", "unexpected_count",
               "mismatched_count", "missing_by_layer", "unexpected_by_layer", "size_mismatches",
               "prefix_in_checkpoint", "prefix_in_model", "matches_after_prefix",
               "head_mismatch", "other_mismatches", "transposed_count", "nested_under",
               "error_type", "error_message")
WRAPPER_PREFIXES = ("module.", "_orig_mod.")
_NESTING_KEYS = ("state_dict", "model_state_dict", "model", "net", "weights")


@probe("state_dict_diff")
@never_raises
def state_dict_diff(ctx: ProbeContext | None) -> dict:
    facts: dict[str, Any] = dict.fromkeys(PROBE_FACTS)
    exc = failing_exception(ctx)
    if exc is not None:
        facts.update(error_type=type(exc).__name__, error_message=first_line(str(exc), 500))
    found = find_local(exc, lambda name, value: name == "state_dict"
                       and isinstance(value, Mapping))
    model = found[1].f_locals.get("self") if found is not None else None
    if found is None or not isinstance(model, nn.Module):
        return result("inconclusive", "the failure's frames hold no load_state_dict call with"
                      " its checkpoint and model", facts)
    checkpoint = _tensors_of(found[0])
    nested = _nested(found[0]) if not checkpoint else None
    if nested is not None:
        facts["nested_under"] = nested
        checkpoint = _tensors_of(found[0][nested])
    wanted = {key: list(t.shape) for key, t in model.state_dict().items()}
    facts.update(checkpoint_keys=len(checkpoint), model_keys=len(wanted))
    in_ckpt, in_model, matched = _prefixes(set(checkpoint), set(wanted))
    facts.update(prefix_in_checkpoint=in_ckpt, prefix_in_model=in_model,
                 matches_after_prefix=matched)
    missing = sorted(set(wanted) - set(checkpoint))
    unexpected = sorted(set(checkpoint) - set(wanted))
    mismatches = [_mismatch(key, checkpoint[key], wanted[key], model)
                  for key in sorted(set(wanted) & set(checkpoint))
                  if checkpoint[key] != wanted[key]]
    facts.update(missing_count=len(missing), unexpected_count=len(unexpected),
                 mismatched_count=len(mismatches), missing_by_layer=_by_layer(missing),
                 unexpected_by_layer=_by_layer(unexpected), size_mismatches=mismatches,
                 head_mismatch=next((m["head"] for m in mismatches if m.get("head")), None),
                 other_mismatches=sum(1 for m in mismatches if not m.get("head")),
                 transposed_count=sum(1 for m in mismatches if m.get("transposed")))
    answer = _verdict(facts)
    # Keys are renamed, stripped or skipped where the checkpoint is loaded: the load call;
    # a checkpoint saved with the wrapper's prefix is fixed where it was saved, when the
    # failing run saved it itself.
    load = innermost_user_site(exc)
    at_load = ({**{k: load[k] for k in ("file", "line", "code")}, "module": None}
               if load else None)
    answer["raised_at"] = at_load
    answer["fix_at"] = at_load if answer["status"] == "fail" else None
    if facts["prefix_in_checkpoint"] and ctx is not None and ctx.source == "script":
        answer["fix_at"] = _saved_at(recording_for(ctx)) or answer["fix_at"]
    elif _built_differently(facts) and answer["status"] == "fail":
        # A parameter of another size was made by the model's constructor arguments
        # (num_classes=751, hidden=256): the fix is where the model was built.
        built = built_at(exc, model)
        if built is not None:
            answer["fix_at"] = {**{k: built[k] for k in ("file", "line", "code")},
                                "module": None}
    return answer


def _built_differently(facts: dict[str, Any]) -> bool:
    """Shapes differ only in size (a transposed copy is fixed where it is converted)."""
    return bool(facts["mismatched_count"]) and not facts["transposed_count"] \
        and not facts["prefix_in_model"]


def _saved_at(recording: dict) -> dict | None:
    """The ``torch.save`` that wrote the file the last ``torch.load`` read, in this run."""
    files = [e for e in recording.get("events") or [] if e.get("kind") == "file"]
    loads = [e for e in files if e["op"] == "torch.load" and e.get("path")]
    if not loads or not recording.get("reproduced"):
        return None
    saves = [e for e in files if e["op"] == "torch.save" and e.get("path") == loads[-1]["path"]
             and e["seq"] < loads[-1]["seq"]]
    return site(saves[-1]) if saves else None


def _verdict(facts: dict[str, Any]) -> dict:
    if facts["nested_under"] is not None and not (facts["missing_count"]
                                                  or facts["mismatched_count"]):
        return result("fail", f"the checkpoint keeps the weights under"
                      f" [{facts['nested_under']!r}]: load that, not the whole dict", facts)
    if facts["prefix_in_checkpoint"] or facts["prefix_in_model"]:
        side, prefix = (("checkpoint", facts["prefix_in_checkpoint"])
                        if facts["prefix_in_checkpoint"] else
                        ("model", facts["prefix_in_model"]))
        return result("fail", f"every key of the {side} starts with {prefix!r}; without it"
                      f" {facts['matches_after_prefix']} of {facts['model_keys']} model keys"
                      " match", facts)
    if facts["head_mismatch"]:
        head = facts["head_mismatch"]
        return result("fail", f"{head['layer']} is a head of {head['checkpoint_classes']}"
                      f" classes in the checkpoint and {head['model_classes']} in the model",
                      facts)
    if facts["mismatched_count"] or facts["missing_count"] or facts["unexpected_count"]:
        parts = []
        if facts["mismatched_count"]:
            parts.append(f"{facts['mismatched_count']} shapes differ")
        if facts["missing_count"]:
            parts.append(f"missing: {', '.join(list(facts['missing_by_layer'])[:4])}")
        if facts["unexpected_count"]:
            parts.append(f"unexpected: {', '.join(list(facts['unexpected_by_layer'])[:4])}")
        return result("fail", "; ".join(parts), facts)
    return result("pass", f"the checkpoint's {facts['checkpoint_keys']} keys match the model's"
                  " names and shapes", facts)


def _tensors_of(mapping: Mapping) -> dict[str, list[int]]:
    return {str(key): list(value.shape) for key, value in mapping.items()
            if isinstance(value, torch.Tensor)}


def _nested(mapping: Mapping) -> str | None:
    """A training checkpoint (``{"epoch": 3, "state_dict": {...}}``) holds the weights one down."""
    for key in _NESTING_KEYS:
        value = mapping.get(key)
        if isinstance(value, Mapping) and _tensors_of(value):
            return key
    return None


def _prefixes(checkpoint: set[str], model: set[str]) -> tuple[str | None, str | None, int]:
    """A wrapper prefix on every key of one side, and how many keys match without it."""
    for prefix in WRAPPER_PREFIXES:
        if checkpoint and all(k.startswith(prefix) for k in checkpoint) and not all(
                k.startswith(prefix) for k in model):
            return prefix, None, len({k[len(prefix):] for k in checkpoint} & model)
        if model and all(k.startswith(prefix) for k in model) and not all(
                k.startswith(prefix) for k in checkpoint):
            return None, prefix, len({prefix + k for k in checkpoint} & model)
    return None, None, len(checkpoint & model)


def _by_layer(keys: list[str]) -> dict[str, list[str]]:
    grouped: dict[str, list[str]] = {}
    for key in keys:
        layer, _, name = key.rpartition(".")
        grouped.setdefault(layer or "(top level)", []).append(name)
    return grouped


def _mismatch(key: str, saved: list[int], wanted: list[int], model: nn.Module) -> dict:
    layer, _, name = key.rpartition(".")
    module = dict(model.named_modules()).get(layer)
    entry: dict[str, Any] = {"key": key, "checkpoint": saved, "model": wanted,
                             "module": type(module).__name__ if module is not None else None}
    meaning = f"{key}: {saved} in the checkpoint, {wanted} in the model"
    if saved == list(reversed(wanted)):
        entry["transposed"] = True
        meaning = f"{key} is stored transposed: {saved} against {wanted}"
    elif len(saved) == len(wanted) and saved[1:] == wanted[1:] and saved[0] != wanted[0]:
        meaning = f"{layer} emits {saved[0]} outputs in the checkpoint and {wanted[0]} here"
        if module is not None and _is_last_layer(model, module) and name in ("weight", "bias"):
            entry["head"] = {"layer": layer, "checkpoint_classes": saved[0],
                             "model_classes": wanted[0]}
            meaning = (f"{layer} is a head of {saved[0]} classes in the checkpoint, loaded into"
                       f" a head of {wanted[0]}: replace or skip the head's keys when"
                       " fine-tuning")
    elif len(saved) == len(wanted) >= 2 and saved[0] == wanted[0] and saved[1] != wanted[1]:
        meaning = f"{layer} takes {saved[1]} inputs in the checkpoint and {wanted[1]} here"
    entry["meaning"] = meaning
    return entry


def _is_last_layer(model: nn.Module, module: nn.Module) -> bool:
    """The last module with its own parameters, in registration order."""
    last = None
    for sub in model.modules():
        if any(True for _ in sub.parameters(recurse=False)):
            last = sub
    return last is module
