"""Where the user's code built each optimizer, noted while a harness is being made.

An optimizer holds the parameters it was given at construction; when the
model is changed afterwards (layers replaced, pruned, moved), the fix belongs
at that construction line, which nothing about the optimizer records. Only
the patient imports this (it imports torch).
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Iterator
from typing import Any

import torch

from torchdoctor.patient.probes._frames import user_frame

_SITES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


@contextlib.contextmanager
def noting_optimizers() -> Iterator[None]:
    """While the block runs, each optimizer built by user code is noted with its line."""
    original = torch.optim.Optimizer.__init__

    def init(self: torch.optim.Optimizer, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        if self not in _SITES:  # a subclass's own super().__init__ comes through once
            site = user_frame(2)
            if site is not None:
                _SITES[self] = site

    torch.optim.Optimizer.__init__ = init
    try:
        yield
    finally:
        torch.optim.Optimizer.__init__ = original


def optimizer_built_at(optimizer: Any) -> dict | None:
    """The user's line that built ``optimizer``, when it was built under ``noting_optimizers``."""
    try:
        return _SITES.get(optimizer)
    except TypeError:
        return None
