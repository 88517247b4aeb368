"""Finding the nodes a rewrite applies to, by line and by enclosing function.

A finding names a line (the fix site when provenance found one, else the
line that raised). The node to rewrite is rarely the whole line: it is the
call or statement of the right kind nearest to it, preferably in the same
function. Candidates are ranked, not picked, so that verification can try
the next one when the first does not make the failure go away.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import libcst as cst
from libcst.metadata import MetadataWrapper, ParentNodeProvider, PositionProvider


@dataclass
class Source:
    """One parsed file with the positions and parents of its nodes."""

    text: str
    module: cst.Module
    positions: dict = field(repr=False)
    parents: dict = field(repr=False)

    @classmethod
    def parse(cls, text: str) -> Source:
        wrapper = MetadataWrapper(cst.parse_module(text))
        return cls(text, wrapper.module, dict(wrapper.resolve(PositionProvider)),
                   dict(wrapper.resolve(ParentNodeProvider)))

    def line(self, node: cst.CSTNode) -> int:
        return self.positions[node].start.line

    def last_line(self, node: cst.CSTNode) -> int:
        return self.positions[node].end.line

    def nodes(self, kind: type | tuple[type, ...],
              where: Callable[[cst.CSTNode], bool] = lambda node: True) -> list[cst.CSTNode]:
        """Every node of a kind, in the order it appears in the file."""
        found = [node for node in self.positions if isinstance(node, kind) and where(node)]
        return sorted(found, key=lambda node: (self.positions[node].start.line,
                                               self.positions[node].start.column))

    def ancestors(self, node: cst.CSTNode) -> Iterator[cst.CSTNode]:
        while node in self.parents:
            node = self.parents[node]
            yield node

    def function(self, node: cst.CSTNode) -> cst.FunctionDef | None:
        return next((a for a in self.ancestors(node) if isinstance(a, cst.FunctionDef)), None)

    def statement(self, node: cst.CSTNode) -> cst.CSTNode:
        """The statement line (or compound statement) that holds a node."""
        if isinstance(node, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
            return node
        return next(a for a in self.ancestors(node)
                    if isinstance(a, (cst.SimpleStatementLine, cst.BaseCompoundStatement)))

    def function_at(self, line: int) -> cst.FunctionDef | None:
        """The innermost function whose body spans a line."""
        spans = [f for f in self.nodes(cst.FunctionDef)
                 if self.line(f) <= line <= self.last_line(f)]
        return max(spans, key=self.line, default=None)

    def rank(self, candidates: list[cst.CSTNode], line: int | None,
             prefer_function: str | None = None) -> list[cst.CSTNode]:
        """Nearest first: the site's own line, then its function, then the rest of the file.

        Within a function, a candidate above the site comes before one below it at
        the same distance: what broke the value at the site ran before it.
        """
        if line is None:
            return list(candidates)
        home = self.function_at(line)

        def key(node: cst.CSTNode) -> tuple:
            where = self.function(node)
            distance = self.line(node) - line
            on_line = self.line(node) <= line <= self.last_line(node)
            return (
                not on_line,
                where is not home,
                prefer_function is not None and (where is None or where.name.value != prefer_function),
                abs(distance),
                distance > 0,
            )

        return sorted(candidates, key=key)


def call_name(call: cst.Call) -> str:
    """The last name of what is called: ``nn.Linear`` and ``Linear`` are both 'Linear'."""
    func = call.func
    if isinstance(func, cst.Attribute):
        return func.attr.value
    if isinstance(func, cst.Name):
        return func.value
    return ""


def receiver(call: cst.Call) -> cst.BaseExpression | None:
    """``x`` in ``x.view(...)``; None for a plain function call."""
    return call.func.value if isinstance(call.func, cst.Attribute) else None


def int_value(node: cst.BaseExpression) -> int | None:
    """An integer that the code spells out: ``9216``, ``64 * 12 * 12``, ``-1``."""
    if isinstance(node, cst.Integer):
        return int(node.value.replace("_", ""), 0)
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        inner = int_value(node.expression)
        return None if inner is None else -inner
    if isinstance(node, cst.BinaryOperation):
        left, right = int_value(node.left), int_value(node.right)
        if left is None or right is None:
            return None
        op = node.operator
        if isinstance(op, cst.Multiply):
            return left * right
        if isinstance(op, cst.Add):
            return left + right
        if isinstance(op, cst.Subtract):
            return left - right
        if isinstance(op, cst.FloorDivide) and right:
            return left // right
    return None


def positional(call: cst.Call) -> list[cst.Arg]:
    return [arg for arg in call.args if arg.keyword is None and not arg.star]


def keyword(call: cst.Call, name: str) -> cst.Arg | None:
    return next((arg for arg in call.args if arg.keyword and arg.keyword.value == name), None)
