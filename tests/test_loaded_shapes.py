"""Two shapes of one parameter beside weights being loaded are a checkpoint sized for
another model, whatever language the report is written in; shapes without any loading,
or of different ranks, say nothing of the kind."""

from __future__ import annotations

import pytest

from torchdoctor.readings.loaded_shapes import differing_shapes, readings


@pytest.mark.parametrize("text", [
    '加载预训练权重时:要把一个形状为 [51760, 4096] 的张量加载进 "weight" 参数里,但这个参数期望的形状是 [152064, 4096]',
    "Loading the checkpoint: fc.weight is torch.Size([1000, 512]) there, my model has torch.Size([10, 512])",
    "重みを読み込むと fc.weight が (1000, 512) で、モデル側は (10, 512) です",
    "При загрузке весов fc.weight имеет форму [1000 x 512], а модель ждёт [10 x 512]",
])
def test_loading_weights_with_two_shapes_of_one_rank_reads_as_the_checkpoint_shape(text):
    assert readings(text) == ["a checkpoint parameter's shape differs from the model's"]


def test_the_pair_is_the_first_two_shapes_of_one_rank_that_differ():
    text = "loading weights: bias [10] vs [20]; fc.weight [1000, 512] vs [10, 512]"
    assert differing_shapes(text) == ((1000, 512), (10, 512))


@pytest.mark.parametrize("text", [
    # shapes, but nothing is loaded: a forward's mismatch
    "mat1 and mat2 shapes cannot be multiplied (4x3136 and 64x5) in my weight layer",
    # loading, but the same shape twice
    "loaded the weights: fc.weight [10, 512] and the model [10, 512]",
    # loading, but a single number is no shape
    "load_state_dict of the pretrained weights fails at layer 3 of 12",
])
def test_no_reading_without_loading_or_without_two_differing_shapes(text):
    assert readings(text) == []
