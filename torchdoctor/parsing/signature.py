"""A message with its numbers, addresses and paths blanked, to tell "the same error came back".

After a fix the shapes or indices in a message change while the error stays the same;
comparing signatures rather than messages lets a session see that.
"""

from __future__ import annotations

import re

HEX = re.compile(r"0x[0-9a-fA-F]+")
NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?")
QUOTED_PATH = re.compile(r"(['\"])(?:[A-Za-z]:)?[\\/][^'\"]*\1")
SPACE = re.compile(r"\s+")
MESSAGE_LINES = 3
LONGEST = 400


def message_signature(error_type: str | None, message: str) -> str:
    head = "\n".join(message.strip().split("\n")[:MESSAGE_LINES])
    head = QUOTED_PATH.sub("<path>", head)
    head = HEX.sub("<hex>", head)
    head = NUMBER.sub("N", head)
    head = SPACE.sub(" ", head).strip()[:LONGEST]
    return f"{error_type or 'Error'}: {head}" if head else (error_type or "Error")
