"""A rewrite applied to a file's text: the new text and its unified diff."""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import libcst as cst

from torchdoctor.rewrites.locate import Source
from torchdoctor.rewrites.operations import OPERATIONS, NotApplicable


@dataclass
class Patch:
    file: str
    op: str
    what: str
    line: int
    original: str
    patched: str
    label: str = ""  # the file's name as the diff shows it, relative to the project

    @property
    def diff(self) -> str:
        name = self.label or self.file
        return "".join(difflib.unified_diff(
            self.original.splitlines(keepends=True), self.patched.splitlines(keepends=True),
            fromfile=f"a/{name}", tofile=f"b/{name}"))

    def to_dict(self) -> dict:
        return {"file": self.file, "op": self.op, "what": self.what, "line": self.line,
                "diff": self.diff}


def make_patches(file: str, text: str, rewrite: Mapping[str, Any], line: int | None,
                 fields: Mapping[str, Any]) -> list[Patch]:
    """Every candidate patch of one knowledge-base rewrite on one file, best first.

    Raises ``NotApplicable`` with the reason when the file has nothing the
    operation can rewrite, or cannot be parsed.
    """
    try:
        source = Source.parse(text)
    except cst.ParserSyntaxError as problem:
        raise NotApplicable(f"{file} does not parse: {problem.message}") from problem
    op = rewrite["op"]
    try:
        candidates = OPERATIONS[op](source, line, rewrite.get("params") or {}, fields)
    except (KeyError, ValueError, TypeError) as problem:
        raise NotApplicable(f"rewrite {op} needs {problem}") from problem
    patches = []
    for candidate in candidates:
        module = source.module.visit(_Replace(dict(candidate.edits)))
        if module.code != text:
            patches.append(Patch(file, op, candidate.what, candidate.line, text, module.code))
    if not patches:
        raise NotApplicable(f"rewrite {op} changes nothing in {file}")
    return patches


class _Replace(cst.CSTTransformer):
    """All of a candidate's edits in one pass, matched on the original nodes: replacing
    them one by one would rebuild the parents and lose the identity of later targets."""

    def __init__(self, edits: dict) -> None:
        super().__init__()
        self.edits = edits

    def on_leave(self, original_node, updated_node):
        new = self.edits.get(original_node, updated_node)
        # An edit may be a function of the node as the other edits left it (an insertion
        # next to a statement that is itself rewritten).
        return new(updated_node) if callable(new) else new
