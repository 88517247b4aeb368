"""The user's line that called an op, found with a frame walk cheap enough for every op.

The recorder asks for it on every torch op of a training run, so the kind of
each code object (user, library, torch, torchdoctor) is looked up once and
cached; the walk itself only follows ``f_back`` until the first user frame.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from types import CodeType
from typing import Any

from torchdoctor.patient.probes._frames import DOCTOR, INTERNAL, LIBRARY, USER, file_kind

_code_kind: dict[CodeType, int] = {}

# A site is (code object, line); names and source are looked up only when reported.
Site = tuple[CodeType, int]


def code_kind(code: CodeType) -> int:
    kind = _code_kind.get(code)
    if kind is None:
        kind = _code_kind[code] = file_kind(code.co_filename)
    return kind


def transparent(function: Callable[..., Any]) -> Callable[..., Any]:
    """A recorder's wrapper of a torch function (a loader's ``__next__``): the walk passes
    through it as through torch's own frames, so what runs inside (collate) keeps the
    user's line that called it instead of ending at torchdoctor."""
    _code_kind[function.__code__] = INTERNAL
    return function


def user_site(skip: int) -> Site | None:
    """The innermost user frame from ``skip`` frames up; a library frame when no user one.

    A torchdoctor frame ends the walk: past it lies the replay machinery, so an
    op reached only through it was run by torchdoctor, not by the user.
    """
    frame = sys._getframe(skip)
    fallback = None
    while frame is not None:
        code = frame.f_code
        kind = _code_kind.get(code)
        if kind is None:
            kind = code_kind(code)
        if kind == USER:
            return code, frame.f_lineno
        if kind == DOCTOR:
            return fallback
        if kind == LIBRARY and fallback is None:
            fallback = code, frame.f_lineno
        frame = frame.f_back
    return fallback
