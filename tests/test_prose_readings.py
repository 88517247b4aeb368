"""Prose symptoms are read by their numbers and identifiers, whatever the language.

`symptoms.readings` turns what a description's numbers say into the phrases
people write (a loss log hovering at 2.30 is "loss stuck at ln(10)"); the
knowledge base's symptom regexes read those phrases beside the text. The
second half runs whole descriptions, in the forms people paste them, through
`diagnose` with the shipped knowledge base.
"""

from __future__ import annotations

import pytest

from torchdoctor.knowledge import load_knowledge
from torchdoctor.match import diagnose
from torchdoctor.symptoms import (
    accuracy_values,
    class_count,
    extract_numbers,
    learning_rates,
    loss_values,
    memory_levels_off,
    readings,
)

KB = load_knowledge(include_user=False, use_cache=False, report=False)

FLAT_AT_LN10 = """epoch 0 loss = 2.3081
epoch 1 loss = 2.2979
epoch 2 loss = 2.3054
epoch 3 loss = 2.3027
"""
FALLING = """epoch 0 loss = 2.3081
epoch 1 loss = 1.2140
epoch 2 loss = 0.6311
epoch 3 loss = 0.4020
"""


def test_loss_log_values_are_read_in_log_and_sentence_forms():
    text = ("step 17 loss: 0.700079\n[loss]: 4.99\nLoss [100, 200](epoch, minibatch):  1.72\n"
            "the loss 1.386 after 3 steps")
    assert loss_values(text) == [0.700079, 4.99, 1.72, 1.386]


def test_a_number_at_the_end_of_a_log_line_belongs_to_its_label_not_the_next_line():
    assert extract_numbers(FLAT_AT_LN10)["loss"] == "2.3081"
    assert loss_values("loss at step 5 is 2.3") == []


def test_a_loss_hovering_at_ln_10_reads_as_a_uniform_guess():
    said = readings(FLAT_AT_LN10)
    assert "loss stuck at ln(10), a uniform guess over 10 classes" in said
    assert any(line.startswith("loss stuck at 2.30") for line in said)


def test_a_falling_loss_that_passed_ln_c_is_not_stuck():
    assert readings(FALLING) == []


def test_the_class_count_the_text_gives_wins_over_the_usual_ones():
    text = "7 classes, and the loss stays near 1.946 for every batch: loss 1.946, loss 1.944"
    assert "loss stuck at ln(7), a uniform guess over 7 classes" in readings(text)


def test_a_language_model_at_ln_of_its_vocabulary_is_read():
    text = "iter 100 loss 10.8241\niter 200 loss 10.8302\niter 300 loss 10.8195\n"
    assert "loss stuck at ln(50257), a uniform guess over 50257 classes" in readings(text)


def test_learning_rates_compared_but_not_a_schedulers_log():
    assert "several learning rates tried" in readings("lr=0.1 gives nan, lr=0.001 trains")
    log = "Epoch 1, lr = 0.009699\nEpoch 2, lr = 0.009398\nEpoch 3, lr = 0.009095\n"
    assert learning_rates(log) == [0.009699, 0.009398, 0.009095]
    assert "several learning rates tried" not in readings(log)


@pytest.mark.parametrize("line", ["total_loss += loss\n", "epoch_loss += loss[0]\n",
                                  "running += loss_dict[key]`"])
def test_a_loss_tensor_summed_into_a_total_is_read(line):
    assert "loss tensor accumulated without .item()" in readings(line)


def test_summing_the_python_number_is_not_a_leak():
    assert readings("total_loss += loss.item()\n") == []


CHANCE = "accuracy stuck at chance, a uniform guess over {} classes"


@pytest.mark.parametrize(("text", "values"), [
    ("val_acc: 0.1012\nval_acc: 0.0998", [10.12, 9.98]),
    ("验证准确率一直停在 10% 左右", [10.0]),
    ("точность на тесте 9.8 %", [9.8]),
    ("Accuracy: 45.3%, then acc 51%", [45.3, 51.0]),
])
def test_accuracies_are_read_in_percent_in_any_language(text, values):
    assert accuracy_values(text) == values


