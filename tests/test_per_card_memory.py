"""Memory per GPU read from a report's numbers decides between the multi-GPU entries.

Several processes listed on card 0 in nvidia-smi's table are the ranks of a
distributed run that each touched GPU 0; card 0 holding far more than the others,
whether in that table or in figures a sentence gives per card in any language, is
the lopsided card DataParallel (or a rank) leaves. The tables and sentences below
are of the kind people paste; they run through `diagnose` with the shipped
knowledge base.
"""

from __future__ import annotations

import pytest

from torchdoctor.knowledge import load_knowledge
from torchdoctor.match import diagnose
from torchdoctor.readings.per_card_memory import memory_per_card, processes_per_card, readings

KB = load_knowledge(include_user=False, use_cache=False, report=False)

RANKS_ON_CARD_0 = """\
|    0   N/A  N/A     41210      C   python train.py                 9120MiB |
|    0   N/A  N/A     41211      C   python train.py                  611MiB |
|    0   N/A  N/A     41212      C   python train.py                  611MiB |
|    0   N/A  N/A     41213      C   python train.py                  611MiB |
|    1   N/A  N/A     41211      C   python train.py                 9050MiB |
|    2   N/A  N/A     41212      C   python train.py                 9050MiB |
|    3   N/A  N/A     41213      C   python train.py                 9050MiB |
"""
# nvidia-smi of torch 0.4's days, without the GI and CI columns
OLD_TABLE = """\
|    0     62250      C   /usr/bin/python3.6                          4903MiB |
|    0     62251      C   /usr/bin/python3.6                           725MiB |
|    0     62252      C   /usr/bin/python3.6                           725MiB |
|    1     62251      C   /usr/bin/python3.6                          4810MiB |
|    2     62252      C   /usr/bin/python3.6                          4810MiB |
"""
ONE_PROCESS_PER_CARD = """\
|    0   N/A  N/A     5120      C   python main.py                  10240MiB |
|    1   N/A  N/A     5121      C   python main.py                  10100MiB |
"""


def test_processes_and_memory_are_read_per_card_from_the_process_table():
    assert processes_per_card(RANKS_ON_CARD_0)[0] == {"41210", "41211", "41212", "41213"}
    assert memory_per_card(RANKS_ON_CARD_0)[0] == 9120 + 3 * 611
    assert processes_per_card(OLD_TABLE)[0] == {"62250", "62251", "62252"}


@pytest.mark.parametrize("table", [RANKS_ON_CARD_0, OLD_TABLE])
def test_every_rank_listed_on_card_0_is_read_and_ranks_the_ddp_entry(table):
    assert "every rank's process listed on GPU 0" in readings(table)
    text = "Why is there so much on the first card?\n" + table
    assert diagnose(text, KB).to_dict()["matches"][0]["entry"] == "distributed.ddp_contexts_on_gpu0"


def test_one_process_per_card_with_even_memory_says_nothing():
    assert readings(ONE_PROCESS_PER_CARD) == []


@pytest.mark.parametrize(("text", "lopsided"), [
    ("With DataParallel, gpu0 takes 11800 and gpu1 only 4200.", True),
    ("GPU0: 10.5 GB, GPU1: 3.9 GB, GPU2: 3.9 GB", True),
    ("两张卡训练，gpu0 占了 12179，gpu1 只有 5245", True),
    ("GPU0: 7.1 GB, GPU1: 7.0 GB", False),
    ("gpu 0 uses 9000MiB", False),   # one card alone compares with nothing
])
def test_card_0_far_above_the_others_is_read_in_any_language(text, lopsided):
    said = readings(text)
    assert any(r.startswith("GPU 0 holds much more memory than the other GPUs") for r in said) is lopsided


def test_card_0_far_above_the_others_ranks_the_dataparallel_entry():
    text = "Training with nn.DataParallel on two cards: gpu0 takes 11800 and gpu1 only 4200."
    assert diagnose(text, KB).to_dict()["matches"][0]["entry"] == "distributed.dataparallel_imbalance"


# Figures per card named in other languages, card name first or number first, and the
# wrapper named anywhere in the report deciding whose lopsided card it is.
FIGURES_WITH_THEIR_WRAPPER = [
 ("distributed.ddp_contexts_on_gpu0", "单机两卡用 DDP 训练，卡0：10118mb，卡1：6401mb，差了 3G 多"),
 ("distributed.dataparallel_imbalance", "用 DataParallel 两张卡训练，0 号卡 12179M，1 号卡 5245M"),
 ("distributed.dataparallel_imbalance", "DataParallel で学習すると カード0 10.5GB、カード1 3.9GB になります"),
 ("distributed.dataparallel_imbalance", "DataParallel 로 학습하면 0번 GPU 11GB, 1번 GPU 5GB 를 씁니다"),
 ("distributed.ddp_contexts_on_gpu0", "С torchrun видеокарта 0: 11 ГБ, видеокарта 1: 4 ГБ"),
]


@pytest.mark.parametrize(("entry", "text"), FIGURES_WITH_THEIR_WRAPPER,
                         ids=[f"{e}-{i}" for i, (e, _) in enumerate(FIGURES_WITH_THEIR_WRAPPER)])
def test_figures_per_card_in_any_language_reach_the_entry_of_the_wrapper_named(entry, text):
    assert diagnose(text, KB).to_dict()["matches"][0]["entry"] == entry


def test_the_wrapper_decides_even_named_far_from_the_figures():
    text = ("We launch the job with torchrun on two cards.\n" + "Some notes about the data set. " * 12
            + "\nMemory per card: GPU0: 10761MB, GPU1: 3651MB.")
    assert readings(text) == ["GPU 0 holds much more memory than the other GPUs under DDP"]
    assert diagnose(text, KB).to_dict()["matches"][0]["entry"] == "distributed.ddp_contexts_on_gpu0"


@pytest.mark.parametrize("text", ["8 卡 V100(每张 32G)", "a GPU 5GB card and a GPU 0 of 11GB"])
def test_a_count_of_cards_or_a_size_is_no_figure_per_card(text):
    assert 8 not in memory_per_card(text) and 5 not in memory_per_card(text)
