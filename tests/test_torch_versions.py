"""Old code run on a torch that removed `volatile` (`torchdoctor/readings/torch_versions.py`).

torch 0.4 removed `volatile`; evaluation code written for 0.3 builds its graph under
every later release and runs out of memory. A report tells the crossing by naming
versions on both sides of 0.4, or the newer torch it ported old code to, beside
memory; an OOM told that way ranks `autograd.volatile_removed` above the OOM entry,
never confidently. The texts are written for these tests; the messages are torch's.
"""

from __future__ import annotations

import pytest

from torchdoctor.knowledge import load_knowledge
from torchdoctor.match import CONFIDENT, diagnose
from torchdoctor.readings.torch_versions import readings, versions

KB = load_knowledge(include_user=False, use_cache=False, report=False)
CROSSED = ["code from before torch 0.4 run on a later torch"]

OLD_CODE_OOM = [
    ("The demo runs under pytorch 0.3.0 but under pytorch 0.4.0 it fails with\n"
    "RuntimeError: cuda runtime error (2) : out of memory at /opt/conda/conda-bld/pytorch_1525812548180"
    "/work/aten/src/THC/generic/THCStorage.cu:58"),
    "I ported the repository to torch 1.0.1; training works but the test pass runs out of memory.",
    "Works with PyTorch 0.3.1. With torch 0.4.1 evaluation dies: CUDA out of memory.",
]
NOT_OLD_CODE = [
    # a regression between two releases after 0.4
    "After upgrading to pytorch 0.4.1 GPU memory keeps growing until out of memory; on torch 0.4.0 it was fine.",
    # the flag already replaced
    ("Ported the code to PyTorch 1.1; I already replaced volatile=True with torch.no_grad() but "
    "validation memory still explodes."),
    # no memory in the report
    "Going back to torch 0.3.1 fixed it; under torch 0.4.0 training hangs after one epoch.",
]


def test_versions_are_read_as_people_write_them():
    assert versions("pytorch0.3.0, torch==1.0.1, PyTorch v0.4 and torch version 1.2") == [
        (0, 3), (1, 0), (0, 4), (1, 2)]
    assert versions("CUDA 9.2 with driver 396.45 and python 3.6") == []


@pytest.mark.parametrize("text", OLD_CODE_OOM)
def test_old_code_on_a_later_torch_is_read(text):
    assert readings(text) == CROSSED


@pytest.mark.parametrize("text", NOT_OLD_CODE)
def test_other_version_stories_are_not(text):
    assert readings(text) == []


def test_an_oom_after_crossing_04_ranks_the_removed_flag_first_but_not_confidently():
    diagnosis = diagnose(OLD_CODE_OOM[0], KB)
    ids = [str(m.entry.id) for m in diagnosis.matches]
    assert ids[:2] == ["autograd.volatile_removed", "memory.cuda_oom"]
    assert diagnosis.matches[0].score < CONFIDENT


def test_the_same_oom_without_versions_stays_the_oom_entry():
    text = OLD_CODE_OOM[0].split("\n", 1)[1]
    assert str(diagnose(text, KB).matches[0].entry.id) == "memory.cuda_oom"
