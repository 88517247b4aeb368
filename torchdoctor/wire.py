"""The doctor–patient wire format, shared by both sides and free of torch.

One JSON object per line on a dedicated pipe pair, never on stdout, so that
whatever the user's code prints cannot corrupt a message. Every message
carries the protocol version; both sides ignore fields they do not know.
"""

from __future__ import annotations

import json
import os
from typing import Any

PROTOCOL_VERSION = 1
OPS = ("hello", "load_harness", "run_script", "probe", "shutdown")
# The most a single message may grow to before the reader gives up on it.
MAX_MESSAGE_BYTES = 64 * 1024 * 1024


class ProtocolError(Exception):
    """A line on the channel that is not a message of this protocol."""


def encode(message: dict[str, Any]) -> bytes:
    """One message as one line; ``default=repr`` so an odd fact never breaks a reply."""
    body = dict(message)
    body.setdefault("v", PROTOCOL_VERSION)
    return json.dumps(body, default=repr, separators=(",", ":")).encode() + b"\n"


def decode(line: bytes) -> dict[str, Any]:
    try:
        message = json.loads(line)
    except ValueError as exc:
        raise ProtocolError(f"not JSON: {line[:200]!r}") from exc
    if not isinstance(message, dict):
        raise ProtocolError(f"not a JSON object: {line[:200]!r}")
    version = message.get("v")
    if version != PROTOCOL_VERSION:
        raise ProtocolError(f"protocol version {version!r}, expected {PROTOCOL_VERSION}")
    return message


def request(msg_id: int, op: str, **fields: Any) -> dict[str, Any]:
    return {"v": PROTOCOL_VERSION, "id": msg_id, "op": op, **fields}


def ok_reply(msg_id: Any, **fields: Any) -> dict[str, Any]:
    return {"v": PROTOCOL_VERSION, "id": msg_id, "ok": True, **fields}


def error_reply(msg_id: Any, type_: str, message: str, traceback: str = "",
                **fields: Any) -> dict[str, Any]:
    error = {"type": type_, "message": message, "traceback": traceback}
    return {"v": PROTOCOL_VERSION, "id": msg_id, "ok": False, "error": error, **fields}


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


class LineReader:
    """Splits bytes from a file descriptor into lines without a file object.

    A file object would buffer past the line we need; the client multiplexes
    this fd with ``select`` and must know exactly what is already buffered.
    """

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._buffer = bytearray()
        self.eof = False

    def pop_line(self) -> bytes | None:
        end = self._buffer.find(b"\n")
        if end < 0:
            return None
        line = bytes(self._buffer[:end])
        del self._buffer[: end + 1]
        return line

    def fill(self) -> bool:
        """Read once; False at end of file."""
        chunk = os.read(self.fd, 1 << 16)
        if not chunk:
            self.eof = True
            return False
        self._buffer += chunk
        if len(self._buffer) > MAX_MESSAGE_BYTES:
            raise ProtocolError(f"message larger than {MAX_MESSAGE_BYTES} bytes")
        return True

    def read_line(self) -> bytes | None:
        """Block until a whole line arrives; None at end of file."""
        while True:
            line = self.pop_line()
            if line is not None:
                return line
            if not self.fill():
                return None
