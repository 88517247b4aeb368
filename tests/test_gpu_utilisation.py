"""GPU utilisation given as figures, read as what they say about the input pipeline.

A report that says "利用率最高也就 12%" or "GPU-Util between 0% and 95%" names no
symptom word, yet its numbers say the GPU waits for data; `gpu_utilisation.readings`
says so in the phrase the data-loading entries' symptoms read, and `diagnose` then
names the input bottleneck.
"""

from __future__ import annotations

import pytest

from torchdoctor.knowledge import load_knowledge
from torchdoctor.match import diagnose
from torchdoctor.readings.gpu_utilisation import readings, utilisation_figures

KB = load_knowledge(include_user=False, use_cache=False, report=False)


@pytest.mark.parametrize("text", [
    "Watching the GPU every few seconds, utilization peaks at 9% and mostly shows 1%.",
    "nvidia-smi: GPU-Util 4% while the epoch runs.",
    "我每隔几秒看一次 GPU，利用率最高 15% 左右，大多数时候只有 3%。",
    "Die GPU Auslastung liegt bei 5 % bis 8 %.",
])
def test_low_figures_read_as_low_utilisation(text):
    assert readings(text) == ["low GPU utilization"]


def test_figures_from_idle_to_busy_read_as_fluctuating():
    text = "GPU utilization jumps between 0% and 95% from one second to the next."
    assert readings(text) == ["fluctuating GPU utilization"]


@pytest.mark.parametrize("text", [
    "GPU utilization is 97% the whole time.",
    "GPU utilization is fine, memory 3% used.",
    "| N/A   35C    P0    67W / 300W |   2277MiB / 32768MiB |      0%      Default |",
    "Accuracy is stuck at 10% on CIFAR-10.",
])
def test_busy_gpus_memory_figures_and_other_percentages_say_nothing(text):
    assert readings(text) == []


def test_memory_percentages_after_the_word_are_left_out():
    assert utilisation_figures("GPU utilization 90%, memory 5%") == [90.0]


@pytest.mark.parametrize("text", [
    ("Training two classes on 1000 images is slow: I checked the GPU every few seconds and"
    " its utilization never went above 11%, most of the time 2%."),
    "训练很慢，GPU，利用率最高也就 12% 左右，大多数时候只有 2%。",
])
def test_low_utilisation_figures_diagnose_the_input_bottleneck(text):
    diagnosis = diagnose(text, KB)
    assert diagnosis.matches and diagnosis.matches[0].entry.id == "dataloader.input_bottleneck"


def test_the_gpus_memory_usage_is_not_its_utilisation():
    assert utilisation_figures("The GPU memory usage sits at 20% of the card.") == []
    assert utilisation_figures("The GPU is never busy: its usage goes from 10% to 70%.") == [10.0, 70.0]


def test_a_gpu_that_stays_at_zero_is_not_read_as_waiting_for_data():
    assert readings("GPU utilization stays at 0% the whole run; torch prints 2.1.0+cpu.") == []
