"""The torch versions a report names, and what moving between them changed.

Some causes exist only across one release: torch 0.4 removed ``volatile`` (and merged
``Variable`` into ``Tensor``), so code written for 0.3 or earlier that ran its
evaluation on volatile inputs builds the whole graph under 0.4 and later, and runs out
of memory where it used to fit. A report tells that crossing by naming a version on
each side of the release ("runs under pytorch 0.3.0, fails under 0.4.0"), or by naming
the newer torch it ported or upgraded old code to ("adapted it to torch 1.0.1") in a
report about memory; the reading words it as a phrase the symptom regexes know.
"""

from __future__ import annotations

import re

from torchdoctor.linear_regex import bounded

# "pytorch 0.3.0", "torch==1.0.1", "PyTorch v0.4", "pytorch0.4.0", "torch version 1.2"
_VERSION = re.compile(
    r"\b(?:py)?torch\s*(?:version\s*|==\s*|v)?(\d{1,2})\.(\d{1,2})(?:\.\d{1,3})?(?![\d.]*\d)",
    re.IGNORECASE)
# Old code brought to a newer torch, or the difference of versions blamed; not torch
# itself upgraded ("after upgrading to pytorch 0.4.1"), which says nothing of the code.
_PORTED = re.compile(
    r"\b(?:adapt\w*|port(?:ed|ing)|migrat\w*|compatib\w*|version difference"
    r"|(?:upgrad|updat|convert)\w*\s+(?:the\s+|my\s+|this\s+|their\s+)?(?:code|repo\w*|project|scripts?))\b",
    re.IGNORECASE)
_MEMORY = re.compile(r"\b(?:out of memory|oom|memory)\b", re.IGNORECASE)
# "I already replaced volatile=True with torch.no_grad()"
_FLAG_REPLACED = re.compile(
    r"\balready\b[^.\n]{0,30}\b(?:replaced|removed|changed|swapped|switched|converted|use[ds]?|wrapped)\b"
    r"[^.\n]{0,60}\b(?:volatile|no_grad)\b", re.IGNORECASE)
_VOLATILE_REMOVED = (0, 4)
# Ports of pre-0.4 code happened while 1.x was current; later releases say nothing of it.
_PORT_ERA_END = (2, 0)


def versions(text: str) -> list[tuple[int, int]]:
    """Every torch version a text names, as (major, minor), in order."""
    return [(int(found.group(1)), int(found.group(2)))
            for found in _VERSION.finditer(bounded(text))]


def readings(text: str) -> list[str]:
    """Code older than torch 0.4 run on a torch that removed ``volatile``, in a report
    about memory that has not already replaced the flag.

    Two releases at or after 0.4 named together (0.4.0 fine, 0.4.1 not) are a
    regression between them, not old code; and a report that already moved its
    evaluation to ``no_grad`` has ruled the flag out.
    """
    text = bounded(text)
    if not _MEMORY.search(text) or _FLAG_REPLACED.search(text):
        return []
    named = versions(text)
    older = any(version < _VOLATILE_REMOVED for version in named)
    newer = {version for version in named if version >= _VOLATILE_REMOVED}
    ported = (len(newer) == 1 and min(newer) < _PORT_ERA_END and not older
              and _PORTED.search(text))
    if newer and (older or ported):
        return ["code from before torch 0.4 run on a later torch"]
    return []
