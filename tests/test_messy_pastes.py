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


@pytest.mark.parametrize("written", [
    'the loop dies with "RuntimeError:cudnn RNN backward can only be called in training mode"',
    "RuntimeError:cudnn RNN backward can only be called in training mode",
])
def test_an_exception_line_retyped_without_a_space_after_its_colon(written, kb):
    parsed = parse_traceback(written + "\n")
    assert (parsed.type, parsed.message) == (
        "RuntimeError", "cudnn RNN backward can only be called in training mode")
    assert top(written, kb) == "training.eval_mode_left_on"


def test_a_colon_without_a_space_after_a_word_that_names_no_exception_is_no_error_line():
    assert parse_traceback("Loss:nan at step 10, lr:0.1\n") is None


def test_nccls_warning_is_the_error_when_no_python_exception_is_pasted(kb):
    paste = ("four GPUs fail at init, two work:\n"
             "node1:2041:2077 [1] NCCL INFO Channel 00/02 :    0   1   2   3\n"
             "node1:2041:2077 [1] misc/shmutils.cc:103 NCCL WARN Cuda failure 'invalid argument'\n")
    assert parse_traceback(paste).message == "NCCL WARN Cuda failure 'invalid argument'"
    assert top(paste, kb) == "distributed.nccl_error"


def test_the_infiniband_warning_nccl_prints_on_every_machine_is_no_error():
    paste = ("DDP hangs in backward after a few epochs.\n"
             "node1:7778:7778 [0] NCCL INFO NET/Socket : Using [0]enp5s0:192.168.0.220<0>\n"
             "node1:7778:7778 [0] misc/ibvwrap.cc:63 NCCL WARN Failed to open libibverbs.so[.1]\n")
    assert parse_traceback(paste) is None


def test_a_message_in_curly_quotes_inside_prose():
    paste = ("Training stops at the first batch with “CUDA out of memory. Tried to allocate "
             "2.00 GiB” although nvidia-smi shows free memory.\n")
    assert parse_traceback(paste).message == "CUDA out of memory. Tried to allocate 2.00 GiB"


NAMED_OP = """"addmm_impl_cpu_" not implemented for 'Half'"""


@pytest.mark.parametrize("quoted", [
    '一提问就报 "RuntimeError: {}"。',
    "一提问就报“RuntimeError: {}”，怎么办",
    "一提问就报「RuntimeError: {}」。",
    "実行すると『RuntimeError: {}』と出ます。",
    "Выдаёт ошибку «RuntimeError: {}», что делать?",
    "Es kommt \u201eRuntimeError: {}\u201c beim Start.",
    "It says 'RuntimeError: {}' when I ask.",
    "It says `RuntimeError: {}` when I ask.",
    "报错：RuntimeError: {}",
])
def test_a_message_that_quotes_an_op_keeps_it_inside_any_quotes_around_it(quoted):
    # torch's own quotes ("addmm_impl_cpu_", 'Half') are paired inside the person's
    parsed = parse_traceback(quoted.format(NAMED_OP))
    assert (parsed.type, parsed.message) == ("RuntimeError", NAMED_OP)


@pytest.mark.parametrize("quoted", [
    "跑的时候报「{}」。", "Выдаёт «{}», что делать?", "报错 “{}”，怎么办",
])
def test_a_bare_message_in_the_quotes_of_another_language(quoted):
    assert parse_traceback(quoted.format(DEVICES)).message == DEVICES


def test_a_space_before_the_closing_backtick_still_closes_the_span():
    paste = ("size 'same' gives `RuntimeError: invalid argument 0: Sizes of tensors must match "
             "except in dimension 0. Got 306 and 375 in dimension 2 `, so I fixed it.")
    assert parse_traceback(paste).message.endswith("Got 306 and 375 in dimension 2")


def test_an_apostrophe_inside_a_word_does_not_close_a_single_quote():
    parsed = parse_traceback("It crashes with 'RuntimeError: Can't pickle local object' at start.")
    assert parsed.message == "Can't pickle local object"


@pytest.mark.parametrize("system_text", [
    "页面文件太小，无法完成操作。",
    "ページング ファイルが小さすぎるため、この操作を完了できません。",
    "페이징 파일이 너무 작아 이 작업을 완료할 수 없습니다.",
    "The paging file is too small for this operation to complete.",
])
def test_a_windows_error_keeps_its_system_text_in_the_users_language(system_text, kb):
    paste = (f"**OSError: [WinError 1455] {system_text} Error loading "
             '"D:\\venv\\lib\\site-packages\\torch\\lib\\cublas64_11.dll" or one of its '
             "dependencies.** 完全不知道该怎么办了。")
    parsed = parse_traceback(paste)
    assert parsed.message.startswith("[WinError 1455] ")
    assert parsed.message.endswith("or one of its dependencies.")
    assert top(paste, kb) == "dataloader.windows_paging_file"


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


def test_a_recompilation_reason_under_dynamos_frame_and_compile_id_is_still_no_error(kb):
    paste = (
        "W1126 16:03:16.529497 1228885 torch/_dynamo/convert_frame.py:844] [1/8] torch._dynamo "
        "hit config.cache_size_limit (8)\n"
        "W1126 16:03:16.529497 1228885 torch/_dynamo/convert_frame.py:844] [1/8]    last "
        "reason: 1/0: tensor 'L['p'][0]' size mismatch at index 0. expected 16, actual 64\n")
    assert parse_traceback(paste).message.endswith("hit config.cache_size_limit (8)")
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
    assert parsed.message == ("cuda runtime error (10) : invalid device ordinal at "
                              "torch/csrc/cuda/Module.cpp:34")


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


# --- forms read since the parser learned them -----------------------------------------

SPAWNED = '''\
Traceback (most recent call last):
  File "C:\\work\\ddp\\launch.py", line 31, in <module>
    mp.spawn(worker, args=(2,), nprocs=2)
  File "C:\\tools\\py39\\lib\\site-packages\\torch\\multiprocessing\\spawn.py", line 160, in join
    raise ProcessRaisedException(msg, error_index, failed_process.pid)
torch.multiprocessing.spawn.ProcessRaisedException:

-- Process 1 terminated with the following error:
Traceback (most recent call last):
  File "C:\\tools\\py39\\lib\\site-packages\\torch\\multiprocessing\\spawn.py", line 69, in _wrap
    fn(i, *args)
  File "C:\\work\\ddp\\launch.py", line 12, in worker
    dist.init_process_group("nccl", rank=rank, world_size=world)
RuntimeError: Distributed package doesn't have NCCL built in
'''


def test_a_markdown_heading_holding_the_error_keeps_its_paired_quotes():
    paste = ("# RuntimeError: Expected a 'cpu' device type for generator but found 'cuda'\n"
             "My loader worked yesterday, what changed?\n")
    parsed = parse_traceback(paste)
    assert (parsed.type, parsed.message) == (
        "RuntimeError", "Expected a 'cpu' device type for generator but found 'cuda'")


def test_an_error_inside_a_sentence_in_another_language_keeps_its_closing_quote():
    paste = ("训练时出现 RuntimeError: Expected object of scalar type Float but got scalar type "
             "Double for argument #2 'other'，请问怎么改？")
    assert parse_traceback(paste).message == (
        "Expected object of scalar type Float but got scalar type Double for argument #2 'other'")


