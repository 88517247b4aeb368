"""What workers tell the app: each blocking step ends in one of these."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from textual.message import Message


@dataclass
class StepFinished(Message):
    """A phase step finished; ``result`` is what the Investigation step returned."""

    step: str
    result: Any = None


@dataclass
class StepFailed(Message):
    """A step could not finish; ``text`` is for a person, not a stack trace."""

    step: str
    text: str
    cancelled: bool = False
    details: dict = field(default_factory=dict)
