"""Symptoms told as a comparison, and the run-shape phrasings of training families.

`symptoms_compared.readings` reads what a description compares (one input run again
or in another batch size) as the phrase an entry's symptoms know, and `symptoms.readings`
adds what memory per GPU says (one GPU's memory against the others', the processes an
nvidia-smi table lists on the first GPU). The
second half runs descriptions written in the ways people tell these families (a loss
that drops at each epoch boundary, validation below training, a model that replaced
another and learns nothing, a DDP start that spins at 100 %) through `diagnose`, and an
error another library raised is read with the person's words around it.
"""

from __future__ import annotations

import pytest

from torchdoctor.knowledge import load_knowledge
from torchdoctor.match import diagnose
from torchdoctor.readings.symptoms_compared import readings
from torchdoctor.symptoms import readings as all_readings

KB = load_knowledge(include_user=False, use_cache=False, report=False)

SMI_TABLE = """|  GPU   GI   CI        PID   Type   Process name                  GPU Memory |
|    0   N/A  N/A     41200      C   python                          9311MiB |
|    0   N/A  N/A     41201      C   python                           603MiB |
|    0   N/A  N/A     41202      C   python                           603MiB |
|    0   N/A  N/A     41203      C   python                           603MiB |
|    1   N/A  N/A     41201      C   python                          9290MiB |
|    2   N/A  N/A     41202      C   python                          9288MiB |
|    3   N/A  N/A     41203      C   python                          9301MiB |
"""


@pytest.mark.parametrize("text", [
    "Predicting the same image several times gives a different class each time.",
    "同一段音频连续识别了三次，每次输出的文字都不一样。",
    "同じ画像を何度か推論すると毎回結果が違います。",
    "If I run the same sentence through the model twice the scores are not the same.",
])
def test_one_input_run_again_with_another_output_is_read(text):
    assert "inference on the same input twice gives different outputs" in readings(text)


@pytest.mark.parametrize("text", [
    "With the same seed every training run gives a different accuracy each time.",
    "The same input gives different outputs on CPU and GPU every time I compare them.",
    "Each time I load a different image the prediction changes.",
])
def test_runs_that_differ_for_other_reasons_are_not(text):
    assert "inference on the same input twice gives different outputs" not in readings(text)


@pytest.mark.parametrize("text", [
    "The score of one image alone is not the same as inside a batch of 16.",
    "Same sample, batch size 1 vs batch size 64: the logits differ.",
    "When I test just one image the output is different from when it sits in a bigger batch.",
])
def test_one_input_in_two_batch_sizes_is_read(text):
    assert "the output for one sample depends on the batch size" in readings(text)


def test_training_with_two_batch_sizes_is_not_a_batch_dependent_forward():
    text = "Training with batch size 32 and batch size 256 gives different final accuracy."
    assert "the output for one sample depends on the batch size" not in readings(text)


@pytest.mark.parametrize("text", [
    "gpu0 占了 12179，gpu1 只有 5245",
    "GPU 0: 10.5 GB, GPU 1: 4.1 GB, GPU 2: 4.0 GB",
    "cuda:0 uses 9800MiB while cuda:1 uses 3100MiB",
])
def test_the_first_gpu_far_above_the_others_is_read(text):
    assert "GPU 0 holds much more memory than the other GPUs" in all_readings(text)


def test_gpus_with_similar_memory_are_not():
    assert "GPU 0 holds much more memory than the other GPUs" not in all_readings(
        "GPU 0: 7900MiB, GPU 1: 7650MiB, GPU 2: 7700MiB")


def test_the_processes_nvidia_smi_lists_on_the_first_gpu_are_read():
    assert "every rank's process listed on GPU 0" in all_readings(SMI_TABLE)


