"""Pastes as people write them: the error found whatever form the paste took.

Each paste is written here in one form seen in issue threads and forums (the
message quoted in a sentence, markdown around it, an IDE's or a logger's
decoration, a line broken by the page), around messages torch really prints.
"""

from __future__ import annotations

import pytest

from torchdoctor.knowledge import load_knowledge
from torchdoctor.match import diagnose
from torchdoctor.parse import parse_traceback

DEVICES = ("Expected all tensors to be on the same device, but found at least two devices, "
           "cuda:0 and cpu!")
CHANNELS = ("Given groups=1, weight of size [64, 3, 7, 7], expected input[8, 1, 224, 224] to "
            "have 3 channels, but got 1 channels instead")
FRAMES = ('  File "train.py", line 41, in <module>\n'
          "    logits = model(images)\n"
          '  File "/opt/conda/lib/python3.10/site-packages/torch/nn/modules/module.py", '
          "line 1518, in _call_impl\n"
          "    return forward_call(*args, **kwargs)\n")


@pytest.fixture(scope="module")
def kb():
    return load_knowledge(include_user=False, use_cache=False)


def top(text: str, kb) -> str | None:
    matches = diagnose(text, kb).matches
    return matches[0].entry.id if matches else None


def test_the_error_line_before_a_cut_traceback(kb):
    paste = (f"RuntimeError: {DEVICES}\n\nfull trace:\n"
             f"Traceback (most recent call last):\n{FRAMES}")
    parsed = parse_traceback(paste)
    assert (parsed.type, parsed.message) == ("RuntimeError", DEVICES)
    assert parsed.frames[0].file == "train.py"
    assert top(paste, kb) == "device.mixed_devices"


def test_a_message_quoted_inside_prose(kb):
    paste = ('When I call loss.backward() I got an error "element 0 of tensors does not require '
             'grad and does not have a grad_fn" even though the model is in train mode. Any '
             "idea?\n")
    parsed = parse_traceback(paste)
    assert parsed.message == ("element 0 of tensors does not require grad and does not have a "
                              "grad_fn")
    assert top(paste, kb) == "autograd.no_grad_fn"


def test_a_message_in_curly_quotes_inside_prose():
    paste = ("Training stops at the first batch with “CUDA out of memory. Tried to allocate "
             "2.00 GiB” although nvidia-smi shows free memory.\n")
    assert parse_traceback(paste).message == "CUDA out of memory. Tried to allocate 2.00 GiB"


@pytest.mark.parametrize("written", [
    "ValueError(Attempting to unscale FP16 gradients.)",
    "ValueError('Attempting to unscale FP16 gradients.')",
    "the scaler raised ValueError(\"Attempting to unscale FP16 gradients.\") at step 1",
])
def test_an_exception_written_as_its_repr(written):
    parsed = parse_traceback(written + "\n")
    assert (parsed.type, parsed.message) == ("ValueError", "Attempting to unscale FP16 gradients.")


def test_an_error_line_in_backticks_and_bold(kb):
    for paste in (f"`RuntimeError: {CHANNELS}`", f"**RuntimeError: {CHANNELS}**",
                  f"Error: **RuntimeError**: {CHANNELS}"):
        parsed = parse_traceback(paste + "\n")
        assert (parsed.type, parsed.message) == ("RuntimeError", CHANNELS), paste
        assert top(paste, kb) == "shape.conv_channels"


def test_html_entities_from_a_scraped_page():
    paste = ("Traceback (most recent call last):\n"
             "  File &quot;train.py&quot;, line 12, in &lt;module&gt;\n"
             "    loss = criterion(out, target)\n"
             "RuntimeError: expected scalar type Long but found Float\n")
    parsed = parse_traceback(paste)
    assert parsed.frames[0].file == "train.py" and parsed.frames[0].function == "<module>"
    assert parsed.message == "expected scalar type Long but found Float"


def test_a_code_fence_that_starts_mid_line():
    paste = ("I run the script and get ```Traceback (most recent call last):\n"
             f"{FRAMES}RuntimeError: {CHANNELS}```\n\nwhat am I doing wrong?\n")
    parsed = parse_traceback(paste)
    assert (parsed.type, parsed.message) == ("RuntimeError", CHANNELS)
    assert len(parsed.frames) == 2


def test_a_fenced_block_with_a_language_tag():
    paste = f"```python\nTraceback (most recent call last):\n{FRAMES}RuntimeError: {DEVICES}\n```\n"
    assert parse_traceback(paste).message == DEVICES


def test_ide_noise_after_the_exception():
    paste = (f"Traceback (most recent call last):\n{FRAMES}RuntimeError: {DEVICES}\n"
             "python-BaseException\n\nProcess finished with exit code 1\n")
    parsed = parse_traceback(paste)
    assert parsed.message == DEVICES