def test_vs_codes_exception_has_occurred_gives_the_type_and_the_message_under_it():
    paste = ('The debugger stops here:\n\nException has occurred: RuntimeError\n'
             'input.size(-1) must be equal to input_size. Expected 8, got 3\n'
             '  File "/home/me/seq/model.py", line 30, in forward\n'
             '    out, _ = self.rnn(x)\n'
             '  File "/home/me/seq/train.py", line 52, in <module>\n'
             '    y = net(batch)\n')
    parsed = parse_traceback(paste)
    assert (parsed.type, parsed.message) == (
        "RuntimeError", "input.size(-1) must be equal to input_size. Expected 8, got 3")
    assert parsed.extras["source"] == "error_line_outside_traceback"
    assert (parsed.user_frame.file, parsed.phase) == ("/home/me/seq/model.py", "forward")


def test_mp_spawn_re_raising_a_childs_error_is_read_through_to_the_child(kb):
    parsed = parse_traceback(SPAWNED)
    assert (parsed.type, parsed.message) == ("RuntimeError",
                                             "Distributed package doesn't have NCCL built in")
    assert [link.type for link in parsed.chain] == ["RuntimeError", "ProcessRaisedException"]
    assert parsed.user_frame.function == "worker"
    assert top(SPAWNED, kb) == "distributed.nccl_not_available"


def test_the_error_line_above_a_cut_spawn_traceback_replaces_the_wrapper():
    paste = ("RuntimeError: Distributed package doesn't have NCCL built in\n\nthe whole log:\n"
             + SPAWNED.split("-- Process")[0])
    parsed = parse_traceback(paste)
    assert (parsed.type, parsed.message) == ("RuntimeError",
                                             "Distributed package doesn't have NCCL built in")


@pytest.mark.parametrize("wrapper", ["Caught KeyError in DataLoader worker process 1.",
                                     "KeyError: Caught KeyError in DataLoader worker process 1."])
def test_a_worker_traceback_pasted_without_the_main_process_keeps_its_wrapper(wrapper):
    paste = (wrapper + "\n"
             "Original Traceback (most recent call last):\n"
             '  File "/opt/py/site-packages/torch/utils/data/_utils/worker.py", line 308, '
             "in _worker_loop\n"
             "    data = fetcher.fetch(index)\n"
             '  File "/srv/audio/dataset.py", line 40, in __getitem__\n'
             '    label = self.labels[row["name"]]\n'
             "KeyError: 'dog_bark_12'\n")
    parsed = parse_traceback(paste)
    assert (parsed.type, parsed.message) == ("KeyError", "'dog_bark_12'")
    assert [link.type for link in parsed.chain] == ["KeyError", "KeyError"]
    assert parsed.chain[1].message == "Caught KeyError in DataLoader worker process 1."
    assert (parsed.phase, parsed.extras["dataloader_worker"]) == ("data_loading", 1)


CUT_AT_RAISE = ('Traceback (most recent call last):\n'
                '  File "fit.py", line 88, in <module>\n'
                '    loss.backward()\n'
                '  File "/usr/lib/python3/site-packages/torch/autograd/__init__.py", line 85, '
                'in _make_grads\n'
                '    raise RuntimeError("grad can be implicitly created only for scalar outputs")\n')


@pytest.mark.parametrize("ending", ["", "RuntimeError: grad can be implicit\n"])
def test_a_message_cut_off_is_completed_from_the_line_that_raised_it(kb, ending):
    paste = "Here is what I get:\n" + CUT_AT_RAISE + ending
    parsed = parse_traceback(paste)
    assert (parsed.type, parsed.message) == (
        "RuntimeError", "grad can be implicitly created only for scalar outputs")
    assert parsed.extras["source"] == "raise_statement"
    assert top(paste, kb) == "autograd.grad_non_scalar"


def test_a_raise_built_at_run_time_is_not_guessed():
    paste = CUT_AT_RAISE.replace('"grad can be implicitly created only for scalar outputs"',
                                 'f"bad output {name}"')
    assert parse_traceback(paste).message == ""


def test_bold_opened_on_the_frame_line_and_closed_after_the_message():
    paste = ("Saving features dies:\n\n"
             '**File "/data/feat/helper.py", line 33, in save_features\n'
             "feats = torch.stack(feats).view(-1, 64)\n"
             "RuntimeError: stack expects each tensor to be equal size, but got [100, 512] at "
             "entry 0 and [64, 512] at entry 28**\n")
    parsed = parse_traceback(paste)
    assert parsed.message == ("stack expects each tensor to be equal size, but got [100, 512] "
                              "at entry 0 and [64, 512] at entry 28")
    assert parsed.frames[0].function == "save_features"


def test_an_old_thcudacheck_line_reads_as_the_error_torch_raised_for_it(kb):
    paste = ("Validation starts and memory climbs to the limit, then:\n"
             "THCudaCheck FAIL file=/pytorch/aten/src/THC/generic/THCStorage.cu line=58 "
             "error=2 : out of memory\n"
             "Traceback (most recent call last):\n"
             '  File "val.py", line 20, in <module>\n'
             "    out = net(images)\n")
    parsed = parse_traceback(paste)
    assert parsed.message == ("cuda runtime error (2) : out of memory at "
                              "/pytorch/aten/src/THC/generic/THCStorage.cu:58")
    assert top(paste, kb) == "memory.cuda_oom"
    # The exception line itself cut short: the line above continues it.
    cut = parse_traceback(paste + "RuntimeError: cuda runtime error (\n")
    assert (cut.type, cut.message) == ("RuntimeError", parsed.message)


def test_an_error_line_written_above_a_streamlit_traceback_ends_where_the_frames_begin():
    paste = ('The app page shows:\n\n'
             'RuntimeError: Error(s) in loading state_dict for ResNet:\n'
             'Unexpected key(s) in state_dict: "epoch", "model", "optimizer".\n'
             'Traceback:\n'
             'File "C:\\Users\\me\\app\\main.py", line 21, in <module>\n'
             '    net.load_state_dict(torch.load(path))\n')
    parsed = parse_traceback(paste)
    assert parsed.message == ('Error(s) in loading state_dict for ResNet:\n'
                              'Unexpected key(s) in state_dict: "epoch", "model", "optimizer".')
    assert parsed.user_frame.line == 21


def test_a_message_retyped_with_full_width_punctuation_reads_as_torch_printed_it():
    paste = ("换成第二张卡就报 “RuntimeError： Attempting to deserialize object on CUDA device 1 "
             "but torch。cuda.device_count（） is 1” 怎么办")
    parsed = parse_traceback(paste)
    assert (parsed.type, parsed.message) == (
        "RuntimeError", ("Attempting to deserialize object on CUDA device 1 but "
                        "torch.cuda.device_count() is 1"))


def test_a_warning_printed_above_a_cut_traceback_is_not_taken_for_its_error(kb):
    paste = ("/home/me/gen/transform.py:134: UserWarning: To copy construct from a tensor, it is "
             "recommended to use sourceTensor.clone().detach() or "
             "sourceTensor.clone().detach().requires_grad_(True), rather than "
             "torch.tensor(sourceTensor).\n"
             "  ids = torch.tensor(data.ids, dtype=torch.int64)\n"
             "Traceback (most recent call last):\n"
             '  File "generate.py", line 79, in <module>\n'
             "    ckpt = torch.load(args.ckpt, map_location=device)\n")
    assert top(paste, kb) is None


