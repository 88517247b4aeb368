"""The frames of the captured failure, where the objects a probe needs still live.

A script's failure keeps its frames alive: the collate call holds the
samples of the failing batch, ``load_state_dict`` holds the checkpoint and
the model, a loss holds its input and target. Probes read them from here
when there is no harness to rebuild them from.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any

from torchdoctor.patient.context import ProbeContext
from torchdoctor.patient.probes._frames import DOCTOR, USER, file_kind, frame_info
from torchdoctor.provenance.sites import last_binding


def failing_exception(ctx: ProbeContext | None) -> BaseException | None:
    return (ctx.extras.get("exception") if ctx is not None else None)


def frames(exc: BaseException | None) -> Iterator[tuple[FrameType, int]]:
    """(frame, line) of the failure, innermost first, torchdoctor's own frames left out;
    the exceptions it was raised from or during are searched after it."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        tb, found = exc.__traceback__, []
        while tb is not None:
            if file_kind(tb.tb_frame.f_code.co_filename) != DOCTOR:
                found.append((tb.tb_frame, tb.tb_lineno))
            tb = tb.tb_next
        yield from reversed(found)
        exc = exc.__cause__ or exc.__context__


def find_local(exc: BaseException | None, test: Callable[[str, Any], bool]
               ) -> tuple[Any, FrameType, int] | None:
    """The innermost local for which ``test(name, value)`` holds, with its frame and line."""
    for frame, line in frames(exc):
        for name, value in list(frame.f_locals.items()):
            if test(name, value):
                return value, frame, line
    return None


def innermost_user_site(exc: BaseException | None) -> dict[str, Any] | None:
    """The user's line the failure came through: where a fix is read in context."""
    for frame, line in frames(exc):
        if file_kind(frame.f_code.co_filename) == USER:
            return frame_info(frame.f_code.co_filename, line,
                              getattr(frame.f_code, "co_qualname", frame.f_code.co_name))
    return None


def built_at(exc: BaseException | None, obj: Any) -> dict[str, Any] | None:
    """Where the user's program brought ``obj`` into being, seen from its outermost frame.

    The outermost user frame is where the program decides what it builds: when
    it holds ``obj`` under a name, the line that last bound that name (``model
    = Net(751)``, then passed to a loader); when it does not hold it yet, the
    line still running, which builds it (``net = make_net(50, pretrained=True)``).
    """
    outermost = None
    tb = exc.__traceback__ if exc is not None else None
    while tb is not None:
        if file_kind(tb.tb_frame.f_code.co_filename) == USER:
            outermost = (tb.tb_frame, tb.tb_lineno)
            break
        tb = tb.tb_next
    if outermost is None:
        return None
    frame, line = outermost
    code = frame.f_code
    names = {name for name, value in list(frame.f_locals.items()) if value is obj}
    bound = last_binding(code.co_filename, names, code.co_firstlineno, line)
    return frame_info(code.co_filename, bound or line,
                      getattr(code, "co_qualname", code.co_name))