@pytest.mark.parametrize(("text", "count"), [
    ("a 10 分类 audio model", 10), ("сеть на 7 классов", 7), ("12 クラス", 12),
    ("training a ResNet on CIFAR-100", 100), ("Fashion-MNIST", 10), ("plain prose", None),
])
def test_the_class_count_is_read_from_the_words_or_the_data_set(text, count):
    assert class_count(text) == count


@pytest.mark.parametrize(("text", "classes"), [
    ("10 分类的模型, 验证准确率一直是 10% 左右", 10),
    ("Обучаю сеть на CIFAR-10: точность 10%, потом 9.9%, потом 10.1%.", 10),
    ("ResNet-18 on CIFAR-100, top-1 stays at 1.02% for every epoch", 100),
    ("binary classifier (2 classes), accuracy 0.50 at every epoch", 2),
])
def test_an_accuracy_at_one_over_c_reads_as_a_uniform_guess(text, classes):
    assert CHANCE.format(classes) in readings(text)


@pytest.mark.parametrize("text", [
    "10 classes: accuracy 10%, then 35%, 61%, 78%",   # it was only the start
    "accuracy is 10% on my data",                     # no class count to compare with
    "CIFAR-100, accuracy 71.3%",
])
def test_an_accuracy_away_from_chance_or_without_c_says_nothing(text):
    assert not [said for said in readings(text) if said.startswith("accuracy stuck")]


def test_a_data_set_named_only_as_the_weights_origin_does_not_hide_ln_c():
    text = "ImageNet-pretrained ResNet fine-tuned on my data: loss 2.302, loss 2.301, loss 2.303"
    assert "loss stuck at ln(10), a uniform guess over 10 classes" in readings(text)
    assert "loss stuck at ln(100), a uniform guess over 100 classes" in readings(
        "CIFAR-100 from scratch, loss: 4.605 / 4.606 / 4.604")


def test_nan_and_a_half_precision_setting_are_read_together_across_sentences():
    text = "Loss turns NaN after 30 epochs.\n- fine without torch.cuda.amp\n- fine on small data"
    assert "NaN under mixed precision" in readings(text)
    assert "NaN under mixed precision" not in readings("Loss turns NaN after 30 epochs.")
    assert "NaN under mixed precision" not in readings("switched to fp16, 2x faster")


@pytest.mark.parametrize(("text", "levels_off"), [
    # counted readings whose growth per step slows down: the allocator's reserve filling up
    ("about 3200mb at iter 99, 7000mb at iter 219, 10gb at iter 5199", True),
    ("900 MB after epoch 1, 1.300 MB after epoch 3, 1.700 MB around epoch 160", True),
    ("2934M -- 4413M -- 4433M -- 4537M -- 4537M -- 4537M", True),
    # a leak: the same growth every step, or readings climbing to the card's total
    ("1000MB at step 10, 2000MB at step 20, 3000MB at step 30", False),
    ("1906MiB -> 5202MiB -> 8108MiB of 8111MiB in nvidia-smi", False),
    ("1000M -- 2000M -- 3000M", False),
])
def test_memory_readings_that_level_off_are_told_from_steady_growth(text, levels_off):
    assert memory_levels_off(text) is levels_off
    assert ("readings level off at a plateau" in readings(text)) is levels_off


def top(text: str) -> str | None:
    diagnosis = diagnose(text, KB)
    return diagnosis.matches[0].entry.id if diagnosis.matches else None