@pytest.mark.parametrize("prefix", [
    "ERROR:root:", "ERROR:__main__:", "2024-03-02 11:04:09,551 - trainer - ERROR - ",
    "2024-03-02 11:04:09.551 | ERROR    | __main__:main:88 - ", "[rank1]: ", "[rank 1]: ",
    "[1,1]<stderr>:",
])
def test_logging_and_rank_prefixes(prefix):
    lines = ["Traceback (most recent call last):", *FRAMES.rstrip("\n").split("\n"),
             f"RuntimeError: {CHANNELS}"]
    paste = "\n".join(prefix + line for line in lines) + "\n"
    parsed = parse_traceback(paste)
    assert (parsed.type, parsed.message) == ("RuntimeError", CHANNELS), prefix
    assert parsed.frames[0].file == "train.py"


def test_a_logged_error_record_without_a_traceback():
    paste = ("2024-03-02 11:04:09,551 - trainer - INFO - epoch 3 started\n"
             f"2024-03-02 11:04:10,102 - trainer - ERROR - step failed: {CHANNELS}\n")
    assert parse_traceback(paste).message.endswith(CHANNELS)


def test_windows_paths():
    paste = ("Traceback (most recent call last):\n"
             '  File "C:\\Users\\ada\\projects\\seg\\train.py", line 77, in <module>\n'
             "    outputs = net(inputs)\n"
             '  File "C:\\Users\\ada\\anaconda3\\envs\\seg\\Lib\\site-packages\\torch\\nn\\'
             'modules\\conv.py", line 456, in _conv_forward\n'
             "    return F.conv2d(input, weight, bias, self.stride,\n"
             f"RuntimeError: {CHANNELS}\n")
    parsed = parse_traceback(paste)
    assert parsed.message == CHANNELS
    assert parsed.user_frame.file.endswith("train.py") and parsed.user_frame.line == 77
    assert not parsed.frames[-1].is_user


def test_a_message_broken_across_two_lines(kb):
    paste = (f"Traceback (most recent call last):\n{FRAMES}RuntimeError: Given groups=1, weight "
             "of size [64, 3, 7, 7], expected input[8, 1, 224, 224] to have 3\n"
             "channels, but got 1 channels instead\n")
    assert top(paste, kb) == "shape.conv_channels"
    bus = ("RuntimeError: DataLoader worker (pid 4721) is killed by signal: Bus\nerror. It is "
           "possible that dataloader's workers are out of shared memory.\n")
    assert top(bus, kb) == "dataloader.worker_bus_error_shm"


def test_a_compile_log_ending_in_a_recompilation_reason(kb):
    paste = (
        "W0302 11:04:09.551000 1234 torch/_dynamo/convert_frame.py:844] torch._dynamo hit "
        "config.cache_size_limit (8)\n"
        "W0302 11:04:09.551000 1234 torch/_dynamo/convert_frame.py:844]    function: 'forward' "
        "(model.py:52)\n"
        "W0302 11:04:09.551000 1234 torch/_dynamo/convert_frame.py:844]    last reason: 0/0: "
        "tensor 'L['x']' size mismatch at index 0. expected 16, actual 12\n"
        "W0302 11:04:09.551000 1234 torch/_dynamo/convert_frame.py:844] To log all "
        'recompilation reasons, use TORCH_LOGS="recompiles".\n')
    parsed = parse_traceback(paste)
    assert parsed.message == "torch._dynamo hit config.cache_size_limit (8)"
    assert top(paste, kb) == "compile.recompile_limit"


def test_the_root_error_among_several_lone_errors():
    paste = ("RuntimeError: CUDA error: device-side assert triggered\n"
             "after that every step fails with\n"
             "RuntimeError: CUDA error: an illegal memory access was encountered\n")
    message = parse_traceback(paste).message
    assert message.startswith("CUDA error: device-side assert triggered")
    assert "illegal memory access" not in message


def test_an_error_line_anywhere_never_gives_an_empty_message():
    paste = (f"{CHANNELS}\n\nTraceback (most recent call last):\n{FRAMES}"
             "  File \"/opt/conda/lib/python3.10/site-packages/torch/nn/modules/conv.py\", "
             "line 456, in _conv_forward\n")
    parsed = parse_traceback(paste)
    assert parsed.message == CHANNELS


def test_a_label_line_before_the_error_is_not_the_error():
    paste = ("It fails inside the loss:\n\nError:-\nRuntimeError: Assertion `cur_target >= 0 && "
             "cur_target < n_classes' failed.  at /pytorch/aten/src/THNN/generic/"
             "ClassNLLCriterion.c:93\n")
    parsed = parse_traceback(paste)
    assert parsed.type == "RuntimeError"
    assert parsed.message.startswith("Assertion `cur_target >= 0")


