"""Naming modules the way the user's model names them.

A finding points at ``encoder.0`` or ``Linear(in_features=9216, ...)``, the
names a person sees in ``print(model)``, not at Python object ids.
"""

from __future__ import annotations

from torch import nn


def module_paths(model: nn.Module) -> dict[int, str]:
    """id(module) → dotted path, for hooks that are handed the module, not its name."""
    return {id(m): name for name, m in model.named_modules()}


def is_leaf(module: nn.Module) -> bool:
    """A module that runs ops itself rather than through children: where a failure sits."""
    return next(module.children(), None) is None


def module_label(module: nn.Module) -> str:
    """``Linear(in_features=9216, out_features=128, bias=True)``: what the module was built as."""
    extra = module.extra_repr()
    return f"{type(module).__name__}({extra})" if "\n" not in extra else type(module).__name__


def module_of(param_name: str) -> str:
    """'encoder.0.weight' -> 'encoder.0'; a root parameter belongs to ''."""
    return param_name.rpartition(".")[0]


def top_module(names: list[str]) -> str:
    """The shortest common module path of several parameters (e.g. 'encoder')."""
    paths = [module_of(n).split(".") for n in names]
    common: list[str] = []
    for parts in zip(*paths):
        if len(set(parts)) != 1:
            break
        common.append(parts[0])
    return ".".join(common) or module_of(names[0])
