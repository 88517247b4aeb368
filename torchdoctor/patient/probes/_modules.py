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


def short_label(module: nn.Module) -> str:
    """``Conv2d(1→1, 3×3)``, ``Linear(8→1)``: a module known by its shape, or by its class."""
    kind = type(module).__name__
    if isinstance(module, nn.Linear):
        return f"{kind}({module.in_features}→{module.out_features})"
    if isinstance(module, nn.modules.conv._ConvNd):
        kernel = "×".join(str(k) for k in module.kernel_size)
        return f"{kind}({module.in_channels}→{module.out_channels}, {kernel})"
    return kind


def readable_name(model: nn.Module, path: str | None) -> str:
    """A name a person can find in their model, never an empty string.

    Named paths (``features.3``, ``head``) are kept as ``print(model)`` shows
    them; the root is named by what it is (``Linear(8→1)``, ``Net``), and the
    children of a root container by index (``Sequential[2]``), since a bare
    ``2`` names nothing.
    """
    if path is None:
        return short_label(model)
    if path == "":
        return short_label(model)
    parts = path.split(".")
    lead = []
    while parts and parts[0].isdigit():
        lead.append(parts.pop(0))
    if not lead:
        return path
    head = type(model).__name__ + "".join(f"[{index}]" for index in lead)
    return ".".join([head, *parts])
