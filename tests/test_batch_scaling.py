"""A changed batch with its learning rate kept, then divergence (`torchdoctor/readings/batch_scaling.py`).

The stable rate grows with the batch; a run that changed images per GPU, the GPU
count or the accumulation and kept the reference rate diverges. Told beside a NaN or
a growing loss, it makes `training.lr_too_high` lead, whenever the NaN came. The
texts are written for these tests.
"""

from __future__ import annotations

import pytest

from torchdoctor.knowledge import load_knowledge
from torchdoctor.match import diagnose
from torchdoctor.readings.batch_scaling import batch_changed

KB = load_knowledge(include_user=False, use_cache=False, report=False)

CHANGED = [
    # one setting changed, the rest kept
    "The loss becomes nan. I set IMS_PER_BATCH = 2 and left every other parameter unchanged.",
    "Using per_device_train_batch_size=1 with the default learning rate the loss diverges.",
    # two runs that differ in it
    "With GPUS=4 and batchsize=16 the loss is NaN, with GPUS=2 and batchsize=8 it trains.",
    "gradient_accumulation_steps=8 trains fine; gradient_accumulation_steps=1 blows up to inf.",
    # the machine the run moved to
    "Since moving from an 8-GPU machine to a 2-GPU machine the loss keeps increasing after warm-up.",
    # a detection model zoo's reference configuration, whose rate is set for 8 GPUs
    "Training with retinanet_r50_fpn_2x_coco.py on my data, every loss becomes nan after 300 iterations.",
    "the losses grow and grow while training cascade_rcnn_r50_fpn_20e",
]
NOT_CHANGED = [
    # a batch size named, nothing changed or compared
    "batch size 32, the loss is nan after 300 steps",
    # changed and kept, but nothing diverged
    "I set IMS_PER_BATCH = 2 and left every other parameter unchanged; mAP is 5 points lower.",
    # everything as the reference had it, the batch included
    "I use batch_size=16 with the same settings as the paper, and the loss becomes nan after 3 epochs.",
    # a move of machines told without divergence
    "moving from an 8-GPU machine to a 4-GPU machine made every epoch slower",
    # the reference configuration run on the reference setup
    "e2e_mask_rcnn_R_50_FPN_1x.yaml on 8 GPUs, the loss is nan after 1000 iterations",
]


@pytest.mark.parametrize("text", CHANGED)
def test_a_changed_batch_beside_divergence_is_read(text):
    assert batch_changed(text)


@pytest.mark.parametrize("text", NOT_CHANGED)
def test_other_reports_are_not(text):
    assert not batch_changed(text)


@pytest.mark.parametrize("text", CHANGED[:4] + CHANGED[5:6])
def test_divergence_leads_over_the_nan_entry(text):
    assert str(diagnose(text, KB).matches[0].entry.id) == "training.lr_too_high"


def test_a_nan_at_step_zero_without_a_changed_batch_stays_the_nan_entry():
    assert str(diagnose("loss is nan at step 0, batch size 32", KB).matches[0].entry.id) == (
        "numerics.nan_loss")


def test_a_changed_batch_does_not_overrule_a_nan_before_any_update():
    text = ("I set IMS_PER_BATCH = 2 and left every other parameter unchanged, and the loss is "
            "nan from the very first iteration")
    assert str(diagnose(text, KB).matches[0].entry.id) == "numerics.nan_loss"