def test_a_kernel_assertion_whose_backticks_markdown_ate_is_still_the_cause(kb):
    paste = ("`/opt/conda/work/THCUNN/ClassNLLCriterion.cu:101: void "
             "cunn_ClassNLLCriterion_updateOutput_kernel(Dtype *, Dtype *, Dtype *, long *, "
             "Dtype *, int, int, int, int, long) [with Dtype = float, Acctype = float]: block: "
             "[0,0,0], thread: [2,0,0] Assertion t >= 0 && t < n_classes failed.`\n\n"
             "`RuntimeError: cuda runtime error (59) : device-side assert triggered at "
             "/opt/conda/work/THC/generated/../THCReduceAll.cuh:339`\n")
    [line] = parse_traceback(paste).extras["cuda_asserts"]
    assert line["assertion"] == "t >= 0 && t < n_classes"
    assert line["text"].endswith("Assertion `t >= 0 && t < n_classes` failed.")
    assert top(paste, kb) == "index.nll_target_assert"


# torch < 1.0 re-raised a worker's failure in the main process as its type with the
# worker's formatted traceback as the message.
OLD_WORKER_RERAISE = """\
Traceback (most recent call last):
  File "extract.py", line 52, in <module>
    for step, (clips, labels) in enumerate(loader):
  File "/usr/lib/python3.6/site-packages/torch/utils/data/dataloader.py", line 286, in __next__
    return self._process_next_batch(batch)
  File "/usr/lib/python3.6/site-packages/torch/utils/data/dataloader.py", line 307, in _process_next_batch
    raise batch.exc_type(batch.exc_msg)
KeyError: Traceback (most recent call last):
  File "/usr/lib/python3.6/site-packages/torch/utils/data/dataloader.py", line 57, in _worker_loop
    samples = collate_fn([dataset[i] for i in batch_indices])
  File "/usr/lib/python3.6/site-packages/torch/utils/data/dataloader.py", line 57, in <listcomp>
    samples = collate_fn([dataset[i] for i in batch_indices])
  File "/home/lab/clips.py", line 31, in __getitem__
    label = self.names[path.split('/')[-2]]
KeyError: 'walking'
"""


def test_torch_04s_worker_re_raise_is_read_as_the_workers_traceback():
    parsed = parse_traceback(OLD_WORKER_RERAISE)
    assert (parsed.type, parsed.message) == ("KeyError", "'walking'")
    assert parsed.user_frame.function == "__getitem__"
    assert parsed.phase == "data_loading"
    assert [link.relation for link in parsed.chain] == [None, "cause"]


def test_a_cut_worker_re_raise_keeps_its_type_and_frames_but_invents_no_message():
    cut = OLD_WORKER_RERAISE.rsplit("  File \"/home/lab", 1)[0]
    parsed = parse_traceback(cut)
    assert (parsed.type, parsed.message) == ("KeyError", "")
    assert [frame.function for frame in parsed.frames] == ["_worker_loop", "<listcomp>"]
    assert parsed.phase == "data_loading"


@pytest.mark.parametrize(("paste", "entry"), [
    (("My segmentation run dies after a few epochs with RuntimeError: CUDA error: device-side "
     "assert triggered, and the kernel says its check \"input_val >= zero && input_val <= one\" "
     "did not hold while computing the BCE loss.\n"), "numerics.bce_input_range"),
    (("Классификатор падает: RuntimeError: CUDA error: device-side assert triggered. "
     "В логе ядра условие `t >= 0 && t < n_classes` не выполнено.\n"), "index.nll_target_assert"),
])
def test_a_kernel_condition_retold_in_the_prose_names_the_cause_of_a_device_assert(
        kb, paste, entry):
    assert top(paste, kb) == entry


def test_a_comparison_quoted_in_prose_is_no_assertion_without_a_device_assert(kb):
    paste = ("I check \"loss >= 0\" before stepping, yet RuntimeError: CUDA out of memory. "
             "Tried to allocate 20.00 MiB\n")
    assert top(paste, kb) == "memory.cuda_oom"


@pytest.mark.parametrize("padding", [" " * 12, " " * 30])
def test_a_line_a_terminal_wrapped_and_padded_inside_a_word_still_matches(kb, padding):
    paste = ("Loading my fine-tuned weights into the base model prints:\n"
             "RuntimeError: Error(s) in loading state_dict for ResNet:\n"
             "\tsize mismatch for fc.weight: copying a param with shape torch.Size([10, 512]) "
             f"from check{padding}point, the shape in current model is torch.Size([1000, 512]).\n")
    assert top(paste, kb) == "state_dict.size_mismatch"


def test_padding_between_two_words_reads_as_one_space(kb):
    paste = ("RuntimeError: Error(s) in loading state_dict for ResNet:\n"
             "\tsize mismatch for fc.weight: copying a param with shape torch.Size([10, 512]) from"
             + " " * 20 + "checkpoint, the shape in current model is torch.Size([1000, 512]).\n")
    assert top(paste, kb) == "state_dict.size_mismatch"


# IPython 7's traceback copied from a page that collapsed runs of spaces and removed
# "<ipython-input-3-…>" and "<module>" as if they were HTML tags.
COLLAPSED_NOTEBOOK = """\
在 notebook 里算准确率时报错：
IndexError Traceback (most recent call last)
in ()
1 scores = net(batch)
----> 2 picked = scores[:, 12]
3 print(picked)

IndexError: index 12 is out of bounds for dimension 1 with size 10
"""


def test_a_notebook_traceback_from_a_page_that_ate_its_tags_keeps_its_cell_frame():
    parsed = parse_traceback(COLLAPSED_NOTEBOOK)
    assert (parsed.type, parsed.message) == (
        "IndexError", "index 12 is out of bounds for dimension 1 with size 10")
    assert (parsed.user_frame.file, parsed.user_frame.line, parsed.user_frame.code) == (
        "<ipython-input>", 2, "picked = scores[:, 12]")


def test_the_type_before_a_cut_notebook_header_is_kept_with_one_space():
    parsed = parse_traceback(COLLAPSED_NOTEBOOK.rsplit("\n\n", 1)[0] + "\n")
    assert (parsed.type, parsed.message) == ("IndexError", "")
    assert parsed.frames[0].code == "picked = scores[:, 12]"


def test_words_before_a_traceback_header_are_no_exception_type():
    paste = ("Here is the Traceback (most recent call last):\n"
             '  File "train.py", line 3, in <module>\n'
             "    run()\n")
    assert parse_traceback(paste).type is None


# rich.traceback's box, as a training CLI prints it (frames wrapped at the box's width).
RICH_BOXED = """\
╭───────────────────── Traceback (most recent call last) ─────────────────────╮
│ /home/ana/tagger/run.py:58 in <module>                                      │
│                                                                             │
│   55 │   batch = next(iter(loader))                                         │
│   56 │   tokens = batch["ids"].cuda()                                       │
│   57 │   with torch.no_grad():                                              │
│ ❱ 58 │   │   scores = head(encoder(tokens))                                 │
│   59 │   print(scores.shape)                                                │
│                                                                             │
│ /home/ana/.venv/lib/python3.11/site-packages/torch/nn/modules/linear.py:125 │
│ in forward                                                                  │
│                                                                             │
│   124 │   def forward(self, input: Tensor) -> Tensor:                       │
│ ❱ 125 │   │   return F.linear(input, self.weight, self.bias)                │
│   126                                                                       │
╰─────────────────────────────────────────────────────────────────────────────╯
RuntimeError: mat1 and mat2 shapes cannot be multiplied (16x768 and 512x9)
"""


