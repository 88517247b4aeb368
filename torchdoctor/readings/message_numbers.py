"""What a recognised message's numbers say beside the numbers the person gives.

A message names sizes; the person's words name the settings that made them. Put
side by side they can tell apart causes the message alone leaves open, and these
readings word what they tell as the plain phrases the symptom regexes know, for the
matcher to weigh against the message's entry (``match._refine_by_prose``).

- *A batch read as channels.* Since torch 1.11 a convolution takes an unbatched
  input (C, H, W) and prints it with a leading 1 added: ``expected input[1, 32, 3,
  784] to have 3 channels, but got 32``. When the channel count torch read is the
  batch size the person states, the batch dimension sits where the channels belong:
  the input lost a dimension (flattened images, a volume loaded without its channel
  dimension), a tensor of the wrong rank, not data of the wrong colour depth.
"""

from __future__ import annotations

import re

from torchdoctor.linear_regex import bounded

# "batch size 32", "batch_size=32", "batch of 32", "32 per batch", "批大小 32", "バッチサイズ32"
_BATCH_SIZE = re.compile(
    r"\bbatch[ _-]?size\s*(?:is|of|=|:|to|was|set to)?\s*(\d{1,6})\b"
    r"|\bbatch(?:es)?\s+of\s+(\d{1,6})\b|\b(\d{1,6})\s+(?:images?|samples?|examples?|items?)?\s*per\s+batch\b"
    r"|(?:批大小|批量大小|批次大小|バッチサイズ)\s*(?:为|是|=|:|：)?\s*(\d{1,6})",
    re.IGNORECASE)
_SIZES = re.compile(r"\d{1,9}")


def batch_sizes(text: str) -> set[int]:
    """Every batch size a text states."""
    return {int(next(group for group in found.groups() if group))
            for found in _BATCH_SIZE.finditer(bounded(text))}


def readings(fields: dict, text: str) -> list[str]:
    """The phrases a message's captured ``fields`` and the ``text`` around it say together."""
    said = []
    sizes = [int(size) for size in _SIZES.findall(str(fields.get("input_size") or ""))]
    got = str(fields.get("got_channels") or "")
    if (len(sizes) >= 3 and sizes[0] == 1 and got.isdigit() and int(got) > 1
            and sizes[1] == int(got) and int(got) in batch_sizes(text)):
        said.append("batch dimension read as channels: the input lacks a dimension")
    return said