# A description in the form people paste it, and the entry a right diagnosis ranks first.
DESCRIPTIONS = [
    # a log with no words about it: only the numbers say "not learning"
    (FLAT_AT_LN10, "training.loss_constant"),
    ("跑了 50 个 epoch，loss 一直不下降，还是 2.30 左右", "training.loss_constant"),
    ("Desde la época 3 la loss se queda en 2.98 y no baja.", "training.loss_constant"),
    ("Nach 20 Epochen:\nloss: 0.6931\nloss: 0.6929\nloss: 0.6934\n", "training.loss_constant"),
    ("训练一个 10 分类的模型, 训练损失在下降, 但验证准确率一直是 10% 左右", "training.loss_constant"),
    ("Сеть на CIFAR-100 не обучается: точность 1% на каждой эпохе.", "training.loss_constant"),
    # "decreases very little" is a slow loss; "goes down a little and then hovers" is not
    ("The loss decreases very little from one epoch to the next.", "training.lr_too_low"),
    (("the loss goes down a little and then just hovers around 0.69:\nloss: 0.700079\n"
     "loss: 0.716837\nloss: 0.694084\nloss: 0.70559\n"), "training.loss_constant"),
    ("エポックを重ねてもロスが全く下がりません", "training.loss_constant"),
    ("학습을 30 에폭 돌려도 손실이 줄지 않아요", "training.loss_constant"),
    ("Лосс не падает уже 20 эпох", "training.loss_constant"),
    ("Después de 10 épocas la pérdida no baja", "training.loss_constant"),
    ("Training on a single GPU with the default config, the losses turn nan after a while.",
     "training.lr_too_high"),
    # NaN: the learning rate is the cause only when the text names it as the lever
    ("Switched the model to fp16 with autocast; now the loss is nan after a few hundred steps.",
     "numerics.nan_loss"),
    ("The loss is NaN at step 0, before any update.", "numerics.nan_loss"),
    ("With lr 0.1 the loss becomes nan; with 0.001 it trains fine.", "training.lr_too_high"),
    ("The loss explodes after a few epochs; lowering the learning rate fixed it.",
     "training.lr_too_high"),
    (("Loss turns NaN after 30 epochs.\n- fine with autocast disabled\n- a bigger lr makes it "
     "come earlier"), "numerics.nan_loss"),
    # cudnn.benchmark: what the person complains about decides, not the setting named
    (("Same seed, but every run gives different accuracy. We set "
     "torch.backends.cudnn.benchmark = True at the top of train.py."), "other.nondeterminism"),
    ("Setting torch.backends.cudnn.benchmark = False to True cut an epoch from 9 to 6 minutes.",
     "training.cudnn_benchmark_off"),
    ("With cudnn.benchmark = True and images of varying sizes every step is slow.",
     "training.cudnn_benchmark_varying_shapes"),
    (("We set cudnn benchmark to False by default: benchmark mode kept re-running whenever the "
     "input sizes varied."), "training.cudnn_benchmark_varying_shapes"),
    # a setting named beside a complaint about runs is no speed question
    (("Seeds fixed, cudnn.deterministic = True and cudnn.benchmark = False, and still the two "
     "runs differ after one epoch."), "other.nondeterminism"),
    (("All seeds fixed, torch.backends.cudnn.benchmark = True; each training run gives a "
     "different result."), "other.nondeterminism"),
    ("Why do the configs set cudnn_benchmark = True for this detector only?",
     "training.cudnn_benchmark_varying_shapes"),
    (("Outputs change from run to run on the same image: the model is never put in eval mode, "
     "so dropout stays on."), "training.eval_mode_left_on"),
    (("validate() calls model.eval() and then model.train() again before the batches, so the "
     "scores are computed in training mode."), "training.eval_mode_left_on"),
    (("Memory goes up after the first evaluation pass, which runs the model on volatile "
     "Variables, and stays up."), "autograd.volatile_removed"),
    (("With torch 2.1 the validation accuracy is 2% lower than with torch 1.13, same seed and "
     "data."), "other.nondeterminism"),
    ("PyTorch 1.3 training is much slower than PyTorch 1.0 with the same code",
     "training.cudnn_benchmark_off"),
    # memory
    ("GPU memory keeps going up during validation until it runs out.", "memory.growing"),
    ("```\nfor x, y in loader:\n    running_loss += loss\n```\nhost RAM climbs every epoch",
     "memory.growing"),
    ("训练时显存一直往上涨，几个 epoch 之后程序就崩了", "memory.growing"),
    ("nvidia-smi still shows 900MiB after del model and torch.cuda.empty_cache()",
     "memory.cuda_context_reserved"),
    # readings that climb and then flatten: the allocator's reserve, not a leak
    ("nvidia-smi: 2100MiB at step 100, 5400MiB at step 300, 6000MiB at step 9000",
     "memory.caching_allocator"),
    ("GPU memory keeps growing: 2100MiB at step 100, 4100MiB at step 200, 6100MiB at step 300",
     "memory.growing"),
    # varying sizes are a cuDNN speed question only when the text speaks of speed
    ("My sequences have different lengths and GPU memory climbs every step until nothing is left.",
     "memory.growing"),
    ("Training with different input sizes got much slower after turning benchmark mode on.",
     "training.cudnn_benchmark_varying_shapes"),
    # an error quoted in prose: the words around it say how it came about
    ("Inference on one image at a time: after 40 images it stops with CUDA error: out of memory",
     "memory.growing"),
    # hangs: the workers decide against DDP start-up, a collective later on against both
    ("With DDP and num_workers=8 training hangs in the first epoch; with num_workers=0 it runs.",
     "dataloader.hang"),
    ("dist.barrier() hangs under DDP after the evaluation that only rank 0 runs",
     "distributed.collective_timeout"),
    ("torchrun with NCCL hangs at initialization on two nodes", "distributed.ddp_startup_hang"),
    ("Every few hours the training just stalls; since I lowered num_workers it happens less.",
     "dataloader.hang"),
    # the loader told in words
    (("Appending every batch from the loader to a list, the job runs out of file descriptors "
     "after a while."), "dataloader.too_many_open_files"),
    ("The Keras version of this CNN takes 40 s per epoch, mine in PyTorch 3 minutes.",
     "dataloader.input_bottleneck"),
    (("RAM goes up with the number of workers: each worker seems to keep its own copy of my "
     "2 GB array."), "dataloader.shared_memory_accounting"),
    # gradients
    ("The grad norm keeps getting bigger every step until it is inf.",
     "numerics.exploding_gradients"),
    ("clip_grad_norm_ returns nan and the parameters become nan after the step",
     "numerics.clip_nonfinite"),
]


