"""When a report's NaN came, and which way its loss went (`torchdoctor/readings/trajectory.py`).

A NaN before any update, or with the first one, cannot be a rate's divergence; a
loss that falls and climbs back toward its start needs a step that grows by itself
(gradients never zeroed), one that shoots past it diverged. The last part runs whole
descriptions through `diagnose` with the shipped knowledge base.
"""

from __future__ import annotations

import pytest

from torchdoctor.knowledge import load_knowledge
from torchdoctor.match import diagnose
from torchdoctor.readings.trajectory import loss_turn, oom_moment, training_losses
from torchdoctor.symptoms import learning_rates, readings
from torchdoctor.symptoms_glossary import in_english

KB = load_knowledge(include_user=False, use_cache=False, report=False)

EARLY = [
    "loss is nan at step 0",
    "The loss is NaN from the very first iteration.",
    "the train loss is NAN from the start, whatever the dataset",
    "the gradients turn into NaN right after the first `step()`",
    "Training on my own data the loss is nan at every iteration.",
    "first step loss is fine, from the second step on everything is NaN",
    "iter 0 || Loss: 30.8207 ||\ntimer: 1.1393 sec.\niter 1 || Loss: nan ||",
    "训练一开始是正常的，但是更新一次之后网络的输出就全变成 NaN 了",
    "最初のイテレーションから loss が nan になります",
]
LATE = [
    "NaN loss appears in the second epoch of training.",
    "Both models give NAN loss right after the first epoch finishes.",
    "the loss looks fine, then at around step 15,000 it suddenly becomes nan",
    "loss becomes nan after epoch 200",
    "step 0 loss 2.30\nstep 100 loss 1.20\nstep 200 loss nan",
    "训练一开始是正常的，后来 loss 变成 nan",
]


def _said(text: str) -> list[str]:
    """The readings the symptom regexes see: taken from the English copy, as
    `match_symptoms` takes them."""
    return readings(in_english(text) or text)


@pytest.mark.parametrize("text", EARLY)
def test_a_nan_before_or_with_the_first_update_is_read_in_any_phrasing(text):
    assert "NaN from the first update on" in _said(text)


@pytest.mark.parametrize("text", LATE)
def test_a_nan_after_training_ran_for_a_while_is_not(text):
    assert "NaN from the first update on" not in _said(text)


CLIMBS_BACK = "\n".join(f"Loss error: {value}" for value in (
    1.0298, 0.8179, 0.4704, 0.1962, 0.0619, 0.0885, 0.2776, 0.5321, 0.7532, 0.8696))
BLOWS_UP = "\n".join(f"step {i} loss = {value}" for i, value in enumerate(
    (2.31, 1.92, 1.54, 2.48, 9.1, 151.0, 8.4e4)))
SETTLES = "\n".join(f"epoch {i} loss = {value}" for i, value in enumerate(
    (2.31, 1.52, 1.21, 1.08, 1.02, 1.05, 0.99)))


def test_a_loss_that_falls_then_climbs_back_toward_its_start_is_read():
    assert loss_turn(CLIMBS_BACK) == "climbs back"
    assert "loss falls, then climbs back up toward where it started" in readings(CLIMBS_BACK)


def test_a_loss_that_falls_then_shoots_past_its_start_has_blown_up():
    assert loss_turn(BLOWS_UP) == "blows up"


def test_noise_around_a_falling_loss_is_no_turn():
    assert loss_turn(SETTLES) is None


def test_a_validation_loss_that_falls_and_rises_is_overfitting_not_a_turn():
    held_out = CLIMBS_BACK.replace("Loss error", "val loss")
    assert training_losses(held_out) == []
    assert loss_turn(held_out) is None


def test_rates_in_scientific_notation_count_where_a_text_speaks_of_its_rate():
    text = ("the loss turns into nan within 3 epochs at 1e-6. I have to go down to 3e-8 to "
            "avoid it. Why would my learning rate have to be so tiny?")
    assert set(learning_rates(text)) == {1e-6, 3e-8}
    assert "several learning rates tried" in readings(text)


