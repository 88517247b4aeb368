"""Reading the recording of the failing run: who made a tensor, and where its values came from.

The recording (``patient/recorder``) names every tensor by a serial and
lists, per op, the serials it read and wrote. A probe that has found the
failing operand walks back from it: the op that produced it, and through
ops that only move values (views, indexing, stacking in collate, dtype and
device copies) to the tensor the values were first written into.
"""

from __future__ import annotations

from typing import Any

from torchdoctor.patient.probes._frames import USER, file_kind, frame_info

# Ops that move or select values without computing new ones.
MOVES = frozenset({
    "Tensor.view", "Tensor.reshape", "torch.reshape", "Tensor.flatten", "torch.flatten",
    "Tensor.squeeze", "Tensor.unsqueeze", "torch.squeeze", "torch.unsqueeze",
    "Tensor.__getitem__", "torch.stack", "torch.cat", "torch.concat", "Tensor.to",
    "Tensor.long", "Tensor.int", "Tensor.float", "Tensor.double", "Tensor.cpu",
    "Tensor.cuda", "Tensor.contiguous", "Tensor.clone", "Tensor.permute",
    "Tensor.transpose", "Tensor.t", "Tensor.expand", "Tensor.index_select",
    "torch.index_select", "Tensor.view_as", "Tensor.reshape_as", "Tensor.detach",
})


class Producers:
    """The op that last produced each tensor serial, and the in-place writes into it,
    among the events before ``before`` (a failure's ``seq``)."""

    def __init__(self, recording: dict[str, Any], before: int | None = None) -> None:
        self.made: dict[int, dict[str, Any]] = {}
        self.writes: dict[int, list[dict[str, Any]]] = {}
        for event in recording.get("events") or []:
            if event.get("kind") != "op" or (before is not None and event.get("seq", 0) >= before):
                continue
            for out in event.get("outputs") or []:
                if event.get("inplace"):
                    self.writes.setdefault(out["id"], []).append(event)
                else:
                    self.made[out["id"]] = event

    def of(self, serial: int | None) -> dict[str, Any] | None:
        return self.made.get(serial) if serial is not None else None

    def source(self, serial: int, bases: dict[int, int | None] | None = None
               ) -> tuple[int, dict[str, Any] | None]:
        """The serial the values of ``serial`` were first written into (through moves and
        views), and the op that made it."""
        seen: set[int] = set()
        while serial not in seen:
            seen.add(serial)
            event = self.made.get(serial)
            if event is None or event.get("op") not in MOVES:
                return serial, event
            inputs = [t for t in event.get("inputs") or [] if t.get("id") is not None]
            if not inputs:
                return serial, event
            first = inputs[0]
            serial = first["base"] if first.get("base") is not None else first["id"]
        return serial, self.made.get(serial)

    def last_write(self, serial: int) -> dict[str, Any] | None:
        writes = self.writes.get(serial) or []
        return writes[-1] if writes else None


def site(event: dict[str, Any] | None) -> dict[str, Any] | None:
    """An event's user line as a finding's site, or None outside the user's files."""
    if not event or not event.get("file") or file_kind(event["file"]) != USER:
        return None
    found = frame_info(event["file"], event["line"], event.get("function") or "")
    found["module"] = event.get("module")
    return found
