"""Refuse a YAML text whose shape would crash or flood the loader, before it is loaded.

PyYAML builds nested collections recursively: 100,000 nested brackets crash
the C loader outright (a segfault, not an exception), and libyaml's own parser
slows down quadratically with flow depth on the way. Aliases are shared when
loaded, but every later walk of the data (validation, the JSON cache) copies
them out, so a few lines of nested anchors ("billion laughs") expand
exponentially. A knowledge file may come from anyone, so both are measured
first, with libyaml's scanner and parser, which keep their own stacks and stop
at the first excess:

* nesting deeper than ``DEEPEST`` collections is refused on the line it is seen;
* more than ``MOST_NODES`` nodes once every alias is expanded is refused on the
  line of the alias that crosses the limit.

A real knowledge file nests five or six levels and uses few aliases, if any.
"""

from __future__ import annotations

from typing import Any

DEEPEST = 64
MOST_NODES = 250_000


class ShapeError(ValueError):
    """The text is refused before loading; ``line`` is 1-based."""

    def __init__(self, line: int, message: str):
        super().__init__(message)
        self.line = line


def check_shape(text: str) -> None:
    """Raise ShapeError when ``text`` nests too deep or expands too far; YAML errors pass."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    aliases = _check_depth(yaml, loader, text)
    if aliases:
        _check_expansion(yaml, loader, text)


def _check_depth(yaml: Any, loader: type, text: str) -> bool:
    """Whether the text uses aliases; raises when collections nest deeper than DEEPEST."""
    opening = (yaml.FlowSequenceStartToken, yaml.FlowMappingStartToken,
               yaml.BlockSequenceStartToken, yaml.BlockMappingStartToken)
    closing = (yaml.FlowSequenceEndToken, yaml.FlowMappingEndToken, yaml.BlockEndToken)
    depth = 0
    aliases = False
    try:
        for token in yaml.scan(text, Loader=loader):
            if isinstance(token, opening):
                depth += 1
                if depth > DEEPEST:
                    raise ShapeError(token.start_mark.line + 1,
                                     f"nested deeper than {DEEPEST} levels; not loaded")
            elif isinstance(token, closing):
                depth -= 1
            elif isinstance(token, yaml.AliasToken):
                aliases = True
    except yaml.YAMLError as exc:
        # libyaml >= 0.2.5 scans ahead and stops deep nesting itself, before the token
        # that would pass DEEPEST reaches this loop: the same refusal, in its words.
        if "nesting depth" in str(getattr(exc, "problem", "") or ""):
            mark = getattr(exc, "problem_mark", None)
            raise ShapeError(mark.line + 1 if mark else 0,
                             "nested too deep for the YAML parser; not loaded") from exc
        return False  # the loader reports syntax errors with their line
    return aliases


def _check_expansion(yaml: Any, loader: type, text: str) -> None:
    sizes: dict[str, int] = {}
    open_nodes: list[list] = []  # [expanded size so far, anchor]
    expanded = 0
    try:
        for event in yaml.parse(text, Loader=loader):
            if isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
                open_nodes.append([1, event.anchor])
                weight = 1
            elif isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
                size, anchor = open_nodes.pop()
                if anchor:
                    sizes[anchor] = size
                if open_nodes:
                    open_nodes[-1][0] += size
                continue
            elif isinstance(event, yaml.ScalarEvent):
                weight = 1
                if event.anchor:
                    sizes[event.anchor] = 1
            elif isinstance(event, yaml.AliasEvent):
                weight = sizes.get(event.anchor, 1)
            else:
                continue
            expanded += weight
            if expanded > MOST_NODES:
                raise ShapeError(event.start_mark.line + 1,
                                 f"aliases expand to more than {MOST_NODES:,} nodes; not loaded")
            if open_nodes and not isinstance(event, (yaml.SequenceStartEvent,
                                                     yaml.MappingStartEvent)):
                open_nodes[-1][0] += weight
    except yaml.YAMLError:
        return
