"""Where something happened, in the user's own files.

A probe reports the user's file and line, never a frame inside torch, the
standard library or torchdoctor. Every walk stops at the first torchdoctor
frame: what lies beyond it is the probe and whatever called the probe (the
worker loop, a test), and an op whose walk reaches torchdoctor before any
user code was run by the probe itself, so it has no user location at all.
"""

from __future__ import annotations

import linecache
import os
import sys
import sysconfig
from types import FrameType
from typing import Any

import torch

import torchdoctor

_TORCH_DIR = os.path.dirname(os.path.abspath(torch.__file__)) + os.sep
_DOCTOR_DIR = os.path.dirname(os.path.abspath(torchdoctor.__file__)) + os.sep
_STDLIB_DIRS = tuple(
    os.path.abspath(p) + os.sep
    for p in {sysconfig.get_paths()["stdlib"], sysconfig.get_paths()["platstdlib"]}
)
_LIBRARY_MARKERS = (os.sep + "site-packages" + os.sep, os.sep + "dist-packages" + os.sep)
_file_kind_cache: dict[str, int] = {}

# How far from "the user's code" a file is: user code, a third-party library (reported
# only when no user frame is found), torch or the standard library (never reported),
# torchdoctor itself (the caller of everything a probe runs, so walks stop there).
USER, LIBRARY, INTERNAL, DOCTOR = 0, 1, 2, 3


def file_kind(filename: str) -> int:
    """Cached: the op recorders ask for every frame of every op the model runs."""
    kind = _file_kind_cache.get(filename)
    if kind is None:
        path = os.path.abspath(filename)
        if path.startswith(_DOCTOR_DIR):
            kind = DOCTOR
        elif filename.startswith("<frozen") or path.startswith(_TORCH_DIR):
            kind = INTERNAL
        elif any(marker in path for marker in _LIBRARY_MARKERS):
            kind = LIBRARY
        elif path.startswith(_STDLIB_DIRS) or filename.startswith("<"):
            kind = INTERNAL
        else:
            kind = USER
        _file_kind_cache[filename] = kind
    return kind


def frame_info(filename: str, line: int, function: str) -> dict[str, Any]:
    """The frame shape every probe reports, with the source line a person recognises."""
    return {
        "file": filename,
        "line": line,
        "function": function,
        "code": linecache.getline(filename, line).strip() or None,
    }


def user_frame(skip: int = 1) -> dict[str, Any] | None:
    """The innermost user frame, starting ``skip`` frames up (1: the caller) and going out.

    ``skip`` must step exactly over the recorder's own frames (a mode's
    ``__torch_function__``, a wrapper, a hook): a torchdoctor frame after that
    point means torchdoctor itself ran the op. A library frame is the answer
    only when no user frame comes before torchdoctor's (a model from a package).
    """
    frame: FrameType | None = sys._getframe(skip)
    fallback = None
    while frame is not None:
        kind = file_kind(frame.f_code.co_filename)
        if kind == DOCTOR:
            break
        if kind == USER:
            return frame_info(frame.f_code.co_filename, frame.f_lineno, _qualname(frame))
        if kind == LIBRARY and fallback is None:
            fallback = frame_info(frame.f_code.co_filename, frame.f_lineno, _qualname(frame))
        frame = frame.f_back
    return fallback


def outer_user_frame(skip: int = 1) -> dict[str, Any] | None:
    """The outermost user frame before torchdoctor's: the line of the user's function that
    torchdoctor called (a harness's ``train_step``) through which the caller was reached.

    Where a training step calls a helper that changes state for the rest of the run
    (a validation that leaves the model in eval mode), the step's own line is where
    the change has to be undone.
    """
    frame: FrameType | None = sys._getframe(skip)
    found = None
    while frame is not None:
        kind = file_kind(frame.f_code.co_filename)
        if kind == DOCTOR:
            break
        if kind == USER:
            found = frame_info(frame.f_code.co_filename, frame.f_lineno, _qualname(frame))
        frame = frame.f_back
    return found


def exception_location(exc: BaseException | None) -> dict[str, Any] | None:
    """The deepest user frame of an exception: the user's line that led to the error.

    A traceback starts where it was caught; frames before the first torchdoctor
    frame (a test that called the probe) do not count, and torchdoctor frames
    deeper down (a recorder's hook) are skipped.
    """
    tb = exc.__traceback__ if exc is not None else None
    best = None
    fallback = None
    state = "outside"  # → "probe" at the first torchdoctor frame → "user" after it
    while tb is not None:
        frame = tb.tb_frame
        kind = file_kind(frame.f_code.co_filename)
        if kind == DOCTOR:
            if state != "user":
                best = fallback = None
                state = "probe"
        else:
            if state == "probe":
                state = "user"
            info = (frame.f_code.co_filename, tb.tb_lineno, _qualname(frame))
            if kind == USER:
                best = info
            elif kind == LIBRARY:
                fallback = info
        tb = tb.tb_next
    chosen = best or fallback
    return frame_info(*chosen) if chosen else None


def _qualname(frame: FrameType) -> str:
    return getattr(frame.f_code, "co_qualname", frame.f_code.co_name)


def location(module: str | None = None, op: str | None = None,
             site: dict[str, Any] | None = None) -> dict[str, Any] | None:
    """Where a probe points: the module, the op, and the user's ``site`` (file, line)."""
    if module is None and op is None and site is None:
        return None
    return {
        "module": module,
        "op": op,
        "file": site.get("file") if site else None,
        "line": site.get("line") if site else None,
    }


def file_name(path: str) -> str:
    """A frame's file without its folders: a summary names the place in one short line."""
    return path.replace("\\", "/").rsplit("/", 1)[-1]
