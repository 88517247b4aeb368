"""Undo what web pages, chats and IDEs did to a paste, so the traceback reads as printed.

A traceback copied from a scraped page has ``&quot;`` or curly quotes for its quotes
and may keep the page's tags (``<br>``, ``<code>``), a notebook's copy links each frame's
file to itself (``[<ipython-input-5-…>](https://localhost:8080/#)``),
one posted in markdown sits in a code fence that may open in the middle of a
sentence, an error line gets wrapped in backticks, ``**bold**`` or italics or made a heading
(``# RuntimeError: …`` as an issue's title), and PyCharm adds
``python-BaseException`` under the exception. Each is removed here, before lines are
read; nothing else about the text changes. Every pattern is bounded, so the pass is
linear in the text.
"""

from __future__ import annotations

import html
import re

ENTITY = re.compile(r"&(?:[A-Za-z]{2,8}|#\d{1,7}|#[xX][0-9A-Fa-f]{1,6});")
# A fence and its language tag; a tag is only a tag when the line ends after it, so
# "```Traceback (most recent call last):" keeps its first word.
FENCE = re.compile(r"```(?:[A-Za-z0-9_+-]{1,20}(?=[ \t]*(?:\r?\n|$)))?")
BOLD = re.compile(r"\*\*([^*\n]{1,300})\*\*")
# An error line set in italics with underscores or single stars ("_IndexError: index out
# of range in self_"); only a span that opens with an exception's type, so a traceback's
# "*input, **kwargs" is no italic.
ITALIC_ERROR = re.compile(
    r"(?<![\w*])([_*])([A-Za-z][\w.]{0,100}(?:Error|Exception): [^\n_*]{1,1000}?)\1(?![\w*])")
# Bold that opens on one line and closes on a later one: the marks at a line's start
# (column 0, where no traceback line begins with "**") and at its end.
BOLD_ACROSS_LINES = re.compile(r"^\*\*(?=\S)|(?<=\S)\*\*[ \t]*$", re.MULTILINE)
# Tags of a page's source copied with the text (``<br>``, ``<code>…</code>``, ``<pre>``);
# only HTML's own names, so Python's ``<module>``, ``<lambda>`` or ``<ipython-input-…>``
# stay. A line break tag is a line break, and inline code is set in backticks, which
# the readers of an error quoted in a sentence know.
HTML_INLINE_CODE = re.compile(r"<(code|tt|kbd|samp)(?:\s[^<>\n]{0,200})?>([^<\n]{1,1000})</\1>",
                              re.IGNORECASE)
HTML_BREAK = re.compile(r"<br\s{0,5}/?>", re.IGNORECASE)
HTML_TAG = re.compile(r"</?(?:code|pre|p|b|i|em|strong|tt|kbd|samp|span|div|blockquote|li|ul|ol)"
                      r"(?:\s[^<>\n]{0,200})?>", re.IGNORECASE)
# Colab and VS Code's notebooks copy a frame's file as a markdown link to itself:
# "[<ipython-input-5-4b67>](https://localhost:8080/#) in <cell line: 57>()",
# "File [~/env/lib/python3.9/site-packages/torch/nn/modules/module.py:1194](https://file+…)".
# The link's text is what the traceback printed.
LINKED_TEXT = re.compile(r"\[([^\[\]\n]{1,500})\]\((?:https?|file|vscode[\w+.-]{0,40}):[^()\s]{0,2000}\)")
# A page or a word processor curls the quotes torch printed straight (German low quotes too).
STRAIGHT_QUOTES = {0x2018: "'", 0x2019: "'", 0x201A: "'", 0x201C: '"', 0x201D: '"', 0x201E: '"'}
IDE_NOISE = ("python-BaseException", "Process finished with exit code")
# "`RuntimeError:` Integer division …": only the type set as code at the start of a line.
QUOTED_TYPE = re.compile(r"([ \t]*)`([A-Za-z_][\w.]{0,100}(?:Error|Exception)):?`:?")
# "# RuntimeError: …" or "### CUDA error: …": a markdown heading at the start of a line.
# Python prints no line of a traceback at column 0 that opens with "#".
HEADING = re.compile(r"#{1,6}[ \t]+(?=\S)")


def undo_markup(text: str) -> str:
    """The text without HTML tags and entities, code fences, bold markers and typographic
    quotes."""
    if "<" in text:
        text = HTML_BREAK.sub("\n", HTML_INLINE_CODE.sub(r"`\2`", text))
        text = HTML_TAG.sub("", text)
    if "](" in text:
        text = LINKED_TEXT.sub(r"\1", text)
    if "&" in text and ENTITY.search(text):
        text = html.unescape(text)
    if not text.isascii():
        text = text.translate(STRAIGHT_QUOTES)
    if "```" in text:
        text = FENCE.sub("\n", text)
    if ("_" in text or "*" in text) and ITALIC_ERROR.search(text):
        text = ITALIC_ERROR.sub(r"\2", text)
    if "**" in text:
        text = BOLD.sub(r"\1", text)
        if "**" in text:
            text = BOLD_ACROSS_LINES.sub("", text)
    return text


def undo_line_markup(line: str) -> str:
    """One line without the backticks that wrap it whole (or only its exception's type) or
    a heading's marks, or blank if an IDE added it."""
    if line[:1] == "#":
        heading = HEADING.match(line)
        line = line[heading.end():] if heading else line
    stripped = line.strip()
    if stripped.startswith(IDE_NOISE) or (stripped and not stripped.strip("`")):
        return ""  # an IDE's line, or the lone backtick that closes a span around a paste
    if len(stripped) > 2 and stripped[0] == "`" and stripped[-1] == "`":
        return line.replace("`", "", 1)[::-1].replace("`", "", 1)[::-1]
    quoted_type = QUOTED_TYPE.match(line) if stripped[:1] == "`" else None
    if quoted_type:
        return f"{quoted_type[1]}{quoted_type[2]}:{line[quoted_type.end():]}"
    return line
