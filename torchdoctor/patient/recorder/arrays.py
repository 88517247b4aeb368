"""Where the array a sample tensor was made from took its shape, inside the user's reader.

The op recorder sees torch ops only; a sample made with ``torch.from_numpy``
or ``torch.tensor`` got its shape earlier, from numpy or PIL (an
``expand_dims`` that keeps a grayscale image as one channel, a
``convert("RGB")`` that gives it three). To find that line the script runs
once more under a line trace of the user's own frames only, noting for every
array (or PIL image) the line where the user's code first held (or returned)
it, until the source op is called at the source line with a sample of the
failing shape.
The line that first held an array of that shape (in any axis order, since a
transpose only moves the channels) is where the sample took it.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

import torch

from torchdoctor.patient.probes._frames import USER
from torchdoctor.patient.recorder.replay import run_as_first_run
from torchdoctor.patient.recorder.sites import code_kind, transparent

# Arrays remembered at most: a reader of thousands of files still stops well short of it.
_MAX_ARRAYS = 20_000


class _Reached(Exception):
    """The source op was called with the failing sample: the trace has what it needs."""


class ArrayOrigins:
    def __init__(self, file: str, line: int, op: str, shape: list[int]) -> None:
        self.target = (file, line)
        self.op = op.rsplit(".", 1)[-1]
        self.dims = sorted(shape)
        self.origin: tuple[str, int] | None = None
        self._first_held: dict[int, tuple[tuple[str, int], list[int]]] = {}
        self._kept: list[Any] = []  # alive, so that no id is reused for another array
        self._previous: dict[FrameType, int] = {}

    # ------------------------------------------------------------ the trace

    def _global(self, frame: FrameType, event: str, arg: Any) -> Any:
        if event != "call" or code_kind(frame.f_code) != USER:
            return None
        caller = frame.f_back
        if caller is not None:  # its arguments were made where it was called
            self._hold(frame, (caller.f_code.co_filename, caller.f_lineno))
        return self._local

    def _local(self, frame: FrameType, event: str, arg: Any) -> Any:
        previous = self._previous.get(frame)
        if previous is not None and event in ("line", "return"):
            self._hold(frame, (frame.f_code.co_filename, previous))
        if event == "line":
            self._previous[frame] = frame.f_lineno
        elif event == "return":
            self._previous.pop(frame, None)
            # What it returns without naming it (``return scan[:, :, None]``) is made there.
            self._note(arg, (frame.f_code.co_filename, frame.f_lineno))
        return self._local

    def _hold(self, frame: FrameType, where: tuple[str, int]) -> None:
        for value in list(frame.f_locals.values()):
            self._note(value, where)

    def _note(self, value: Any, where: tuple[str, int]) -> None:
        if len(self._first_held) >= _MAX_ARRAYS or id(value) in self._first_held:
            return
        dims = _array_dims(value)
        if dims is not None:
            self._first_held[id(value)] = (where, dims)
            self._kept.append(value)

    # ------------------------------------------------------------ the source op

    def _source(self, original: Any) -> Any:
        def source(*args: Any, **kwargs: Any) -> Any:
            out = original(*args, **kwargs)
            caller = sys._getframe(1)
            here = (caller.f_code.co_filename, caller.f_lineno)
            if (here == self.target and isinstance(out, torch.Tensor)
                    and sorted(out.shape) == self.dims):
                self.origin = self._made(args[0] if args else None)
                raise _Reached
            return out

        return transparent(source)

    def _made(self, array: Any) -> tuple[str, int] | None:
        held = self._first_held.get(id(array))
        if held is not None:
            return held[0]
        # A temporary (``np.transpose(img, ...)``): the first array of that shape held.
        return next((where for where, dims in self._first_held.values()
                     if sorted(dims) == self.dims), None)

    @contextmanager
    def tracing(self) -> Iterator[None]:
        original = getattr(torch, self.op)
        setattr(torch, self.op, self._source(original))
        previous = sys.gettrace()
        sys.settrace(self._global)
        try:
            yield
        finally:
            sys.settrace(previous)
            setattr(torch, self.op, original)
            self._kept.clear()


def _array_dims(value: Any) -> list[int] | None:
    """The dims of a numpy array or a PIL image (height, width, bands); None for the rest."""
    if isinstance(value, torch.Tensor):
        return None
    shape = getattr(value, "shape", None)
    if shape is not None and hasattr(value, "__array_interface__"):
        return [int(d) for d in shape] if isinstance(shape, tuple) else None
    bands = getattr(value, "getbands", None)
    size = getattr(value, "size", None)
    if callable(bands) and isinstance(size, tuple) and len(size) == 2:
        return [int(size[1]), int(size[0]), len(bands())]
    return None


def array_origin(script: dict[str, Any], source: dict[str, Any]) -> dict[str, Any] | None:
    """``{file, line}`` where the array behind ``source`` (the recording's ``data_source``)
    took its shape, or None when the trace did not reach the source op with that shape."""
    if source.get("op", "").rsplit(".", 1)[-1] not in ("from_numpy", "tensor", "as_tensor"):
        return None
    origins = ArrayOrigins(source["file"], source["line"], source["op"], source["shape"])
    with origins.tracing():
        run_as_first_run(script["path"], script.get("argv") or [], script.get("cwd"))
    if origins.origin is None:
        return None
    return {"file": origins.origin[0], "line": origins.origin[1]}