def test_a_rich_boxed_traceback_gives_its_frames_and_the_error_under_the_box(kb):
    parsed = parse_traceback(RICH_BOXED)
    assert (parsed.type, parsed.message) == (
        "RuntimeError", "mat1 and mat2 shapes cannot be multiplied (16x768 and 512x9)")
    assert [(f.line, f.function, f.code) for f in parsed.frames] == [
        (58, "<module>", "scores = head(encoder(tokens))"),
        (125, "forward", "return F.linear(input, self.weight, self.bias)")]
    assert parsed.user_frame.file == "/home/ana/tagger/run.py"
    assert parsed.phase == "forward"
    assert top(RICH_BOXED, kb) == "shape.linear_in_features"


def test_a_rich_frame_wrapped_before_its_line_number_is_joined():
    wrapped = RICH_BOXED.replace(
        "│ /home/ana/tagger/run.py:58 in <module>                                      │\n",
        "│ C:\\\\Users\\\\ana\\\\tagger\\\\run.py:                                               │\n"
        "│ 58 in <module>                                                              │\n")
    parsed = parse_traceback(wrapped)
    assert (parsed.frames[0].file, parsed.frames[0].line) == ("C:\\\\Users\\\\ana\\\\tagger\\\\run.py", 58)


def test_an_error_whose_message_the_paste_lost_is_read_from_what_the_prose_says(kb):
    paste = ("A few hundred steps in, the loss becomes nan and the notebook stops:\n"
             "RuntimeError                              Traceback (most recent call last)\n"
             "<ipython-input-7-1b2c3d4e5f60> in <module>\n"
             "----> 1 trainer.fit(model)\n")
    diagnosis = diagnose(paste, kb)
    assert parse_traceback(paste).message == ""
    assert diagnosis.matches[0].entry.id == "numerics.nan_loss"
    assert "symptom" in diagnosis.matches[0].reason


@pytest.mark.parametrize("paste", [
    "RuntimeError: CUDA out of memory.\n",
    "torch.cuda.OutOfMemoryError: CUDA out of memory\n",
    ('Traceback (most recent call last):\n  File "train.py", line 9, in <module>\n'
    "    loss.backward()\nRuntimeError: CUDA out of memory.\n"),
])
def test_an_out_of_memory_head_cut_before_its_figures(paste, kb):
    """People often paste only the first sentence of the OOM message; the
    allocator's figures are lost, the cause is not."""
    assert top(paste, kb) == "memory.cuda_oom"


@pytest.mark.parametrize(("translated", "entry"), [
    # renderings as Chinese pages print them, values as torch printed them
    (("RuntimeError: 大小不匹配,m1: [8 x 2048], m2: [512 x 10] at /pytorch/aten/src/TH/generic/"
     "THTensorMath.cpp:961"), "shape.linear_in_features"),
    ("RuntimeError: 无效参数0: 张量的大小必须匹配,除了维度0。在维度2中得到17和21",
     "shape.cat_sizes"),
    ("RuntimeError: 张量a的大小(5)必须与张量b的大小(3)在非单例维度1上匹配",
     "shape.broadcast_mismatch"),
    ("RuntimeError: 期望所有张量都在同一设备上,但发现至少两个设备,cuda:1和cpu",
     "device.mixed_devices"),
    ("RuntimeError: 期望cuda类型对象但得到cpu类型", "device.mixed_devices"),
    (("RuntimeError: 给定groups=1,权重大小为[64, 3, 7, 7],期望输入[8, 1, 224, 224]有3个通道,"
     "但得到1个通道"), "shape.conv_channels"),
    ("RuntimeError: 给定groups=1，权重尺寸为32 1 3 3，期望输入[4, 3, 64, 64]有1个通道，但实际只有3个通道",
     "shape.conv_channels"),
])
def test_a_message_a_page_printed_machine_translated(translated, entry, kb):
    assert top(translated, kb) == entry


def test_a_translated_message_keeps_its_numbers_and_an_untranslated_one_is_left_alone():
    from torchdoctor.translated import english
    assert english("无效参数0: 张量的大小必须匹配,除了维度0。在维度1中得到1219和440") == (
        "invalid argument 0: Sizes of tensors must match except in dimension 0. "
        "Got 1219 and 440 in dimension 1")
    assert english("size mismatch, m1: [4 x 3136], m2: [64 x 5]") is None
    assert english("训练时损失一直不下降") is None


def test_torch_0_1s_leaf_check_at_backward_is_the_leaf_inplace_entry(kb):
    # torch 0.1.x asserted it in torch/autograd/variable.py when backward reached the leaf
    paste = ("Traceback (most recent call last):\n"
             '  File "fit.py", line 88, in <module>\n'
             "    cost.backward()\n"
             '  File "/usr/lib/python3.6/site-packages/torch/autograd/variable.py", line 158, '
             "in backward\n"
             "    self._execution_engine.run_backward((self,), (gradient,), retain_variables)\n"
             '  File "/usr/lib/python3.6/site-packages/torch/autograd/variable.py", line 201, '
             "in _do_backward\n"
             '    "leaf variable was used in an inplace operation"\n'
             "AssertionError: leaf variable was used in an inplace operation\n")
    assert top(paste, kb) == "autograd.leaf_inplace"


def test_ths_cuda_status_retold_without_the_space_before_its_colon(kb):
    paste = ('the run stops at loss.backward() with "RuntimeError: cuda runtime error (59): '
             'device-side assert triggered" and I cannot see why\n')
    assert top(paste, kb) == "index.device_side_assert"


def test_lightnings_rank_prefix_and_its_launcher_reporting_a_killed_rank(kb):
    paste = ("[rank: 1] Child process with PID 4123 terminated with code -9. Forcefully "
             "terminating all other processes to avoid zombies\n")
    assert top(paste, kb) == "distributed.child_failed"
    from torchdoctor.parsing.lines import RANK_PREFIX
    found = RANK_PREFIX.match("[rank: 3] Epoch 0: 12%")
    assert found is not None and found["lightning"] == "3"


def test_a_launchers_line_on_a_killed_rank_is_the_error_not_the_prose_after_it():
    paste = ("Training stopped after a few hours:\n\n```\n"
             "[rank: 0] Child process with PID 812 terminated with code -9. Forcefully "
             "terminating all other processes to avoid zombies\n```\n\n"
             "It is not the GPU that is out of memory: the host RAM fills up.\n")
    parsed = parse_traceback(paste)
    assert parsed.message.startswith("Child process with PID 812 terminated with code -9")


def test_a_rank_killed_while_the_words_say_host_ram_fills_up_with_workers(kb):
    paste = ("Two-GPU training with num_workers=16 per rank ends like this:\n\n"
             "[rank: 1] Child process with PID 5521 terminated with code -9. Forcefully "
             "terminating all other processes to avoid zombies\n\n"
             "Host RAM fills up over the epoch until the persistent_workers die; fewer "
             "workers only delay it.\n")
    assert top(paste, kb) == "dataloader.worker_copy_on_read"