def test_an_exception_after_words_in_another_script():
    paste = ("训练到一半报错：RuntimeError: DataLoader worker (pid 3127) is killed by signal: "
             "Bus error. It is possible that dataloader's workers are out of shared memory.\n")
    parsed = parse_traceback(paste)
    assert parsed.type == "RuntimeError"
    assert parsed.message.startswith("DataLoader worker (pid 3127) is killed by signal: Bus")


def test_a_traceback_flattened_onto_one_line():
    paste = ('File "/srv/env/lib/python3.11/site-packages/torch/nn/modules/module.py", line 1786, '
             "in _call_impl return forward_call(*args, **kwargs) ^^^^^^^^^^ File \"/srv/app/"
             'infer.py", line 40, in forward prompt = torch.load(prompt_path) ^^^^^^^^^^ File '
             '"/srv/env/lib/python3.11/site-packages/torch/serialization.py", line 1553, in load '
             "raise pickle.UnpicklingError(_get_wo_message(str(e))) from None "
             "_pickle.UnpicklingError: Weights only load failed. WeightsUnpickler error: "
             "Unsupported operand 118\n")
    parsed = parse_traceback(paste)
    assert parsed.type == "UnpicklingError"
    assert parsed.message.startswith("Weights only load failed.")


def test_a_line_logged_at_error_level_is_an_error_line():
    paste = ("2021-06-11T08:12:40 | trainer.loop: Starting training...\n"
             "ERROR: Unexpected bus error encountered in worker. This might be caused by "
             "insufficient shared memory (shm).\n")
    parsed = parse_traceback(paste)
    assert parsed.message.startswith("Unexpected bus error encountered in worker.")


def test_an_old_torch_wording_alone_is_an_error_line():
    paste = ("log:\nTHCudaCheck FAIL file=torch/csrc/cuda/Module.cpp line=34 error=10 : invalid "
             "device ordinal\n")
    parsed = parse_traceback(paste)
    assert parsed.message.startswith("THCudaCheck FAIL") and parsed.message.endswith("ordinal")


def test_the_lines_a_message_opens_with_a_colon_come_with_it(kb):
    paste = ("Loading my checkpoint gives RuntimeError: Error(s) in loading state_dict for "
             "Net:\n\tMissing key(s) in state_dict: \"conv1.weight\", \"fc.bias\".\n"
             "\tUnexpected key(s) in state_dict: \"module.conv1.weight\", \"module.fc.bias\".\n")
    parsed = parse_traceback(paste)
    assert parsed.message.startswith("Error(s) in loading state_dict for Net:\n")
    assert "Unexpected key(s)" in parsed.message
    assert top(paste, kb) == "state_dict.module_prefix"


def test_prose_in_another_script_after_the_message_is_left_out():
    paste = ("RuntimeError: Expected object of scalar type Float but got scalar type Double for "
             "argument #2 'mat2'，换了数据类型还是不行，为什么？\n")
    assert parse_traceback(paste).message.endswith("for argument #2 'mat2'")


def test_an_error_printed_straight_after_a_progress_bar():
    paste = ("Valid epoch 1:   9%|███▍                        | 1/11 [00:01<00:13,  1.33s/it]"
             "RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB\n")
    parsed = parse_traceback(paste)
    assert (parsed.type, parsed.message) == ("RuntimeError",
                                             "CUDA out of memory. Tried to allocate 20.00 MiB")


def test_a_quoted_exception_line_ends_at_its_quote():
    paste = ('Calling int() on the result raises "ValueError: only one element tensors can be '
             'converted to Python scalars" at the line with torch.where. Seen this before?\n')
    parsed = parse_traceback(paste)
    assert (parsed.type, parsed.message) == (
        "ValueError", "only one element tensors can be converted to Python scalars")


def test_curly_quotes_from_a_page_are_straightened(kb):
    paste = "TypeError: ‘Tensor’ object is not callable\n"
    assert parse_traceback(paste).message == "'Tensor' object is not callable"
    assert top(paste, kb) == "other.tensor_not_callable"


def test_the_message_inside_a_sentence_in_another_language():
    paste = ("torch.cuda.is_available() は True なのに、学習を始めると Expected all tensors to be "
             "on the same device, but found at least two devices, cuda:0 and cpu! が出ます。\n")
    assert parse_traceback(paste).message == DEVICES


def test_a_question_under_the_error_line_is_not_part_of_it():
    for question in ("Excuse me, how to solve this error?", "第一次运行正常，现在出错了。"):
        paste = f"RuntimeError: CUDA error: invalid device ordinal\n{question}\n"
        assert parse_traceback(paste).message == "CUDA error: invalid device ordinal"
