"""Training compared with evaluation, in the ways people tell it.

`train_eval_compared.readings` reads two comparisons that decide between sibling
training entries: switching the model to eval mode made the results worse (BatchNorm's
running statistics, not a forgotten eval()), and accuracies given for the training set
and a held-out set that lie far apart (a model that does not generalise). The second
half runs whole descriptions, in English and in other languages, through `diagnose`.
"""

from __future__ import annotations

import pytest

from torchdoctor.knowledge import load_knowledge
from torchdoctor.match import diagnose
from torchdoctor.readings.train_eval_compared import readings
from torchdoctor.symptoms_glossary import in_english

KB = load_knowledge(include_user=False, use_cache=False, report=False)

EVAL_WORSE = "switching to eval mode makes the results worse than train mode"
GAP = "training accuracy far above the held-out accuracy"


def _read(text: str) -> list[str]:
    return readings(in_english(text) or text)


@pytest.mark.parametrize("text", [
    "As soon as I add net.eval() before the test loop the accuracy drops by 20 points.",
    "After calling model.eval() the segmentation mIoU goes down from 0.71 to 0.35.",
    "With model.eval() the validation loss goes up to 4.2 instead of 0.6.",
    "Removing the model.eval() line makes the test results normal again.",
    "只要把测试前的 model.eval() 注释掉,结果就正常了。",
])
def test_eval_mode_that_made_results_worse_is_read(text):
    assert EVAL_WORSE in _read(text)


@pytest.mark.parametrize("text", [
    # the opposite story: eval() missing is what hurt
    "Without model.eval() the test accuracy is much worse than it should be.",
    "I forgot to call model.eval() and the predictions change every time.",
    # eval() named, the result going down told of something else
    "I call model.eval() for validation; the training loss goes down nicely.",
])
def test_eval_mode_that_is_missing_or_harmless_is_not(text):
    assert EVAL_WORSE not in _read(text)


@pytest.mark.parametrize("text", [
    "Training accuracy reaches 0.99 but validation accuracy stays at 0.61.",
    "train acc 97%, test acc 55%",
    "训练集上准确率 95 左右,测试集上只有 40 多。",
    "訓練データの精度は 98% なのにテストデータでは 52% しか出ません。",
])
def test_held_out_accuracy_far_below_training_is_read(text):
    assert GAP in _read(text)


@pytest.mark.parametrize("text", [
    "train acc 91%, test acc 88%",                       # close: nothing to explain
    "train Loss: 0.8934 Acc: 0.0000\nval Loss: 0.7645 Acc: 0.0000",  # a loss is no accuracy
    "I train for 100 epochs and the test accuracy is 40%.",          # epochs are no accuracy
    "Epoch 1 train acc 0.95 val acc 0.40\nEpoch 30 train acc 0.97 val acc 0.93",  # last figures
])
def test_close_or_misread_figures_are_not_a_gap(text):
    assert GAP not in _read(text)


@pytest.mark.parametrize("text", [
    ("Adding model.eval() before testing makes the accuracy drop from 92% to 60%; leaving it out "
    "gives the good number. Why does evaluation mode make things worse?"),
    "验证的时候加了 model.eval() 精度就变差了很多,把 model.eval() 注释掉就正常了。",
])
def test_eval_that_made_it_worse_ranks_the_batchnorm_statistics_first(text):
    assert diagnose(text, KB).matches[0].entry.id == "training.batchnorm_running_stats"


@pytest.mark.parametrize("text", [
    "Why is there such a big gap between training and test accuracy on my small dataset?",
    "The difference between training acc and validation acc keeps growing every epoch.",
    "训练集准确率 96%,测试集准确率只有 45%,是过拟合了吗?",
    "有什么办法防止过拟合?训练集上准确率很高,测试集很低。",
])
def test_a_gap_between_the_sets_is_the_validation_gap(text):
    assert diagnose(text, KB).matches[0].entry.id == "training.validation_gap"


@pytest.mark.parametrize("text", [
    "The loss values are negative after a few hundred steps; the classifier ends in a softmax.",
    "My losses turned negative once I switched the head to nn.Softmax.",
])
def test_a_loss_said_to_be_negative_is_nll_on_probabilities(text):
    assert diagnose(text, KB).matches[0].entry.id == "training.nll_on_probabilities"


def test_the_training_loss_highest_of_the_curves_is_read_in_chinese():
    text = "三条曲线里 train loss 最大,valid loss 小很多,test loss 更小,这正常吗?"
    assert diagnose(text, KB).matches[0].entry.id == "training.train_loss_above_val"


@pytest.mark.parametrize("text", [
    "The loss sits at 2.303 and accuracy at 10% on CIFAR-10. Raising the learning rate changed nothing.",
    "Loss stuck at 2.30 and accuracy 10% every epoch on CIFAR-10; increasing the learning rate did not help.",
    "CIFAR-10 上 loss 一直是 2.303,准确率 10%。调大学习率也没用。",
])
def test_a_remedy_that_failed_is_a_cause_ruled_out_not_a_symptom(text):
    found = diagnose(text, KB).matches
    assert found[0].entry.id == "training.loss_constant"
    assert "training.lr_too_high" not in [match.entry.id for match in found]


def test_the_same_remedy_that_helped_still_counts():
    text = "The loss blew up to nan after a few epochs; lowering the learning rate fixed it."
    ids = [match.entry.id for match in diagnose(text, KB).matches]
    assert "training.lr_too_high" in ids[:2]


def test_a_remedy_ruled_out_in_chinese_is_not_read_as_its_cause():
    text = ("训练到一半 loss 变成 NaN,用的是自动混合精度 (amp)。加了 clip_grad_norm 梯度裁剪,没用;"
            "学习率降了 10 倍,也没用。")
    assert diagnose(text, KB).matches[0].entry.id == "numerics.nan_loss"