def test_a_cublas_failure_on_an_ampere_card_with_a_cuda_10_build_is_the_missing_arch(kb):
    paste = ("RuntimeError: CUDA error: CUBLAS_STATUS_EXECUTION_FAILED when calling "
             "`cublasSgemm( handle, opa, opb, m, n, k, &alpha, a, lda, b, ldb, &beta, c, ldc)`\n\n"
             "New machine with an RTX 3090; the env is torch 1.4 with cudatoolkit 10.1.\n")
    assert top(paste, kb) == "device.arch_not_supported"
    alone = ("RuntimeError: CUDA error: CUBLAS_STATUS_EXECUTION_FAILED when calling "
             "`cublasSgemm( handle, opa, opb, m, n, k, &alpha, a, lda, b, ldb, &beta, c, ldc)`\n")
    assert top(alone, kb) == "device.cublas_failure"


def test_a_flattened_traceback_keeps_its_frames_and_their_code(kb):
    # Newlines lost between frames, as a forum's single-line box leaves a Windows traceback.
    paste = ('File "C:\\Users\\ana\\proj\\models\\seq.py", line 154, in forward     x = conv(x)   '
             'File "C:\\Anaconda3\\lib\\site-packages\\torch\\nn\\modules\\module.py", line 489, '
             "in __call__     result = self.forward(*input, **kwargs)   "
             'File "C:\\Users\\ana\\proj\\modules\\conv_tbc.py", line 32, in forward     '
             "return input.contiguous().conv_tbc(self.weight, self.bias, self.padding[0]) "
             "AttributeError: 'Tensor' object has no attribute 'conv_tbc'\n")
    parsed = parse_traceback(paste)
    assert (parsed.type, parsed.message) == (
        "AttributeError", "'Tensor' object has no attribute 'conv_tbc'")
    assert [(f.line, f.function) for f in parsed.frames] == [
        (154, "forward"), (489, "__call__"), (32, "forward")]
    assert parsed.frames[-1].code.startswith("return input.contiguous().conv_tbc(")
    assert parsed.phase == "forward"
    assert top(paste, kb) == "other.removed_tensor_method"


def test_a_frame_line_keeps_no_terminal_wrap_padding():
    paste = ("Traceback (most recent call last):\n"
             '  File "/usr/lib/python3.8/site-packages/torch/utils/data/dataload'
             + " " * 60 + 'er.py", line 761, in _try_get_data\n'
             "    data = self._data_queue.get(timeout=timeout)\n"
             '  File "/usr/lib/python3.8/multiprocessing/queues.py", line 108, in g'
             + " " * 60 + "et\n"
             "    res = self._recv_bytes()\n")
    parsed = parse_traceback(paste)
    assert [(f.file.rsplit("/", 1)[-1], f.function, f.code) for f in parsed.frames] == [
        ("dataloader.py", "_try_get_data", "data = self._data_queue.get(timeout=timeout)"),
        ("queues.py", "get", "res = self._recv_bytes()")]


def test_an_exception_retyped_with_a_space_before_its_colon_and_broken_at_a_hyphen(kb):
    paste = ("I get this while training:\n\n"
             "RuntimeError :Expected 4-dimensional input for 4-dimensional weight [30,1,5,5],"
             "but got 5-\ndimensional input of size [16,2,1,256,256] instead\n\nAny idea?\n")
    parsed = parse_traceback(paste)
    assert parsed.type == "RuntimeError"
    assert parsed.message.startswith("Expected 4-dimensional input")
    assert top(paste, kb) == "shape.conv_input_rank"


def test_a_message_set_in_quotes_after_its_type_is_read_inside_them(kb):
    paste = ('The Linear layer raises RuntimeError: "mat1 and mat2 must have the same dtype, but '
             'got Long and Float". The features came from a DataFrame.\n')
    parsed = parse_traceback(paste)
    assert parsed.message == "mat1 and mat2 must have the same dtype, but got Long and Float"
    assert top(paste, kb) == "dtype.integer_input"
    # torch's own paired quotes at the start of a message stay.
    own = parse_traceback("it fails with AttributeError: 'NoneType' object has no attribute "
                          "'size'\n")
    assert own.message == "'NoneType' object has no attribute 'size'"


def test_a_lone_backtick_closing_a_span_around_the_paste_is_not_part_of_the_message():
    paste = ("`\nTraceback (most recent call last):\n"
             '  File "train.py", line 60, in split_ps\n'
             "    dim = torch.max(diff, dim = 1)[1][0,0]\n\n"
             "RuntimeError: dimension out of range (expected to be in range of [-1, 0], but "
             "got 1)\n`\n")
    assert parse_traceback(paste).message == (
        "dimension out of range (expected to be in range of [-1, 0], but got 1)")


def test_a_pages_html_tags_are_not_part_of_the_traceback(kb):
    paste = ("<p>Training stops with <code>RuntimeError: Given groups=1, weight of size "
             "[64, 3, 7, 7], expected input[8, 1, 224, 224] to have 3 channels, but got 1 "
             "channels instead</code> on the first batch.</p>\n")
    assert parse_traceback(paste).message == CHANNELS
    assert top(paste, kb) == "shape.conv_channels"
    broken = ('<pre>Traceback (most recent call last):<br>  File &quot;train.py&quot;, line 41, '
              "in &lt;module&gt;<br>    logits = model(images)<br>"
              f"RuntimeError: {CHANNELS}<br></pre>\n")
    parsed = parse_traceback(broken)
    assert (parsed.message, parsed.frames[0].function) == (CHANNELS, "<module>")


def test_a_notebooks_frame_files_linked_to_themselves_read_as_the_traceback_printed():
    colab = ("RuntimeError                              Traceback (most recent call last)\n"
             "[<ipython-input-5-4b6724b323fe>](https://localhost:8080/#) in <cell line: 57>()\n"
             "     60         pred = model(x_batch)\n"
             "---> 61         loss = loss_fn(pred.long(), y_batch)\n\n"
             "RuntimeError: \"log_softmax_lastdim_kernel_impl\" not implemented for 'Long'\n")
    frame = parse_traceback(colab).user_frame
    assert (frame.file, frame.line, frame.function, frame.code) == (
        "<ipython-input-5-4b6724b323fe>", 61, "<cell line: 57>",
        "loss = loss_fn(pred.long(), y_batch)")
    vscode = ("File [~/envs/tabr/lib/python3.9/site-packages/torch/nn/modules/module.py:1194]"
              "(https://file+.vscode-resource.vscode-cdn.net/Users/x/envs/tabr/lib/python3.9/"
              "site-packages/torch/nn/modules/module.py:1194), in Module._call_impl(self, *input)\n"
              "-> [1194](https://file+.vscode-resource.vscode-cdn.net/Users/x/module.py:1194) "
              "return forward_call(*input, **kwargs)\n\n"
              "RuntimeError: mat1 and mat2 must have the same dtype\n")
    frames = parse_traceback(vscode).frames
    assert [(f.line, f.function) for f in frames] == [(1194, "Module._call_impl")]


@pytest.mark.parametrize("message", [
    "output with shape [1, 28, 28] doesn't match the broadcast shape [3, 28, 28]",
    ("stack expects each tensor to be equal size, but got [3, 224, 224] at entry 0 and "
    "[3, 200, 224] at entry 1"),
    ("Sizes of tensors must match except in dimension 1. Expected size 32 but got size 31 for "
    "tensor number 1 in the list."),
])
def test_todays_shape_wordings_quoted_alone_are_error_lines(message):
    parsed = parse_traceback(f"The first batch fails with `{message}` - why?\n")
    assert parsed is not None and parsed.message == message


def test_a_cpp_class_declared_with_an_exceptions_name_is_no_error_line():
    assert parse_traceback("class RuntimeError : public std::exception {};\n") is None


