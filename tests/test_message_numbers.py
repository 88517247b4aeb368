"""A message's sizes beside the settings a person names (`torchdoctor/readings/message_numbers.py`).

Since torch 1.11 a convolution reads a tensor one dimension short as an unbatched
sample and prints it with a leading 1; when the channel count it read is the batch
size the person states, the batch sits where the channels belong, and the rank entry
leads the channel entry (never confidently: the two readings compete). The cases are
written for these tests; the messages are torch's.
"""

from __future__ import annotations

import pytest

from torchdoctor.knowledge import load_knowledge
from torchdoctor.match import CONFIDENT, diagnose
from torchdoctor.readings.message_numbers import batch_sizes, readings

KB = load_knowledge(include_user=False, use_cache=False, report=False)

BATCH_AS_CHANNELS = [
    # Conv2d, flattened RGB images, batch 32
    ("My batch size is 32 and the first layer is nn.Conv2d(3, 32, 5).\n"
    "RuntimeError: Given groups=1, weight of size [32, 3, 5, 5], expected input[1, 32, 3, 784] "
    "to have 3 channels, but got 32 channels instead"),
    # Conv3d, volumes without their channel dimension, batch_size=4
    ("DataLoader(ds, batch_size=4) with nn.Conv3d(1, 32, 3):\n"
    "RuntimeError: Given groups=1, weight of size [32, 1, 3, 3, 3], expected input[1, 4, 193, 229, 193] "
    "to have 1 channels, but got 4 channels instead"),
    # Conv1d, a batch of 16 sequences with no channel dimension
    ("batches of 16 sequences go into nn.Conv1d(1, 8, 3)\n"
    "RuntimeError: Given groups=1, weight of size [8, 1, 3], expected input[1, 16, 100] "
    "to have 1 channels, but got 16 channels instead"),
]
CHANNELS_ONLY = [
    # a real batch of one with 64 channels: a layer wired wrong, no batch size stated
    ("RuntimeError: Given groups=1, weight of size [64, 3, 1, 1], expected input[1, 64, 8, 8] "
    "to have 3 channels, but got 64 channels instead"),
    # the batch size stated is not the channel count torch read
    ("batch size 16\nRuntimeError: Given groups=1, weight of size [64, 3, 3, 3], expected "
    "input[1, 1, 256, 256] to have 3 channels, but got 1 channels instead"),
    # batched input: the leading size is the batch, not the 1 torch adds
    ("batch_size=32\nRuntimeError: Given groups=1, weight of size [64, 3, 3, 3], expected "
    "input[32, 64, 64, 64] to have 3 channels, but got 64 channels instead"),
]


def test_batch_sizes_are_read_in_the_ways_people_state_them():
    assert batch_sizes("batch size 32, batch_size=8; batches of 4; 16 images per batch") == {
        32, 8, 4, 16}
    assert batch_sizes("批大小为 64") == {64}
    assert batch_sizes("size 32 per image, 3 channels") == set()


def test_a_channel_count_equal_to_the_batch_size_reads_as_a_missing_dimension():
    fields = {"input_size": "1, 32, 3, 784", "got_channels": "32"}
    assert readings(fields, "batch size 32") == [
        "batch dimension read as channels: the input lacks a dimension"]
    assert readings(fields, "batch size 16") == []
    assert readings({"input_size": "32, 32, 3, 784", "got_channels": "32"}, "batch size 32") == []


@pytest.mark.parametrize("text", BATCH_AS_CHANNELS)
def test_the_rank_entry_leads_when_the_batch_was_read_as_channels(text):
    diagnosis = diagnose(text, KB)
    top = diagnosis.matches[0]
    assert str(top.entry.id) == "shape.conv_input_rank"
    assert "shape.conv_channels" in [str(m.entry.id) for m in diagnosis.matches[:2]]
    assert top.score < CONFIDENT


@pytest.mark.parametrize("text", CHANNELS_ONLY)
def test_the_channel_entry_keeps_its_lead_otherwise(text):
    assert str(diagnose(text, KB).matches[0].entry.id) == "shape.conv_channels"
