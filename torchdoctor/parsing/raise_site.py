"""The message a cut traceback lost, read from the ``raise`` line that printed it.

A paste cut at its last frame, or an exception line cut short ("RuntimeError: grad
can be implicit"), still shows the innermost frame's source: when that line raises
with a plain string (``raise RuntimeError("grad can be implicitly created only for
scalar outputs")``), the string is the message Python printed. The line is parsed
(never run); a message built at run time (an f-string, ``%``, a variable) gives
nothing, because its printed text cannot be known.
"""

from __future__ import annotations

import ast

from torchdoctor.parsing.model import Frame

LONGEST_CODE = 2_000


def raised_message(frames: list[Frame]) -> tuple[str, str] | None:
    """(exception name, message) when the innermost frame raises a literal string."""
    if not frames or not frames[-1].code:
        return None
    code = frames[-1].code.strip()
    if not code.startswith("raise ") or len(code) > LONGEST_CODE:
        return None
    try:
        statement = ast.parse(code).body
    except (SyntaxError, ValueError):
        return None
    if len(statement) != 1 or not isinstance(statement[0], ast.Raise):
        return None
    call = statement[0].exc
    if not isinstance(call, ast.Call) or len(call.args) != 1 or call.keywords:
        return None
    name = call.func.attr if isinstance(call.func, ast.Attribute) else getattr(
        call.func, "id", None)
    text = call.args[0]
    if name is None or not (isinstance(text, ast.Constant) and isinstance(text.value, str)):
        return None
    return name, text.value


def completes(message: str, literal: str) -> bool:
    """Whether the printed ``message`` is the literal cut short (or empty)."""
    cut = message.strip()
    return len(cut) < len(literal) and literal.startswith(cut)