@pytest.mark.parametrize(("written", "kind"), [
    ("Runtime Error : Index tensor must have same dimensions as input tensor", "RuntimeError"),
    (("I keep getting Type Error: can't convert cuda:0 device type tensor to numpy. Use "
     "Tensor.cpu() to copy the tensor to host memory first."), "TypeError"),
])
def test_a_builtin_exception_retyped_as_two_words_is_its_type(written, kind):
    parsed = parse_traceback(written + "\n")
    assert parsed.type == kind
    assert parsed.message.startswith(("Index tensor", "can't convert"))


def test_an_exception_type_set_as_code_before_its_message_is_the_error_line():
    paste = ("`RuntimeError:` Integer division of tensors using div or / is no longer supported, "
             "and in a future release div will perform \ntrue division as in Python 3. Use "
             "true_divide or floor_divide (// in Python) instead. \n\nHit in line 527.\n")
    parsed = parse_traceback(paste)
    assert parsed.type == "RuntimeError"
    assert parsed.message.startswith("Integer division of tensors")
    assert parsed.message.endswith("(// in Python) instead.")


@pytest.mark.parametrize("written", [
    "I actually meant _IndexError: index out of range in self_ in the title.",
    "*IndexError: index out of range in self*",
])
def test_an_error_line_set_in_italics(written):
    parsed = parse_traceback(written + "\n")
    assert (parsed.type, parsed.message.split(" in self")[0]) == ("IndexError", "index out of range")


def test_a_tracebacks_star_arguments_are_no_italics():
    paste = ("Traceback (most recent call last):\n"
             '  File "/opt/torch/nn/modules/module.py", line 727, in _call_impl\n'
             "    result = self.forward(*input, **kwargs)\n"
             "IndexError: index out of range in self\n")
    assert parse_traceback(paste).frames[0].code == "result = self.forward(*input, **kwargs)"


@pytest.mark.parametrize(("paste", "entry"), [
    (("Fine-tuning stops in a CUDA assertion from indexSelectLargeIndex "
     "(`srcIndex < srcSelectDimSize` failed) right after I added a pad token.\n"),
     "index.embedding_out_of_range"),
    (("The classifier aborts with a kernel assertion; its log line says "
     "'t >= 0 && t < n_classes' failed on the second batch.\n"), "index.nll_target_assert"),
])
def test_a_kernel_condition_retold_beside_the_word_assertion_names_its_cause(kb, paste, entry):
    # No "device-side assert triggered" line was pasted: the person's "assertion" says
    # the quoted comparison is the kernel's.
    assert top(paste, kb) == entry


def test_an_error_that_is_itself_an_assertion_is_not_read_again_as_a_kernels(kb):
    # THNN's CPU check prints the condition in its own message: it names the CPU entry.
    paste = ("RuntimeError: Assertion `cur_target >= 0 && cur_target < n_classes' failed.  at "
             "/pytorch/aten/src/THNN/generic/ClassNLLCriterion.c:93\n")
    assert top(paste, kb) == "index.target_out_of_bounds"


@pytest.mark.parametrize("reporter", [
    "copy_if failed to synchronize: cudaErrorAssert: ",
    "copy_if failed to synchronize: ",
    "radix_sort: failed on 2nd step: cudaErrorAssert: ",
    "transform: failed to synchronize: cudaErrorAssert: ",
])
def test_every_wrapper_of_cudas_assert_status_is_the_device_side_assert(kb, reporter):
    paste = f"RuntimeError: {reporter}device-side assert triggered\n"
    assert top(paste, kb) == "index.device_side_assert"


@pytest.mark.parametrize("message", [
    # torch 1.0 - 1.4, a torch.cat of a CUDA and a CPU tensor
    ("Expected object of backend CUDA but got backend CPU for sequence element 1 in sequence "
    "argument at position #1 'tensors'"),
    # torch 1.5 - 1.8, torch.cat on CUDA
    "All input tensors must be on the same device. Received cpu and cuda:1",
    # torch 0.4, one side a torch.cuda type
    ("Expected a Tensor of type torch.cuda.FloatTensor but found a type torch.FloatTensor for "
    "sequence element 1 in sequence argument at position #1 'tensors'"),
    # THCUNN and THC, torch <= 0.4
    ("Assertion `THCTensor_(checkGPU)(state, 4, input, target, output, total_weight)' failed. "
    "Some of weight/gradient/input tensors are located on different GPUs. Please move them to "
    "a single one. at /pytorch/torch/lib/THCUNN/generic/ClassNLLCriterion.cu:27"),
    "tensors are on different GPUs",
])
def test_a_join_or_a_layer_across_devices_in_each_releases_wording(kb, message):
    assert top(f"RuntimeError: {message}\n", kb) == "device.mixed_devices"


def test_a_join_of_two_dtypes_on_one_device_stays_a_dtype_error(kb):
    paste = ("RuntimeError: Expected a Tensor of type torch.cuda.FloatTensor but found a type "
             "torch.cuda.LongTensor for sequence element 1 in sequence argument at position #1 "
             "'tensors'\n")
    assert top(paste, kb) == "dtype.cat_mixed_dtypes"


def test_a_convolutions_weight_printed_without_brackets_by_torch_1_1(kb):
    paste = ("RuntimeError: Given groups=1, weight of size 16 3 5 5, expected input[4, 1, 64, 64] "
             "to have 3 channels, but got 1 channels instead\n")
    [match] = diagnose(paste, kb).matches[:1]
    assert match.entry.id == "shape.conv_channels"
    assert (match.fields["weight_size"], match.fields["got_channels"]) == ("16 3 5 5", "1")


@pytest.mark.parametrize("paste", [
    ("RuntimeError: Setting requires_grad=True on inference tensor outside InferenceMode is not "
    "allowed.\n"),
    # retyped from a screenshot: "can't" for "cannot", no space after the full stop
    ("RuntimeError:Inference tensors can't be saved for backward.To work around you can make a "
    "clone to get a normal tensor and use it in autograd\n"),
])
def test_inference_tensors_in_each_wording(kb, paste):
    assert top(paste, kb) == "autograd.inference_tensor"


def test_a_model_that_is_itself_the_wrapper_expects_the_prefix_whatever_the_key_lists_show(kb):
    paste = ("RuntimeError: Error(s) in loading state_dict for DataParallel:\n"
             "\tMissing key(s) in state_dict:\n...\n\tUnexpected key(s) in state_dict:\n...\n")
    assert top(paste, kb) == "state_dict.module_prefix"
    # a whole training checkpoint loaded as weights is not a prefix problem
    whole = paste.replace("state_dict:\n...\n", 'state_dict: "epoch", "state_dict".\n', 1)
    whole = whole.replace('Unexpected key(s) in state_dict:\n...', 'Unexpected key(s) in '
                          'state_dict: "epoch", "state_dict".')
    assert top(whole, kb) != "state_dict.module_prefix"


def test_a_sentence_that_names_the_script_is_the_persons_own_words(kb):
    # "test.py" is also a frame's file; only the frame line itself is the traceback's.
    paste = ("Trained with DataParallel on two GPUs; test.py on a single GPU then fails when "
             "loading:\n"
             "Traceback (most recent call last):\n"
             '  File "test.py", line 42, in main\n'
             "    net.load_state_dict(state)\n"
             "RuntimeError: Error(s) in loading state_dict for Net:\n"
             '\tMissing key(s) in state_dict: "fc.weight", "fc.bias".\n')
    assert top(paste, kb) == "state_dict.module_prefix"


