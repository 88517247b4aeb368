"""One wording for "where": a probe's location, and a finding's fix and raise sites."""

from __future__ import annotations

import os
from collections.abc import Callable


def describe_location(location: dict | None, quote: Callable[[str], str] = str,
                      short_paths: bool = False) -> str:
    """``module features.3, op Tensor.view, model.py:23``; ``quote`` wraps each name
    (Markdown passes backticks), ``short_paths`` keeps only the file's name."""
    if not location:
        return ""
    parts = []
    if location.get("module"):
        parts.append(f"module {quote(location['module'])}")
    if location.get("op"):
        parts.append(f"op {quote(location['op'])}")
    if location.get("file"):
        path = os.path.basename(location["file"]) if short_paths else location["file"]
        line = f":{location['line']}" if location.get("line") else ""
        parts.append(quote(f"{path}{line}"))
    return ", ".join(parts)


def describe_site(site: dict | None, short_paths: bool = True) -> str:
    """``model.py:23 (features.3): x = x.view(x.size(0), -1)`` for a ``raised_at``/``fix_at``."""
    if not site or not site.get("file"):
        return ""
    path = os.path.basename(site["file"]) if short_paths else site["file"]
    text = f"{path}:{site['line']}" if site.get("line") else path
    if site.get("module"):
        text += f" ({site['module']})"
    if site.get("code"):
        text += f": {site['code'].strip()}"
    return text


def site_lines(finding: dict) -> list[str]:
    """The fix site first, then the line that raised when it is another line.

    A finding's ``fix_at`` is where the person edits; ``raised_at`` only where
    the symptom surfaced. When no probe traced the fix site, the raise site is
    all there is, and it is said as such, not as the place to fix.
    """
    fix, raised = finding.get("fix_at"), finding.get("raised_at")
    lines = []
    if fix:
        lines.append(f"fix at: {describe_site(fix)}")
    if raised and (not fix or (fix.get("file"), fix.get("line"))
                   != (raised.get("file"), raised.get("line"))):
        lines.append(f"raised at: {describe_site(raised)}")
    return lines
