"""The recording as a graph: which event produced each tensor, and walks along it.

A tensor is known by its recorded identity and version: an in-place write
produces the same identity at a higher version, and a view shares its
base's version counter, so writes are matched through the base as well.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Tensor = dict[str, Any]
Event = dict[str, Any]


class Graph:
    def __init__(self, recording: dict[str, Any]) -> None:
        self.events: list[Event] = list(recording.get("events") or [])
        self.failure: Event | None = recording.get("failure")
        self.dropped = int(recording.get("dropped") or 0)
        self.outer_frame: dict[str, Any] | None = recording.get("outer_frame")
        self._producers: dict[int, list[Event]] = {}
        for event in self.events:
            for out in event.get("outputs") or []:
                self._producers.setdefault(out["id"], []).append(event)

    def producer(self, tensor: Tensor, before: int) -> Event | None:
        """The latest event before ``before`` that produced this tensor (any version)."""
        found = None
        for event in self._producers.get(tensor["id"], ()):
            if event["seq"] >= before:
                break
            found = event
        return found

    def walk_back(self, tensor: Tensor, before: int,
                  carries: Callable[[Tensor], bool]) -> list[Event]:
        """The producing events, latest first, along inputs that still carry the property.

        Stops at the event none of whose inputs carries it: there the property
        was made (a cast, a flatten, a source). At most one path is followed,
        the first input that carries it, so the walk is linear in the recording.
        """
        chain: list[Event] = []
        seen: set[int] = set()
        current, limit = tensor, before
        while True:
            event = self.producer(current, limit)
            if event is None or event["seq"] in seen:
                return chain
            seen.add(event["seq"])
            chain.append(event)
            parent = next((t for t in event.get("inputs") or [] if carries(t)), None)
            if parent is None:
                return chain
            current, limit = parent, event["seq"]

    def main_input(self, event: Event) -> Tensor | None:
        """The input that holds the data an op transforms: the first tensor with a producer
        or, failing that, the first tensor (a weight has no producer in the recording)."""
        inputs = event.get("inputs") or []
        for t in inputs:
            if self._producers.get(t["id"]):
                return t
        return inputs[0] if inputs else None

    def data_path(self, tensor: Tensor, before: int, through_batches: bool = False
                  ) -> list[Event]:
        """The producing events along each op's main input, latest first.

        A loader's batch ends the path, since the batch dimension begins there;
        ``through_batches`` walks on into the collate and the dataset's items, where
        properties of each sample (its image size) were made.
        """
        chain: list[Event] = []
        current, limit = tensor, before
        seen: set[int] = set()
        while current is not None:
            event = self.producer(current, limit)
            if event is None or event["seq"] in seen:
                break
            seen.add(event["seq"])
            chain.append(event)
            if not (through_batches and event.get("kind") == "batch"):
                current = self.main_input(event)  # a batch: the same tensor, made by collate
            limit = event["seq"]
        return chain

    def writes(self) -> list[tuple[Event, Tensor, int]]:
        """Every in-place write: (event, tensor written, its version before the write)."""
        found = []
        for event in self.events:
            if event.get("kind") == "optimizer_step":
                for param in event.get("outputs") or []:
                    if param.get("version") is not None:
                        found.append((event, param, int(param.get("version_before") or 0)))
            elif event.get("inplace") and event.get("outputs"):
                out = event["outputs"][0]
                if out.get("version") is None:
                    continue  # a tensor that keeps no version (inference mode)
                before = next((t["version"] for t in event.get("inputs") or []
                               if t["id"] == out["id"] and t.get("version") is not None),
                              out["version"] - 1)
                found.append((event, out, before))
        return found

    def users(self, identity: set[int], version: int, before: int) -> list[Event]:
        """Events before ``before`` that read or made a tensor of ``identity`` at ``version``."""
        found = []
        for event in self.events:
            if event["seq"] >= before:
                break
            for t in (event.get("inputs") or []) + (event.get("outputs") or []):
                if _identity(t) & identity and t["version"] == version:
                    found.append(event)
                    break
        return found


def _identity(t: Tensor) -> set[int]:
    return {t["id"], t["base"]} - {None}


identity = _identity