def test_eps_weight_decay_and_gradient_sizes_are_not_rates():
    assert set(learning_rates("lr 1e-4, weight decay of 1e-5 and eps=1e-8")) == {1e-4}
    assert learning_rates("|grad| is about 1e-4 on average, the learning rate is fine") == []
    assert learning_rates("eps = 1e-8 fixes the NaN") == []


def test_a_rate_at_the_end_of_a_sentence_is_read_whole():
    assert learning_rates("Adam with lr 1e-3. The inputs go from 1 to 3999.") == [1e-3]


def _top(text: str) -> str:
    matches = diagnose(text, KB).to_dict()["matches"]
    assert matches, text
    return matches[0]["entry"]


@pytest.mark.parametrize("text", [
    "loss is nan at step 0",
    "with lr=0.1 the loss is nan at step 0",
    "The loss is NaN from the very first iteration, the data has no NaN in it.",
    "训练一开始是正常的，但是更新一次之后网络的输出就全变成 NaN 了。输入数据我检查过，没有 NaN。",
])
def test_a_nan_the_rate_cannot_have_made_is_the_computations(text):
    assert _top(text) == "numerics.nan_loss"


@pytest.mark.parametrize("text", [
    "The loss becomes NaN after epoch 200.",
    "I get \"loss: nan\" after about 2000 iterations.",
    "why train loss will be nan?",
])
def test_a_nan_with_nothing_about_the_rate_is_the_nan_entry_whose_first_cause_is_the_rate(text):
    assert _top(text) == "numerics.nan_loss"


@pytest.mark.parametrize("text", [
    ("the loss turns into nan within 3 epochs at 1e-6; down at 3e-8 it trains. Why must my "
     "learning rate be so tiny?"),
    "With learning rate 0.1 the loss is 'nan'; with 0.001 it behaves.",
    "after a few hundred steps of normal training the loss explodes and then becomes nan",
    "Training works at first, but the loss then blew up completely once I raised the learning rate.",
])
def test_a_nan_or_a_rise_with_the_rate_as_the_lever_is_the_rate(text):
    assert _top(text) == "training.lr_too_high"


@pytest.mark.parametrize("text", [
    ("after a number of epochs the weights turn into NaN; the std tensor sometimes contains 0 "
     "and adding eps to it makes it go away"),
    "my own BCE is written with torch.log and the loss goes nan once a prediction reaches 0",
])
def test_a_nan_beside_the_zero_or_the_log_that_made_it_is_the_computations(text):
    assert _top(text) == "numerics.nan_loss"


@pytest.mark.parametrize("text", [
    "Running the example for 10 iterations the loss drops and then turns around:\n" + CLIMBS_BACK,
    "The loss keeps jumping around instead of going down, and that is with lr as small as 1e-6.",
    "Even with a tiny learning rate the loss oscillates wildly from one step to the next.",
])
def test_a_loss_whose_step_grows_by_itself_is_gradients_never_zeroed(text):
    assert _top(text) == "training.missing_zero_grad"


def test_a_loss_scale_that_fell_to_zero_under_amp_is_a_nan_never_printed():
    assert "NaN under mixed precision" in readings(
        "with GradScaler the run dies: ZeroDivisionError: float division by zero")
    assert "NaN under mixed precision" not in readings("ZeroDivisionError: float division by zero")
    pasted = ("Fine-tuning with apex amp (O1) goes on for a while, then it stops with\n\n"
              "ZeroDivisionError: float division by zero\n\n"
              "My loss is a hand-written BCE with torch.log; where would a zero come from?")
    assert _top(pasted) == "numerics.nan_loss"


def test_gradient_accumulation_named_as_a_technique_is_not_gradients_left_unzeroed():
    said = "I train with gradient accumulation over 4 steps and the loss is fine."
    assert all(m["entry"] != "training.missing_zero_grad" for m in diagnose(said, KB).to_dict()["matches"]
               if m["kind"] == "match")
    assert _top("the gradients accumulate across iterations, I never reset them") == (
        "training.missing_zero_grad")