FAMILIES = [
    # the loss falls at each epoch boundary: the model fits what it has seen before
    ("training.epoch_step_loss",
     "Fine-tuning a 7B model: the loss drops sharply at the start of every epoch and stays flat in between."),
    ("training.epoch_step_loss",
     "My training loss has a saw-tooth shape, one tooth per epoch."),
    ("training.epoch_step_loss",
     "SFT 的时候 loss 在每个 epoch 开始的地方骤降，曲线像台阶一样。"),
    # validation below training: dropout and augmentation act in training only
    ("training.train_loss_above_val",
     "My validation accuracy is consistently higher than my training accuracy, is something leaking?"),
    ("training.train_loss_above_val",
     "为什么测试集的 loss 比训练集的 loss 还低？"),
    ("training.train_loss_above_val",
     "検証データの損失が訓練データの損失よりも低いのはなぜですか"),
    ("training.train_loss_above_val", "验证集ｌｏｓｓ比训练集ｌｏｓｓ小，正常吗？"),
    # a model that replaced another in one notebook: the optimizer is the old model's
    ("training.optimizer_stale_params",
     "model_0 and model_1 trained fine; my third model, a small CNN, isn't learning at all."),
    ("training.optimizer_stale_params",
     "跟着教程又定义了第二个模型，结果准确率一直在 10% 左右，和随机猜一样。数据集是 MNIST。"),
    # inference that draws random numbers: dropout still on
    ("training.eval_mode_left_on",
     "Running the same picture through my classifier several times gives a different label each time."),
    # a sample that depends on its batch: batch statistics at inference
    ("training.batch_dependent_forward",
     "The prediction for one image alone differs from the prediction for that image in a batch of 32."),
    # the first GPU gathers under DataParallel
    ("distributed.dataparallel_imbalance",
     "With nn.DataParallel on 4 cards: GPU 0: 10.8 GB, GPU 1: 4.2 GB, GPU 2: 4.2 GB, GPU 3: 4.1 GB."),
    # every rank's context on the first GPU
    ("distributed.ddp_contexts_on_gpu0",
     "With DDP on 4 GPUs, every process also allocates about 600 MB on GPU 0."),
    ("distributed.ddp_contexts_on_gpu0", "DDP training, nvidia-smi shows:\n" + SMI_TABLE),
    # NCCL spinning while it waits for a peer
    ("distributed.ddp_startup_hang",
     "torchrun with 2 GPUs just stalls right after init: all GPUs at 100% utilization, no progress."),
    # a worker deadlock that num_workers=0 avoids
    ("dataloader.hang",
     "It blocks in the middle of validation; num_workers 8 or 2 still hangs, only with 0 does it finish."),
    # the same families in other words and languages
    ("training.epoch_step_loss", "The loss plummets at the start of each epoch and then stays flat."),
    ("training.epoch_step_loss", "エポックごとにロスが急に下がる階段状のカーブになります"),
    ("training.train_loss_above_val", "val_loss < train_loss for all 50 epochs, why?"),
    ("training.train_loss_above_val",
     "La pérdida de validación es menor que la de entrenamiento, ¿es normal?"),
    ("training.eval_mode_left_on", "Одно и то же изображение каждый раз даёт разные предсказания."),
    ("training.batch_dependent_forward",
     "同一张图片单独预测和放在 batch size 为 32 的批次里预测结果不一样"),
    ("distributed.dataparallel_imbalance", "DataParallel 两张卡，0号卡显存占满了，1号卡只用了一半"),
    ("distributed.dataparallel_imbalance",
     "With DataParallel on 2 GPUs, GPU 0 runs out of memory while GPU 1 only uses half of its memory."),
    ("distributed.ddp_startup_hang",
     "DDP 多卡训练初始化之后就卡住不动了，所有 GPU 利用率都是 100%，单卡正常"),
    ("dataloader.hang", "The epoch never finishes, the progress bar stops at 99% with 4 workers."),
    ("distributed.ddp_startup_hang",
     ('DDP: the script prints nothing after "Initializing distributed: GLOBAL_RANK: 0, MEMBER: 1/2" '
     "and both GPUs show 100% usage.")),
    ("distributed.ddp_contexts_on_gpu0",
     "With torch.distributed.launch every process also shows up on GPU 0 using about 500MB each."),
    ("distributed.dataparallel_imbalance", "DataParallel 使用時、GPU0 だけメモリが多く使われて OOM になります"),
    # clipping tried and not enough
    ("numerics.exploding_gradients",
     "The GRU's loss goes to inf after a few thousand steps; clipping the gradients to 10 did not help."),
]


@pytest.mark.parametrize(("entry", "text"), FAMILIES)
def test_a_phrasing_of_the_family_ranks_its_entry_first(entry, text):
    diagnosis = diagnose(text, KB)
    assert diagnosis.matches, f"nothing recognised in {text!r}"
    assert diagnosis.matches[0].entry.id == entry


def test_an_other_librarys_error_is_read_with_the_words_around_it():
    """tensorboard's histogram of NaN weights fails in numpy; the symptom is the NaN loss
    the person names above the traceback."""
    paste = """After a few steps the loss is nan and then logging crashes:

Traceback (most recent call last):
  File "train.py", line 88, in <module>
    writer.add_histogram(name, param.detach().cpu().numpy(), step)
  File "/opt/conda/lib/python3.10/site-packages/numpy/lib/histograms.py", line 323, in _get_outer_edges
    raise ValueError(
ValueError: autodetected range of [nan, nan] is not finite
"""
    diagnosis = diagnose(paste, KB)
    assert diagnosis.raised_by is not None
    assert diagnosis.matches and diagnosis.matches[0].entry.id == "numerics.nan_loss"


@pytest.mark.parametrize("text", [
    "I fix the seed to 7, yet rerunning with the very same settings the F1 changes a little.",
    "Two runs with one config and one seed, started an hour apart, don't match.",
    ("Everything random is seeded, but training the same model three times in a row gives"
    " a different accuracy each time."),
    "随机种子设成了 42，可是同样的配置重复训练，结果上下浮动一个点左右。",
    "シードを固定しているのに、もう一度学習すると毎回結果が違います。",
    "Фиксирую сид, но при повторном запуске результаты разные.",
])
def test_a_seeded_run_repeated_with_other_results_is_read(text):
    assert "same seed, different results between runs" in readings(text)


@pytest.mark.parametrize("text", [
    "I set the seed to 0 and the loss goes down nicely.",
    "Training twice with different learning rates gives different results.",
    "Each DataLoader worker gets a different seed.",
])
def test_seeds_without_a_repeated_run_that_differs_are_not(text):
    assert "same seed, different results between runs" not in readings(text)


@pytest.mark.parametrize("text", [
    ("The seed is fixed at 66, but when I run it again with identical settings the result"
    " changes a little. How do I get the same result on every run?"),
    ("Everything is seeded, yet five runs of the same notebook one after another each"
    " finish with a different test accuracy."),
    "我已经固定了随机种子，但是每次复现出来的指标都不一样，怎么才能完全复现？",
])
def test_seeded_runs_that_differ_rank_nondeterminism_first(text):
    diagnosis = diagnose(text, KB)
    assert diagnosis.matches and diagnosis.matches[0].entry.id == "other.nondeterminism"
