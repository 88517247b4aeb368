"""The parser's result types; their ``to_dict`` is the JSON shape in docs/architecture.md."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Frame:
    """One Python frame; ``is_user`` separates the person's code from libraries."""

    file: str
    line: int | None
    function: str | None
    code: str | None
    is_user: bool

    def to_dict(self) -> dict[str, Any]:
        return {"file": self.file, "line": self.line, "function": self.function,
                "code": self.code, "is_user": self.is_user}

    def location(self) -> dict[str, Any]:
        """The user_frame shape: a frame without the is_user flag."""
        return {"file": self.file, "line": self.line, "function": self.function,
                "code": self.code}


@dataclass
class ChainLink:
    """One exception of a chain; ``relation`` says how it follows the link before it."""

    type: str | None
    message: str
    frames: list[Frame] = field(default_factory=list)
    relation: str | None = None
    full_type: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type, "full_type": self.full_type, "message": self.message,
                "relation": self.relation, "frames": [f.to_dict() for f in self.frames]}


def empty_extras() -> dict[str, Any]:
    return {"cpp_frames": [], "cuda_asserts": [], "dataloader_worker": None, "ranks": [],
            "failed_ranks": [], "truncated": False, "warnings": [], "other_errors": [],
            "boilerplate": [], "source": "traceback"}


@dataclass
class ParsedError:
    """The error to diagnose, with the whole chain it came in and what surrounded it.

    ``type``/``message``/``frames`` repeat ``chain[root]`` so that callers that care
    about one error never index the chain themselves.
    """

    type: str | None
    full_type: str | None
    message: str
    frames: list[Frame]
    chain: list[ChainLink]
    root: int
    phase: str
    user_frame: Frame | None
    raw: str
    signature: str
    extras: dict[str, Any] = field(default_factory=empty_extras)

    def to_dict(self) -> dict[str, Any]:
        """The documented wire shape; ``raw`` stays out because it can be megabytes."""
        return {
            "type": self.type,
            "full_type": self.full_type,
            "message": self.message,
            "phase": self.phase,
            "user_frame": self.user_frame.location() if self.user_frame else None,
            "frames": [f.to_dict() for f in self.frames],
            "chain": [link.to_dict() for link in self.chain],
            "root": self.root,
            "signature": self.signature,
            "extras": self.extras,
        }