def test_a_rise_far_below_where_the_loss_began_is_not_a_climb_back():
    tiny = "\n".join(f"step {i} loss {value}" for i, value in enumerate(
        (91.7, 76.9, 63.4, 2.2e-12, 1.9e-12, 3.1e-5, 4.4e-4, 2.1e-3)))
    assert loss_turn(tiny) is None


def test_a_nan_another_library_tripped_over_is_read_with_the_log_around_it():
    pasted = ("一开始ｌｏｓｓ就是ｎａｎ：\n"
              "Step:    60 Train Epoch:   1 [ 240/11000 (2.2%)]    Loss: nan\n"
              "Traceback (most recent call last):\n"
              '  File "train.py", line 126, in train\n'
              "    writer.add_histogram(name, param.clone().cpu().data.numpy(), step)\n"
              '  File "/usr/lib/python3/site-packages/numpy/lib/function_base.py", line 670, '
              "in histogram\n"
              "    'range parameter must be finite.')\n"
              "ValueError: range parameter must be finite.\n")
    assert "NaN from the first update on" in _said(pasted)
    assert _top(pasted) == "numerics.nan_loss"


def test_mixed_precision_named_in_another_language_or_a_class_name_is_read():
    assert "NaN under mixed precision" in _said("训练到中途 loss 突然变成 NaN，用的是自动混合精度。")
    assert "NaN under mixed precision" in readings("The loss goes NaN with AmpOptimWrapper.")
    assert "NaN under mixed precision" not in readings("The loss goes NaN on my Ampere card.")


@pytest.mark.parametrize("text", LATE)
def test_a_nan_after_training_ran_for_a_while_is_read_as_such(text):
    assert "non-finite loss after training ran a while" in _said(text)


@pytest.mark.parametrize("text", EARLY)
def test_a_nan_at_the_first_update_is_not_read_as_after_training_ran(text):
    assert "non-finite loss after training ran a while" not in _said(text)


@pytest.mark.parametrize("text", [
    "The loss becomes NaN after epoch 200.",
    "FloatingPointError: loss became inf at step 4",
    "after one epoch the loss turns into nan",
])
def test_a_nan_after_training_ran_keeps_divergence_as_the_next_entry(text):
    """Nothing said of the rate: the NaN entry leads (its first cause is the rate) and
    divergence follows it, for the harness's nonfinite_steps to decide between them."""
    entries = [m.entry.id for m in diagnose(text, KB).matches[:2]]
    assert entries == ["numerics.nan_loss", "training.lr_too_high"]


@pytest.mark.parametrize("text", [
    "The first epoch trains fine, then after 3 epochs it dies with CUDA out of memory.",
    "Everything fits at the start, but eventually I get an OOM.",
    "刚开始显存还有空余，训练一段时间就爆显存了。",
    "最初は大丈夫ですが、しばらくすると GPU メモリが足りないと言われます。",
])
def test_out_of_memory_after_training_ran_a_while_is_placed_later(text):
    assert oom_moment(in_english(text) or text) == "later"


@pytest.mark.parametrize("text", [
    "CUDA out of memory on the very first batch with batch size 64.",
    "The model runs fine for many epochs; accuracy improves later.",
])
def test_out_of_memory_at_the_start_or_no_oom_is_not(text):
    assert oom_moment(text) is None


@pytest.mark.parametrize("text", [
    "想问一下为什么训练跑一段时间就爆显存了？刚开始的时候显存还有不少空余。",
    "Training is fine for the first epoch; in the second epoch it stops with out of memory.",
])
def test_out_of_memory_placed_later_diagnoses_growing_memory(text):
    diagnosis = diagnose(text, KB)
    assert diagnosis.matches and diagnosis.matches[0].entry.id == "memory.growing"