@pytest.mark.parametrize("paste", [
    ("With torch.compile(mode=\"max-autotune\") the build of my model dies inside Triton on a "
    "small matmul; only max-autotune fails, the default mode is fine.\n"),
    ("backend=\"eager\" works, but the inductor backend errors out while compiling the "
    "attention block.\n"),
])
def test_compiling_that_fails_inside_the_backend_told_in_words(kb, paste):
    assert top(paste, kb) == "compile.backend_failed"


def test_a_compiled_model_that_is_slow_is_not_a_backend_failure(kb):
    paste = "The first epoch with torch.compile is very slow, later ones are faster.\n"
    found = top(paste, kb)
    assert found is not None and found.startswith("compile.")
    assert found != "compile.backend_failed"


def test_autotuning_left_without_a_kernel_is_the_backends_failure(kb):
    paste = ("torch._inductor.exc.NoValidChoicesError: No choices to select, please consider "
             "adding ATEN into max_autotune_gemm_backends config (defined in "
             "torch/_inductor/config.py) to allow at least one choice.\n")
    [match] = diagnose(paste, kb).matches[:1]
    assert match.entry.id == "compile.backend_failed"
    assert "no_autotune_choice" in [h["id"] for h in match.hypotheses]


def test_a_device_message_quoted_only_up_to_its_first_comma(kb):
    paste = ("训练时一跑到前向就报 RuntimeError: Expected object of backend CUDA but got backend "
             "CPU,模型已经 .cuda() 过了\n")
    assert top(paste, kb) == "device.mixed_devices"


def test_a_tensor_still_on_the_cpu_after_cuda_told_with_the_interpreters_output(kb):
    # no error at all: the person shows .cuda() and then a member tensor's device
    paste = ("После model.cuda() параметры на GPU:\n"
             ">>> next(model.fc.parameters()).device\ndevice(type='cuda', index=0)\n"
             "а тензор-атрибут остался:\n>>> model.scale.device\ndevice(type='cpu')\n")
    assert top(paste, kb) == "device.mixed_devices"


ORPHANED_CHILD = (
    "Traceback (most recent call last):\n"
    '  File "<string>", line 1, in <module>\n'
    '  File "C:\\Python39\\lib\\multiprocessing\\spawn.py", line 116, in spawn_main\n'
    "    exitcode = _main(fd, parent_sentinel)\n"
    '  File "C:\\Python39\\lib\\multiprocessing\\spawn.py", line 126, in _main\n'
    "    self = reduction.pickle.load(from_parent)\n"
    "{inner}"
    "{error}\n")
PIPE_HANDLE = ('  File "C:\\Python39\\lib\\multiprocessing\\connection.py", line 967, in '
               "rebuild_pipe_connection\n    handle = dh.detach()\n"
               '  File "C:\\Python39\\lib\\multiprocessing\\reduction.py", line 131, in detach\n'
               "    return _winapi.DuplicateHandle(\n")


@pytest.mark.parametrize(("inner", "error"), [
    (PIPE_HANDLE, "PermissionError: [WinError 5] Access is denied"),
    (PIPE_HANDLE, "PermissionError: [WinError 5] 拒绝访问。"),
    ("", "EOFError: Ran out of input"),
])
def test_a_spawned_child_that_lost_its_parent_points_to_the_parents_error(inner, error, kb):
    parent = ('OSError: [WinError 1455] The paging file is too small for this operation to '
              'complete. Error loading "C:\\Python39\\lib\\site-packages\\torch\\lib\\'
              'cudnn_cnn_infer64_8.dll" or one of its dependencies.\n')
    parsed = parse_traceback(parent + ORPHANED_CHILD.format(inner=inner, error=error))
    assert parsed.type == "OSError" and parsed.message.startswith("[WinError 1455]")
    assert parsed.extras["other_errors"][0].startswith(error.split(":")[0])
    alone = parse_traceback(ORPHANED_CHILD.format(inner=inner, error=error))
    assert alone.type == error.split(":")[0]   # with nothing beside it, the child's own error


BOOTSTRAP = ("RuntimeError:\n"
             "        An attempt has been made to start a new process before the\n"
             "        current process has finished its bootstrapping phase.\n")


@pytest.mark.parametrize("paste", [
    # the child re-ran the script's module-level code and failed there first
    ("Running it on Windows gives:\n"
     "RuntimeError: CUDA error: out of memory\n" + BOOTSTRAP),
    ("Traceback (most recent call last):\n"
     '  File "train.py", line 12, in <module>\n'
     "    features = torch.load(\"features.pt\", map_location=\"cuda\")\n"
     "RuntimeError: CUDA error: out of memory\n"
     "Traceback (most recent call last):\n"
     '  File "<string>", line 1, in <module>\n'
     '  File "C:\\Python310\\lib\\multiprocessing\\spawn.py", line 116, in spawn_main\n'
     "    exitcode = _main(fd, parent_sentinel)\n" + BOOTSTRAP),
])
def test_a_child_started_before_bootstrapping_is_the_cause_of_the_rest(paste, kb):
    assert "bootstrapping" in parse_traceback(paste).message
    assert top(paste, kb) == "dataloader.spawn_without_main_guard"


def test_a_cpp_backtrace_frame_is_not_an_error_line(kb):
    paste = ("Two GPUs die after the first epoch:\n"
             "frame #1: c10d::ProcessGroupNCCL::WorkNCCL::checkTimeout(std::optional<std::chrono"
             "::duration<long, std::ratio<1l, 1000l> > >) + 0x1d2 (0x7f in libtorch_cuda.so)\n"
             "frame #2: c10d::ProcessGroupNCCL::watchdogHandler() + 0x233 (0x7f in "
             "libtorch_cuda.so)\n")
    assert parse_traceback(paste) is None
    assert top(paste, kb) == "distributed.collective_timeout"


@pytest.mark.parametrize(("paste", "entry"), [
    (('Scripting the model fails with Expected a default value of type Tensor (inferred) on '
     'parameter "eps". Because "eps" was not annotated with an explicit type it is assumed '
     "to be type 'Tensor'."), "compile.torchscript_unsupported"),
    ("合并权重的时候报 DefaultCPUAllocator: can't allocate memory,机器只有 16G 内存",
     "memory.cpu_oom"),
    (("RuntimeError: Expected object of type Variable[torch.cuda.FloatTensor] but found type "
     "Variable[torch.cuda.DoubleTensor] for argument #1 'other'"), "dtype.float64_vs_float32"),
    (("RuntimeError: cuda runtime error (59) : device-side assert triggered at "
     "/opt/conda/conda-bld/pytorch/aten/src/THCUNN/generic/SpatialClassNLLCriterion.cu:96"),
     "index.nll_target_assert"),
])
def test_wordings_quoted_without_what_usually_surrounds_them(paste, entry, kb):
    assert top(paste, kb) == entry


def test_item_on_several_elements_in_the_old_wording_is_read_from_the_raising_line(kb):
    paste = ("    running += loss.item()\n"
             "ValueError: only one element tensors can be converted to Python scalars\n")
    assert top(paste, kb) == "other.tensor_to_scalar_many"
    assert top("x = torch.tensor([a, b])\nValueError: only one element tensors can be "
               "converted to Python scalars", kb) == "other.only_one_element_scalar"


