"""Prose families whose wording tells sibling entries apart.

Each list holds sentences of the kind people post, in several phrasings, for one
fact about torch that decides between entries which otherwise read alike: memory
that the caching allocator holds (it moves with input sizes, empty_cache gives it
back, it goes up and stays) against memory that leaks (it only grows, empty_cache
does nothing) and against the host RAM that DataLoader workers copy; a model
evaluated in train mode against BatchNorm statistics that do not fit and against a
forward pass that mixes the samples of a batch; a layer the optimizer never saw; a trained model whose evaluation
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
    ("memory.caching_allocator",
     "Memory steps up every time a batch with larger images than before comes through, and never comes back down."),
    # a leak only grows, and the cache being emptied does not touch it
    ("memory.growing",
     "Memory increases every step and then the run stops at iteration 500 with out of memory."),
    ("memory.growing", "GPU memory keeps growing every iteration until it runs out."),
    ("memory.growing", "Memory increases each epoch and empty_cache() doesn't help at all."),
    # the optimizer holds what it was handed when built
    ("training.optimizer_stale_params",
     "Loss goes down but validation accuracy stays at chance; two conv layers are created inside forward()."),
    ("training.optimizer_stale_params",
     ("With the manual update over model.parameters() it learns; after swapping in optim.Adam "
     "the loss stays where it started.")),
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
    ("training.eval_mode_left_on", "Shouldn't the demo call model.eval() before it classifies the image?"),
    ("training.eval_mode_left_on", "推理的时候是不是应该先调用 net.eval()？"),
    ("training.batchnorm_running_stats",
     "Evaluation accuracy swings between runs; are running_mean and running_var the problem?"),
    # parameters the optimizer holds move with weight decay, whether a loss reaches them or not
    ("training.freeze_not_applied",
     ("I dropped the auxiliary head's loss from the total, yet its weights still change a little "
     "every iteration. Why, if no loss uses them?")),
    # a metric that works on the training batches and reads exactly 0 on validation
    ("training.shuffle_off",
     ("On my own images the training accuracy climbs normally, but validation accuracy is 0 every "
     "epoch. With CIFAR-10 both are fine.")),
    # workers start afresh each epoch: a fork that deadlocks shows at the boundary
    ("dataloader.hang",
     "Training freezes at the start of every new epoch for minutes; within an epoch it runs."),
    # a CPU wheel on a machine with a GPU: the card idles
    ("device.torch_without_cuda",
     "Inference is very slow and GPU usage sits near 0%. torch.__version__ prints 2.1.0+cpu."),
    # the allocator keeps what the first pass took and reuses it
    ("memory.caching_allocator",
     ("The first validation takes 3 GB more GPU memory and never gives it back, but the second "
     "validation does not raise it any further.")),
    # eval() missing where the model evaluates: a contrast between two paths, a notebook call
    # that displayed nothing (eval() returns the module), someone else's weights answering one class
    ('training.eval_mode_left_on',
     'predict.py switches the network to eval mode before scoring, while the validation hook inside train.py does not.'),
    ('training.eval_mode_left_on',
     'In Colab, model.eval() printed nothing at all, and the downloaded weights still give a wrong label.'),
    ('training.eval_mode_left_on',
     'Jupyter で model.eval() を実行しても何も表示されませんでした。推論結果もおかしいです。'),
    ('training.eval_mode_left_on',
     "I downloaded a pretrained densenet and it says 'toilet tissue' for every image I feed it, one image at a time."),
    ('training.eval_mode_left_on',
     'train() is only called once per epoch, but the mid-epoch validation calls eval(), so later batches train in eval mode.'),
    # eval() makes the numbers worse, or taking it out brings the training-time numbers back
    ('training.batchnorm_running_stats',
     'Adding model.eval() before the test loop lowers the IoU from 0.71 to 0.40.'),
    ('training.batchnorm_running_stats',
     'If I comment out the eval() call, validation loss is back to the same as the training loss.'),
    ("training.batchnorm_running_stats", "Top-1 is 20 points lower in eval mode than when I leave the net in train()."),
    # a sample's output depends on the samples beside it in the batch
    ('training.batch_dependent_forward',
     'A single sentence scored alone gets a different probability than when it is scored together with its neighbours in a batch.'),
    ('training.batch_dependent_forward',
     'The embedding of each sample should be independent of the other samples in the batch, but it is not.'),
    ("training.batch_dependent_forward",
     "Run alone, a clip gets a different score than in the full batch; a batch of 4 vs a batch of 16 also gives different numbers."),
    ("training.eval_mode_left_on",
     "Predicting the same sentence several times gives different labels each time; is dropout still active at inference?"),
    # evaluation that records a graph nothing uses (no torch.no_grad, or before 0.4 no volatile)
    ('memory.caching_allocator',
     'The evaluation loop runs without torch.no_grad, and inference takes much more GPU memory than training does.'),
    ('memory.caching_allocator',
     'Predicting with plain Variables costs twice the memory; setting volatile=True brings memory back to normal.'),
    # a model's outputs kept on the device in a list
    ('memory.growing',
     'GPU memory creeps up during evaluation; my loop does `outputs.append(out)` for every batch.'),
    # one input too large for the card, or torch's OOM message retold
    ('memory.cuda_oom',
     'Out of memory on a 48 GB card as soon as I feed a 4000x3000 image to the model.'),
    ('memory.cuda_oom',
     'The attention layer alone tries to allocate 64 GB for one input.'),
    ("memory.cuda_oom", "Denoising a 24 megapixel photo ends in CUDA out of memory on my 12 GB card."),
    ("memory.cuda_oom", "Out of memory as soon as I pass a high-resolution scan through the segmentation net."),
    ('memory.cuda_oom',
     'Training died with cuda runtime error: out of memory after some time; batch size is 2.'),
    # workers that each copy a dataset of Python objects as they read it
    ('dataloader.worker_copy_on_read',
     'RAM usage climbs through the epoch because of copy-on-read: every worker touches my list of dicts.'),
    ('dataloader.worker_copy_on_read',
     'My huge annotations dict is read by all 12 workers and host RAM keeps rising.'),
    ("dataloader.worker_copy_on_read",
     "With 8 workers reading a list of 5 million captions, used RAM keeps going up; as a numpy array the memory stays flat."),
    ('dataloader.worker_copy_on_read',
     'System memory is exhausted right after building the DataLoaders, before a single step runs.'),
    # several GPUs: each rank's process on GPU 0, DataParallel's gather on cuda:0, a speed-up far
    # below the GPU count with the data time unchanged, epochs that do not get shorter
    ('distributed.ddp_contexts_on_gpu0',
     "With torchrun on 4 GPUs, nvidia-smi lists every rank's process on GPU 0, each holding about 700 MiB."),
    ('distributed.ddp_contexts_on_gpu0',
     "After resuming from the checkpoint under DDP, GPU 0 carries several extra blocks of memory that the other cards don't have."),
    ('distributed.ddp_contexts_on_gpu0',
     '用 DDP 训练时主卡上能看到所有进程，其他卡正常。'),
    ('distributed.dataparallel_imbalance',
     'Under nn.DataParallel the logits and the loss all end up on cuda:0, and that card is the one that runs out.'),
    ("distributed.ddp_contexts_on_gpu0",
     "Resuming from the checkpoint under DDP puts ~700MB on GPU 0 for every rank."),
    ("distributed.ddp_contexts_on_gpu0",
     "The ranks on cards 1-7 each also take memory on the first GPU."),
    ("distributed.missing_distributed_sampler",
     "Our DDP script still builds the DataLoader with a RandomSampler, so the epoch is as long as on one GPU."),
    ('distributed.dataparallel_overhead',
     'Four GPUs only give 1.6x over one; the data time per step is the same, yet the iteration time is twice as long.'),
    ('distributed.missing_distributed_sampler',
     'I went from 2 to 8 GPUs and the progress bar still shows the same number of iterations per epoch.'),
    ("distributed.ddp_startup_hang",
     "DDP on four GPUs just stops right after setup: the ranks initialise, then no step and no error."),
    # the same families in other words: growth per batch with predictions kept, memory that
    # follows the input size and then stays, a tile too large for any card, a list of paths
    # read by every worker, a speed-up of 1.1x
    ('memory.growing',
     'During inference the GPU memory grows by about 200MB every batch until it runs out; I keep every prediction tensor in a Python list.'),
    ('memory.caching_allocator',
     'Validation needs way more GPU memory than training. Turns out I never wrapped the validation loop in torch.no_grad().'),
    ('memory.caching_allocator', 'The `_evaluate` method does not use torch.no_grad, so it records graphs for nothing.'),
    ('memory.caching_allocator',
     'nvidia-smi shows memory going up whenever a longer sentence comes in, then it stays at that level.'),
    ('memory.cuda_oom',
     'Inference on a single 8192x8192 satellite tile runs out of memory even on an A100 80GB.'),
    ('dataloader.worker_copy_on_read',
     'Host memory grows steadily across the epoch when num_workers > 0; my Dataset keeps a Python list of 10M file paths. With numpy arrays instead it stays flat.'),
    ('training.eval_mode_left_on',
     "Loaded the ImageNet-pretrained mobilenet from torchvision and it outputs class 'umbrella' for every photo I try."),
    ('training.eval_mode_left_on',
     'My evaluate() function never switches the model to eval mode, so dropout is still active at test time.'),
    ('training.batch_dependent_forward',
     'The score of one test image changes depending on which other images are in the same batch, even in eval mode.'),
    ('distributed.ddp_contexts_on_gpu0',
     'With DistributedDataParallel on 8 GPUs, GPU 0 shows 7 extra processes of ~500MB each in nvidia-smi.'),
    ('distributed.missing_distributed_sampler',
     'Using DDP with 4 GPUs, each GPU processes the whole dataset every epoch; the epoch takes as long as on one GPU.'),
    ('distributed.dataparallel_overhead',
     'DataParallel on 2 GPUs gives only 1.1x speedup compared to a single GPU.'),
    ("distributed.dataparallel_overhead", "Four cards but the speed-up is nowhere near linear; where does the time go?"),
    ('distributed.dataparallel_imbalance',
     'nn.DataParallel with 4 GPUs: GPU 0 runs out of memory, the others are half empty.'),
    ('memory.cuda_oom', 'CUDA out of memory with batch size 16 on my 1080 Ti; with batch size 8 it trains fine.'),
    ('memory.growing',
     'I call model.eval() and use torch.no_grad() in validation, but GPU memory still keeps growing every epoch until OOM.'),
    # Workers whose random numbers repeat, the order of the words as people tell it.
    ("dataloader.worker_numpy_seed",
     "With 4 workers, every worker's random numbers are the same; the noise repeats."),
    ("dataloader.worker_numpy_seed", "num_workers=4 时每个 worker 生成的随机数完全相同"),
    ("dataloader.worker_numpy_seed", "num_workers=4 にすると各 worker の乱数が同じになります"),
    # A class-index loss that wants Long labels, told without its message.
    ("dtype.target_not_long",
     "The labels are float32 from the CSV, and for CrossEntropyLoss they need to be Long."),
    ("dtype.target_not_long", "nll_loss requires int64 class labels; mine were floats."),
    ("dtype.target_not_long", "Does CrossEntropyLoss want the targets converted to int64 first?"),
    # A loader that hangs, told through the setting that changes it.
    ("dataloader.hang", "Evaluation blocks forever; with num_workers lowered to 2 it still blocks."),
    # Images of one colour mode fed to a network built for another.
    ("shape.conv_channels", "The segmentation model fails on RGBA screenshots; converting them to RGB first works."),
    ("shape.conv_channels", "My PNGs have an alpha channel, so there are four channels where the network wants three."),
    ("shape.conv_channels", "Grayscale X-rays into a ResNet that was pretrained on RGB images: channel error."),
    ("shape.conv_channels", "图片是4通道的png，模型要求3通道，运行就报错"),
    ("shape.conv_channels", "グレースケール画像をRGBで学習したモデルに入れるとエラーになります"),
    # The training loss falls where the examples start to repeat.
    ("training.epoch_step_loss", "The training loss dips sharply once the third epoch starts."),
    ("training.epoch_step_loss", "train loss suddenly drops at around step 12k, and the lr schedule is constant."),
    ("training.epoch_step_loss", "Why is there a second sudden drop in the training loss halfway through?"),
    # The DataLoader's workers start afresh with every epoch.
    ("dataloader.workers_restart_each_epoch",
     "Training waits about 40 seconds at the beginning of every epoch before the first batch arrives."),
    ("dataloader.workers_restart_each_epoch",
     "The worker processes are restarted each epoch (their PIDs change) and that costs time."),
    ("dataloader.workers_restart_each_epoch", "There is a long pause between epochs with num_workers=16."),
    # The previous step's tensors still referenced at the next forward.
    ("memory.previous_step_graph_alive",
     "The outputs of the previous batch are still in memory while the next forward runs."),
    ("memory.previous_step_graph_alive",
     "Variables in a for loop are not freed until they are reassigned, so two graphs are alive at once."),
    # A library importing a private torch name the installed torch lacks.
    ("other.private_api_removed",
     "Since updating to torch 2.4 the package fails to import: `_get_device_index` cannot be found in torch.cuda._utils."),
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


@pytest.mark.parametrize(("text", "kept"), [
    ("GPU memory grows in my eval loop:\n    preds.append(logits)\n", True),
    ("VRAM keeps rising; I collect all_outputs.append(model_out) each step", True),
    # converted, detached or moved first: nothing stays on the device
    ("GPU memory grows in my eval loop:\n    preds.append(logits.detach().cpu())\n", False),
    # a list of outputs in a text that says nothing of memory
    ("Accuracy is low; I do preds.append(logits) and concatenate at the end.", False),
])
def test_a_models_output_appended_as_it_is_is_read_only_beside_memory(text, kept):
    assert ("model outputs appended to a list as tensors" in readings(text)) is kept


@pytest.mark.parametrize(("text", "said"), [
    ("The converted VGG weights load fine but it answers class 611 for every image.", True),
    ("A downloaded pretrained ResNet gives the same class whatever picture I show it.", True),
    ("With the imagenet pretrained weights the predictions make no sense: a cat comes out as a pedestal.", True),
    # a model trained or fine-tuned here that answers one class: the data or the rate
    ("I fine-tune a pretrained ResNet-50 and after training it predicts the same class for all images.",
     False),
    ("Training a pretrained BERT with lr=0.1 gives the same label for every input.", False),
])
def test_weights_trained_elsewhere_answering_one_class_are_read_only_without_training(text, said):
    reading = "weights trained elsewhere give wrong classes at inference"
    assert (reading in readings(text)) is said
    entries = [m["entry"] for m in diagnose(text, KB).to_dict()["matches"] if m["kind"] == "match"]
    assert ("training.eval_mode_left_on" in entries[:1]) is said


@pytest.mark.parametrize("text", [
    "Validation runs under torch.no_grad() and model.eval(); accuracy is 91%.",
    "I wrap the evaluation in torch.no_grad() and the memory stays flat.",
])
def test_evaluation_under_no_grad_said_as_done_is_no_missing_no_grad(text):
    assert [m for m in diagnose(text, KB).to_dict()["matches"] if m["kind"] == "match"] == []


def test_a_big_dict_beside_workers_is_the_copy_only_when_memory_is_the_complaint():
    hang = "With num_workers=8 the DataLoader hangs forever; each worker has a large dict of annotations."
    assert diagnose(hang, KB).to_dict()["matches"][0]["entry"] == "dataloader.hang"
    ruled_out = ("The training hangs at the first batch with num_workers=4; the dataset holds a big "
                 "list of file names and RAM is fine.")
    assert diagnose(ruled_out, KB).to_dict()["matches"][0]["entry"] == "dataloader.hang"
    ram = "RAM climbs each epoch; each worker reads a large dict of annotations."
    assert diagnose(ram, KB).to_dict()["matches"][0]["entry"] == "dataloader.worker_copy_on_read"


@pytest.mark.parametrize("text", [
    "I load the checkpoint with map_location='cpu' and then move the model to cuda:0; predictions look fine.",
    "After loading the pretrained model on the first GPU, predictions are slow.",
])
def test_a_checkpoint_loaded_on_one_gpu_is_no_rank_on_gpu0(text):
    entries = [m["entry"] for m in diagnose(text, KB).to_dict()["matches"] if m["kind"] == "match"]
    assert "distributed.ddp_contexts_on_gpu0" not in entries