@pytest.mark.parametrize(("text", "entry"), DESCRIPTIONS, ids=[d[1] + ":" + d[0][:30]
                                                                 for d in DESCRIPTIONS])
def test_descriptions_rank_the_entry_that_explains_them(text, entry):
    assert top(text) == entry


@pytest.mark.parametrize("text", [
    "I call model.eval() before validation and model.train() after it; accuracy is 91%.",
    "The data is shuffled every epoch and accuracy reaches 0.95.",
    "CrossEntropyLoss is used for training; at inference I take a softmax of the logits.",
])
def test_a_mere_mention_of_a_right_practice_is_not_its_failure(text):
    recognised = [m for m in diagnose(text, KB).matches if m.kind == "match"]
    assert (recognised[0].entry.id if recognised else None) not in {"training.eval_mode_left_on", "training.shuffle_off",
                             "training.softmax_into_cross_entropy"}


@pytest.mark.parametrize("text", [
    "The data set has 102 flower classes and the head is nn.Linear(2048, 101).",
    "num_classes = 12, but the classifier was built with out_features=10",
    "37 classes; the model ends in 36 outputs",
])
def test_a_last_layer_narrower_than_the_class_count_reads_as_fewer_outputs(text):
    assert any("fewer outputs than classes" in said for said in readings(text))


@pytest.mark.parametrize("text", [
    "10 classes: nn.Sequential(nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 10))",
    "2 classes, one logit: nn.Linear(512, 1) with BCEWithLogitsLoss",
])
def test_a_head_as_wide_as_the_classes_or_a_single_logit_is_no_narrow_head(text):
    assert not any("fewer outputs" in said for said in readings(text))


def test_a_device_side_assert_beside_a_head_narrower_than_the_classes_is_the_loss_assert():
    paste = ('Training on the GPU stops with "RuntimeError: CUDA error: device-side assert '
             'triggered". There are 120 dog breed classes and my classifier is '
             "nn.Linear(in_features, 119).")
    assert diagnose(paste, KB).matches[0].entry.id == "index.nll_target_assert"


@pytest.mark.parametrize("text", [
    "after 20 epochs the loss suddenly becomes nan, lr=0.1",
    "the loss goes to inf with a learning rate of 0.5",
    "loss keeps falling but accuracy stays 0.1",
])
def test_a_number_labelled_by_another_name_is_not_the_loss(text):
    """A NaN loss has no value; the number after it belongs to the rate or the accuracy."""
    assert "loss" not in extract_numbers(text)


def test_memory_that_fills_up_before_the_run_is_killed_is_growth():
    text = ("It gets through the first epoch, then in the second the terminal prints"
            " \"killed\": the machine's memory fills up completely before that.")
    diagnosis = diagnose(text, KB)
    assert diagnosis.matches and diagnosis.matches[0].entry.id == "memory.growing"