def test_a_stack_the_person_wrote_is_a_shape_error_when_only_words_say_so(kb):
    paste = ('I get "stack expects each tensor to be equal size, but got ... at entry 0 and ... '
             'at entry 3" from "torch.stack(crops, 0)" in my visualisation code.')
    assert top(paste, kb) == "shape.stack_sizes"


def test_a_frame_line_a_page_broke_in_two_is_not_the_exception():
    paste = ("Traceback (most recent call last):\n"
             '  File "train.py", line 20, in <module>\n'
             "    loss = criterion(logits, targets)\n"
             '  File "/usr/lib/python3.6/site-packages/torch/nn/modules/module.py", line 550, in __c\n'
             "all__\n"
             "    result = self.forward(*input, **kwargs)\n"
             '  File "loss.py", line 59, in forward\n'
             "    smoothed.scatter_(1, target.unsqueeze(1), self.confidence)\n"
             "RuntimeError: invalid argument 4: Index tensor must have same size as output tensor "
             "apart from the specified dimension at /pytorch/aten/src/THC/generic/"
             "THCTensorScatterGather.cu:328\n")
    parsed = parse_traceback(paste)
    assert parsed.type == "RuntimeError" and parsed.message.startswith("invalid argument 4")


def test_a_windows_path_a_cut_notebook_frame_left_is_not_the_exception():
    paste = ("AttributeError                            Traceback (most recent call last)\n"
             "<ipython-input-35-87bd5485ec48> in <module>\n"
             "----> 6 learner.find_lr(final_lr=0.1)\n\n"
             "D:\\users\\ana\\Anaconda3\\lib\\site-pa\n")
    parsed = parse_traceback(paste)
    assert parsed.type == "AttributeError" and not parsed.message.startswith("\\")


@pytest.mark.parametrize(("paste", "entry"), [
    ("训练时报错:ValueError: Expected positive integer total_steps，but got 0", "dataloader.empty_dataset"),
    ("Function 'PowBackward0' returned nan values in its 0th output. Is pow at zero the problem?",
     "numerics.anomaly_nan"),
    ("RuntimeError: NCCL error in ProcessGroupNCCL.cpp:290, unhandled system error",
     "distributed.nccl_error"),
    (("UserWarning: CUDA initialization: The NVIDIA driver on your system is too old (found "
     "version 11000). Please update your GPU driver"), "device.driver_insufficient"),
    (("RuntimeError: Error(s) in loading state_dict for DataParallel:\n\tUnexpected key(s) in "
      'state_dict: "module.encoder.grid.inv_delta_C".'), "state_dict.missing_unexpected_keys"),
    (('ComfyUI 加载模型时提示 "Weights only load failed",后面写着 GLOBAL ultralytics.nn.tasks.'
     "DetectionModel"), "state_dict.weights_only_global"),
])
def test_more_wordings_as_pasted(paste, entry, kb):
    assert top(paste, kb) == entry


def test_a_broadcast_inside_the_optimizers_step_is_its_saved_state(kb):
    paste = ('  File "train.py", line 106, in train_epoch\n'
             "    optimizer.step()\n"
             '  File "/env/lib/python3.7/site-packages/torch/optim/sgd.py", line 106, in step\n'
             "    buf.mul_(momentum).add_(d_p, alpha=1 - dampening)\n"
             "RuntimeError: The size of tensor a (80) must match the size of tensor b (10) at "
             "non-singleton dimension 0\n")
    assert top(paste, kb) == "state_dict.optimizer_group_mismatch"
    outside = paste.replace("torch/optim/sgd.py", "mylib/ops.py").replace(", in step", ", in mix")
    assert top(outside.replace("optimizer.step()", "out = mix(a, b)"), kb) == \
        "shape.broadcast_mismatch"


@pytest.mark.parametrize(("paste", "entry"), [
    ("模型收敛得太慢了，训练了三天 loss 还在 1.2", "training.lr_too_low"),
    ("The loss converges very slowly with Adam at 1e-6.", "training.lr_too_low"),
    ("I think the resize is different between training and inference in your scripts.",
     "training.inference_preprocessing_mismatch"),
])
def test_symptoms_people_state_in_a_line(paste, entry, kb):
    assert top(paste, kb) == entry


def test_the_body_of_a_function_a_paste_shows_is_not_the_line_that_raised(kb):
    paste = ("Why do I get RuntimeError: stack expects each tensor to be equal size, but got "
             "[9] at entry 0 and [7] at entry 2? The file names have different lengths.\n\n"
             "```\n"
             "def decode(sample):\n"
             "    sample[\"pixels\"] = numpy.frombuffer(sample[\"pixels\"], dtype=numpy.uint8)\n"
             "    return sample\n\n"
             "loader = torch.utils.data.DataLoader(RecordDataset(path, transform=decode), batch_size=8)\n"
             "batch = next(iter(loader))\n"
             "```\n")
    reasons = [match.reason for match in diagnose(paste, kb).matches]
    assert reasons and not any("outside data loading" in reason for reason in reasons)


def test_an_indented_line_under_a_sentence_is_still_the_line_that_raised(kb):
    paste = ("With the smaller backbone it breaks here:\n\n"
             "    return torch.stack(features, dim=1)\n"
             "RuntimeError: stack expects each tensor to be equal size, but got [64, 128] at "
             "entry 0 and [64, 256] at entry 1\n")
    assert top(paste, kb) == "shape.stack_sizes"


@pytest.mark.parametrize(("paste", "entry"), [
    (('When the first epoch ends it stops with "Expected more than 1 value per channel when '
     'training". A smaller image size does not change it.'), "shape.batchnorm_single_sample"),
    (('Building the loader I get "num_samples should be a positive integer value" and nothing '
     "else."), "dataloader.empty_dataset"),
])
def test_a_message_quoted_up_to_its_first_comma_is_still_the_message(kb, paste, entry):
    assert top(paste, kb) == entry


def test_a_cuda_library_status_code_inside_torchs_message_is_not_the_exception(kb):
    paste = ("多卡训练报错：\n"
             "NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1191, unhandled "
             "system error, NCCL version 2.14.3 ncclSystemError: System call (e.g. socket, malloc) "
             "or external library call failed or device error.\n")
    assert parse_traceback(paste) is None  # read as text, where torch's own wording is found
    assert top(paste, kb) == "distributed.nccl_error"



@pytest.mark.parametrize(("paste", "entry"), [
    # cut mid-word, then the full stop of the sentence around it
    ("微调时就报 torch.cuda.OutOfMemoryError: CUDA out of memor。把 output 缩短就不会爆显存。",
     "memory.cuda_oom"),
    # cut with an ellipsis: the generic wording, which the fragment is most of, ranks before
    # the convolution's longer one
    ("Training dies with RuntimeError: Expected all tensors to be on the same device, "
     "but found at least two devices, cuda:1 and ...", "device.mixed_devices"),
    # quoted in a sentence, with no error line of its own
    ('Running the notebook, the generate cell fails with "expected all tensors to be on the '
     'same device". I had to install sentencepiece first as well.', "device.mixed_devices"),
    # a space before the colon, and the message cut before its end
    ('Sadly I get "CUDA error : no kernel image is available for execution" on line 91 of '
     "pipeline_stable_diffusion.py.", "device.arch_not_supported"),
], ids=["cut-mid-word", "ellipsis", "quoted-fragment", "space-before-colon"])
def test_a_message_cut_short_is_still_its_wording(paste, entry, kb):
    assert top(paste, kb) == entry
