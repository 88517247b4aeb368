"""Prose families whose wording tells sibling entries apart.

Each list holds sentences of the kind people post, in several phrasings, for one
fact about torch that decides between entries which otherwise read alike: memory
that the caching allocator holds (it moves with input sizes, empty_cache gives it
back, it goes up and stays) against memory that leaks (it only grows, empty_cache
does nothing); a layer the optimizer never saw; a trained model whose evaluation
hangs on the seed (weights that never loaded) against a training run that varies.
They run through `diagnose` with the shipped knowledge base.
"""

from __future__ import annotations

import pytest

from torchdoctor.knowledge import load_knowledge
from torchdoctor.match import diagnose
from torchdoctor.symptoms import readings

KB = load_knowledge(include_user=False, use_cache=False, report=False)

FAMILIES = [
    # the allocator's pool follows the largest batch seen; freed blocks stay reserved
    ("memory.caching_allocator",
     "My detector's GPU memory keeps changing from batch to batch, sometimes 5 GB, sometimes 9 GB."),
    ("memory.caching_allocator",
     "The memory usage fluctuates a lot between iterations although the model is fixed."),
    ("memory.caching_allocator",
     "I call torch.cuda.empty_cache() after each epoch, which brings it down, but it is slow."),
    ("memory.caching_allocator",
     "Right at the start the reserved memory goes up and stays up at 6 GB for the rest of training."),
    ("memory.caching_allocator",
     "Running only the forward pass in a loop takes more GPU memory than training does."),
    ("memory.caching_allocator",
     "Why is the GPU occupancy changing all the time during training? Inputs are point clouds."),
    ("memory.caching_allocator",
     "VRAM use goes up over the first epoch, then levels off around 9 GB; is that a leak?"),
    # a leak only grows, and the cache being emptied does not touch it
    ("memory.growing",
     "Memory increases every step and then the run stops at iteration 500 with out of memory."),
    ("memory.growing", "GPU memory keeps growing every iteration until it runs out."),
    ("memory.growing", "Memory increases each epoch and empty_cache() doesn't help at all."),
    # the optimizer holds what it was handed when built
    ("training.optimizer_stale_params",
     "Loss goes down but validation accuracy stays at chance; two conv layers are created inside forward()."),
    ("training.optimizer_stale_params",
     "With the manual update over model.parameters() it learns; after swapping in optim.Adam "
     "the loss stays where it started."),
    ("training.optimizer_stale_params",
     "Is it fine to instantiate two extra Linear layers inside forward instead of __init__?"),
    # an evaluation has nothing random left but weights that never loaded
    ("state_dict.partial_load_silent",
     "The test accuracy changes with the seed even though I only evaluate the checkpoint."),
    ("state_dict.partial_load_silent",
     "After loading the weights the predictions look as if the network were untrained, no error."),
    ("other.nondeterminism",
     "I fixed the seed everywhere but forgot torch.backends.cudnn.deterministic, is that why?"),
    ("numerics.nan_loss",
     "I fill masked logits with float('-inf') and pass them to cross_entropy; the loss is nan."),
    ("numerics.nan_loss",
     "Batches where one sentence is all padded give nan once the key_padding_mask covers it."),
    ("numerics.vanishing_gradients", "深い層ほど勾配が消えてしまい、最初の層が全く更新されない"),
    ("numerics.vanishing_gradients", "前面几层的梯度消失了，权重几乎不变"),
    ("training.eval_mode_left_on", "Do I need model.eval() in my inference script? Without it the masks look fine."),
    ("training.eval_mode_left_on", "推理脚本里需要 model.eval() 吗？现在没有调用"),
    ("training.batchnorm_running_stats",
     "Evaluation accuracy swings between runs; are running_mean and running_var the problem?"),
    # parameters the optimizer holds move with weight decay, whether a loss reaches them or not
    ("training.freeze_not_applied",
     "I dropped the auxiliary head's loss from the total, yet its weights still change a little "
     "every iteration. Why, if no loss uses them?"),
    # a metric that works on the training batches and reads exactly 0 on validation
    ("training.shuffle_off",
     "On my own images the training accuracy climbs normally, but validation accuracy is 0 every "
     "epoch. With CIFAR-10 both are fine."),
    # workers start afresh each epoch: a fork that deadlocks shows at the boundary
    ("dataloader.hang",
     "Training freezes at the start of every new epoch for minutes; within an epoch it runs."),
    # a CPU wheel on a machine with a GPU: the card idles
    ("device.torch_without_cuda",
     "Inference is very slow and GPU usage sits near 0%. torch.__version__ prints 2.1.0+cpu."),
    # the allocator keeps what the first pass took and reuses it
    ("memory.caching_allocator",
     "The first validation takes 3 GB more GPU memory and never gives it back, but the second "
     "validation does not raise it any further."),
]


@pytest.mark.parametrize(("entry", "text"), FAMILIES, ids=[f"{e}:{t[:30]}" for e, t in FAMILIES])
def test_a_phrasing_of_the_family_ranks_its_entry_first(entry, text):
    matches = diagnose(text, KB).to_dict()["matches"]
    assert matches, text
    assert matches[0]["entry"] == entry


@pytest.mark.parametrize(("entry", "text"), FAMILIES, ids=[f"{e}:{t[:30]}" for e, t in FAMILIES])
def test_a_prose_match_is_worded_as_a_guess(entry, text):
    """Words alone never make a confident diagnosis."""
    assert not diagnose(text, KB).to_dict()["matches"][0]["confident"]


def test_a_module_built_in_a_forward_shown_as_code_is_read_as_such():
    code = ("class Head(nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "    def forward(self, x):\n"
            "        proj = nn.Linear(x.shape[-1], 10)\n"
            "        return proj(x)\n")
    assert "layer created inside forward" in readings(code)
    assert diagnose("Val accuracy never moves.\n" + code, KB).to_dict()["matches"][0]["entry"] == (
        "training.optimizer_stale_params")


def test_modules_built_in_init_and_functional_calls_in_forward_are_not():
    code = ("class Head(nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.proj = nn.Linear(32, 10)\n"
            "    def forward(self, x):\n"
            "        return nn.functional.relu(self.proj(x))\n")
    assert "layer created inside forward" not in readings(code)
