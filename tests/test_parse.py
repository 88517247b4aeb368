"""The traceback parser on real torch tracebacks and on the messy ways people paste them.

The ``real_*`` fixtures were produced by running small buggy snippets with torch
(tests/fixtures/pastes/make_real_pastes.py); the others are hand-made variants of what
notebooks, clusters and issue trackers do to a traceback.
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import pytest

from torchdoctor.parse import Frame, ParsedError, parse_traceback

PASTES = pathlib.Path(__file__).parent / "fixtures" / "pastes"
REPO = pathlib.Path(__file__).parent.parent


def parse_fixture(name: str) -> ParsedError:
    parsed = parse_traceback((PASTES / name).read_text(encoding="utf-8"))
    assert parsed is not None, name
    return parsed


def user_location(parsed: ParsedError) -> tuple[str, int | None, str | None]:
    frame = parsed.user_frame
    assert frame is not None
    return frame.file, frame.line, frame.function


def test_plain_traceback_names_the_error_the_user_line_and_forward():
    parsed = parse_fixture("real_linear_mismatch.txt")
    assert parsed.type == "RuntimeError"
    assert parsed.message == "mat1 and mat2 shapes cannot be multiplied (64x57600 and 9216x128)"
    assert parsed.phase == "forward"
    assert user_location(parsed) == ("/home/ana/proj/train.py", 13, "forward")
    assert parsed.user_frame.code == "x = self.fc1(x)"
    assert [f.is_user for f in parsed.frames] == [True, False, False, True, False, False, False]
    assert parsed.chain[parsed.root].relation is None and len(parsed.chain) == 1


def test_to_dict_has_the_documented_shape_and_is_json():
    data = json.loads(json.dumps(parse_fixture("real_linear_mismatch.txt").to_dict()))
    assert {"type", "message", "phase", "user_frame", "frames", "chain", "root",
            "extras"} <= set(data)
    assert set(data["user_frame"]) == {"file", "line", "function", "code"}
    assert set(data["frames"][0]) == {"file", "line", "function", "code", "is_user"}
    assert {"type", "message", "relation", "frames"} <= set(data["chain"][0])
    assert {"cpp_frames", "cuda_asserts", "dataloader_worker", "ranks", "failed_ranks",
            "truncated", "warnings", "other_errors"} <= set(data["extras"])


def test_cause_chain_diagnoses_the_underlying_error():
    parsed = parse_fixture("real_chain_cause.txt")
    assert [link.type for link in parsed.chain] == ["RuntimeError", "ValueError"]
    assert [link.relation for link in parsed.chain] == [None, "cause"]
    assert parsed.root == 0
    assert parsed.message == "mat1 and mat2 shapes cannot be multiplied (4x12 and 10x2)"
    assert parsed.chain[1].message == "forward failed on batch 3"
    assert user_location(parsed) == ("/home/ana/proj/train.py", 6, "run_batch")
    assert parsed.phase == "forward"


def test_context_chain_diagnoses_the_original_failure_not_the_handler_bug():
    parsed = parse_fixture("real_chain_context.txt")
    assert [link.relation for link in parsed.chain] == [None, "context"]
    assert parsed.chain[1].type == "NameError"
    assert parsed.root == 0
    assert parsed.message == "mat1 and mat2 must have the same dtype, but got Double and Float"


def test_state_dict_message_keeps_every_line():
    parsed = parse_fixture("real_state_dict.txt")
    lines = parsed.message.split("\n")
    assert lines[0] == "Error(s) in loading state_dict for Net:"
    assert lines[1].strip() == 'Missing key(s) in state_dict: "head.bias".'
    assert lines[1].startswith("\t")
    assert sum("size mismatch for" in line for line in lines) == 3
    assert parsed.phase == "checkpoint_load"
    assert parsed.user_frame.code == "model.load_state_dict(saved)"


def test_inplace_autograd_error_is_backward_with_its_hint():
    parsed = parse_fixture("real_inplace.txt")
    assert "[torch.FloatTensor [64, 10]], which is output 0 of Sigmoid" in parsed.message
    assert "Hint: enable anomaly detection" in parsed.message
    assert parsed.phase == "backward"
    assert user_location(parsed) == ("/home/ana/proj/train.py", 9, "<module>")


def test_backward_twice_is_backward():
    parsed = parse_fixture("real_backward_twice.txt")
    assert parsed.message.startswith("Trying to backward through the graph a second time")
    assert parsed.phase == "backward"


def test_optimizer_step_error_is_optimizer_phase():
    parsed = parse_fixture("real_optimizer_step.txt")
    assert parsed.phase == "optimizer_step"
    assert parsed.user_frame.code == "optimizer.step()"


def test_weights_only_load_error_is_checkpoint_load_with_qualified_type():
    parsed = parse_fixture("real_checkpoint_load.txt")
    assert parsed.type == "UnpicklingError"
    assert parsed.full_type == "_pickle.UnpicklingError"
    assert "Unsupported global: GLOBAL __main__.Config" in parsed.message
    assert "\x1b" not in parsed.message
    assert parsed.phase == "checkpoint_load"


def test_ipython8_with_colour_codes_arrows_and_home_paths():
    parsed = parse_fixture("ipython8_ansi.txt")
    assert parsed.type == "RuntimeError"
    assert parsed.message == "mat1 and mat2 shapes cannot be multiplied (64x57600 and 9216x128)"
    assert (parsed.frames[0].file, parsed.frames[0].line) == ("Cell In[12]", 5)
    assert parsed.frames[0].code == "out = model(x)" and parsed.frames[0].is_user
    assert user_location(parsed) == ("~/proj/model.py", 23, "Net.forward")
    assert parsed.user_frame.code == "x = self.fc1(x)"
    assert not parsed.frames[1].is_user
    assert parsed.frames[1].function == "Module._wrapped_call_impl"
    assert parsed.phase == "forward"


def test_old_ipython_input_format():
    parsed = parse_fixture("ipython7_old.txt")
    assert parsed.type == "IndexError" and parsed.message == "index out of range in self"
    assert user_location(parsed) == ("<ipython-input-2-1f0e9d8c7b6a>", 14, "forward")
    assert parsed.frames[0].code == "logits = model(tokens)"
    assert [f.is_user for f in parsed.frames] == [True, False, True, False, False]
    assert parsed.phase == "forward"


def test_dataloader_worker_inner_traceback_is_the_root():
    parsed = parse_fixture("real_dataloader_worker.txt")
    assert parsed.extras["dataloader_worker"] == 0
    assert len(parsed.chain) == 2
    assert parsed.root == 0
    assert parsed.message == "Trying to resize storage that is not resizable"
    assert parsed.chain[1].message == "Caught RuntimeError in DataLoader worker process 0."
    assert parsed.chain[1].relation == "cause"
    assert parsed.frames[-1].function == "collate_tensor_fn"
    assert parsed.phase == "data_loading"
    assert user_location(parsed) == ("/home/ana/proj/train.py", 14, "main")


def test_cpp_frames_are_kept_apart_from_the_message():
    parsed = parse_fixture("real_cpp_frames.txt")
    assert parsed.message.startswith("view size is not compatible")
    assert "\n" not in parsed.message
    cpp = parsed.extras["cpp_frames"]
    assert cpp[0].startswith("Exception raised from view_impl")
    assert any("c10::Error::Error" in line for line in cpp)
    assert len(cpp) > 20


def test_cuda_assert_lines_are_collapsed_and_boilerplate_recognised():
    parsed = parse_fixture("cuda_device_assert.txt")
    assert parsed.message == "CUDA error: device-side assert triggered"
    assert len(parsed.extras["boilerplate"]) == 3
    (assertion,) = parsed.extras["cuda_asserts"]
    assert assertion["assertion"] == "srcIndex < srcSelectDimSize"
    assert assertion["function"] == "indexSelectLargeIndex"
    assert (assertion["line"], assertion["count"]) == (1146, 96)
    assert assertion["block"] == "[0,0,0]" and assertion["thread"] == "[32,0,0]"
    assert parsed.extras["cpp_frames"][1].startswith("frame #0: c10::Error::Error")
    assert user_location(parsed) == ("/workspace/model.py", 30, "forward")


def test_torchrun_interleaved_ranks_diagnose_the_first_root_error():
    parsed = parse_fixture("torchrun_interleaved.txt")
    assert parsed.message.startswith("Expected to have finished reduction in the prior iteration")
    assert "Parameter indices which did not receive grad for rank 1: 4 5" in parsed.message
    assert user_location(parsed) == ("/home/ana/proj/ddp_train.py", 52, "main")
    assert parsed.extras["ranks"] == [0, 1]
    assert parsed.extras["failed_ranks"] == [0, 1]
    others = parsed.extras["other_errors"]
    assert others[0] == ("[rank0] torch.distributed.DistBackendError: "
                         "NCCL communicator was aborted on rank 0.")
    assert any("ChildFailedError" in other for other in others)
    assert not any(line.startswith("[rank") for f in parsed.frames for line in [f.file])


def test_torchelastic_summary_alone_names_the_failed_rank():
    parsed = parse_fixture("torchelastic_summary.txt")
    assert parsed.type == "ChildFailedError"
    assert "<NO_OTHER_FAILURES>" in parsed.message
    assert parsed.extras["failed_ranks"] == [3]
    assert parsed.extras["ranks"] == [3]


def test_log_noise_timestamps_progress_bars_and_warnings():
    parsed = parse_fixture("log_noise.txt")
    assert parsed.message == ("The size of tensor a (64) must match the size of tensor b (32) "
                              "at non-singleton dimension 0")
    assert parsed.phase == "optimizer_step"
    assert user_location(parsed) == ("/home/ana/proj/trainer.py", 77, "fit")
    (warning,) = parsed.extras["warnings"]
    assert warning.startswith("UserWarning: Using a target size (torch.Size([64]))")


def test_warning_before_a_real_traceback_is_reported():
    parsed = parse_fixture("real_loss_warning.txt")
    assert parsed.type == "IndexError" and parsed.message == "Target 2 is out of bounds."
    assert "different to the input size (torch.Size([64, 1]))" in parsed.extras["warnings"][0]
    assert parsed.phase == "forward"


def test_several_tracebacks_diagnose_the_first_and_list_the_rest():
    parsed = parse_fixture("several_tracebacks.txt")
    assert parsed.message == "DataLoader worker (pid(s) 9141) exited unexpectedly"
    assert parsed.phase == "data_loading"
    assert parsed.extras["other_errors"] == ["KeyboardInterrupt",
                                             "ModuleNotFoundError: No module named 'wandb'"]


def test_windows_paths():
    parsed = parse_fixture("windows_paths.txt")
    assert user_location(parsed) == (r"C:\Users\me\proj\train.py", 9, "main")
    assert [f.is_user for f in parsed.frames] == [True, True, False, False, False]
    assert parsed.message.startswith("Input type (torch.cuda.FloatTensor)")


def test_only_the_final_line():
    parsed = parse_fixture("final_line_only.txt")
    assert parsed.type == "RuntimeError"
    assert parsed.message == "mat1 and mat2 shapes cannot be multiplied (64x57600 and 9216x128)"
    assert parsed.frames == [] and parsed.user_frame is None
    assert parsed.extras["source"] == "final_line"
    assert parsed.phase == "forward"


def test_only_the_message_inside_prose():
    parsed = parse_fixture("message_only.txt")
    assert parsed.type is None
    assert parsed.message == "Expected input batch_size (64) to match target batch_size (32)."
    assert parsed.extras["source"] == "message_only"


def test_truncated_paste_keeps_its_frames():
    parsed = parse_fixture("truncated.txt")
    assert parsed.extras["truncated"] is True
    assert parsed.type is None and parsed.message == ""
    assert len(parsed.frames) == 3
    assert parsed.phase == "backward"
    assert parsed.user_frame.code == "loss.backward()"


def test_quoted_issue_paste():
    parsed = parse_fixture("quoted_issue.txt")
    assert parsed.message.startswith("one of the variables needed for gradient computation")
    assert parsed.phase == "backward"
    assert user_location(parsed) == ("/home/ana/proj/train.py", 9, "<module>")


def test_paste_indented_by_four_spaces_keeps_message_tabs():
    indented = parse_fixture("indented_four_spaces.txt")
    plain = parse_fixture("real_state_dict.txt")
    assert indented.message == plain.message
    assert indented.to_dict()["frames"] == plain.to_dict()["frames"]


def test_paste_with_indentation_removed():
    flattened = parse_fixture("flattened.txt")
    plain = parse_fixture("real_linear_mismatch.txt")
    assert flattened.message == plain.message
    assert [f.code for f in flattened.frames] == [f.code for f in plain.frames]
    assert flattened.user_frame == plain.user_frame


def test_python311_caret_lines_are_not_code():
    parsed = parse_fixture("real_dataloader_worker.txt")
    codes = [f.code for link in parsed.chain for f in link.frames if f.code]
    assert codes and not any(set(code) <= set("^~ ") for code in codes)


def test_qualified_out_of_memory_names():
    parsed = parse_fixture("oom_qualified.txt")
    assert (parsed.type, parsed.full_type) == ("OutOfMemoryError", "torch.OutOfMemoryError")
    assert parsed.message.startswith("CUDA out of memory. Tried to allocate 2.00 GiB.")
    assert parsed.phase == "backward"
    cuda = parse_fixture("oom_cuda_final_line.txt")
    assert cuda.full_type == "torch.cuda.OutOfMemoryError" and cuda.type == "OutOfMemoryError"


def test_exception_without_message():
    parsed = parse_fixture("real_stopiteration.txt")
    assert parsed.type == "StopIteration" and parsed.message == ""
    assert parsed.phase == "data_loading"
    assert parsed.user_frame.code == "batch = next(iter(loader))"


def test_key_error_message_keeps_its_quotes():
    parsed = parse_fixture("real_keyerror.txt")
    assert parsed.type == "KeyError" and parsed.message == "'x'"
    assert parsed.phase == "other"


def test_signature_ignores_the_numbers():
    first = parse_traceback("RuntimeError: mat1 and mat2 shapes cannot be multiplied "
                            "(64x57600 and 9216x128)")
    second = parse_traceback("RuntimeError: mat1 and mat2 shapes cannot be multiplied "
                             "(32x4096 and 9216x128)")
    other = parse_traceback("RuntimeError: mat1 and mat2 must have the same dtype")
    assert first.signature == second.signature != other.signature


@pytest.mark.parametrize("text", ["", "   \n\n", "loss stays at 2.30 with 10 classes",
                                  "GPU memory keeps growing every epoch"])
def test_no_error_at_all_gives_none(text):
    assert parse_traceback(text) is None


def test_binary_garbage_is_survived():
    garbage = bytes(range(256)) * 4000
    assert parse_traceback(garbage.decode("utf-8", errors="replace")) is None
    assert parse_traceback(garbage) is None


def test_ten_megabyte_log_finds_the_traceback_at_its_end():
    progress = "".join(f"epoch 3 step {i} loss 0.{i % 97:02d} lr 0.001\r" for i in range(200_000))
    traceback = (PASTES / "real_linear_mismatch.txt").read_text()
    log = progress * (10_000_000 // len(progress) + 1) + "\n" + traceback
    assert len(log) >= 10_000_000
    parsed = parse_traceback(log)
    assert parsed.message == "mat1 and mat2 shapes cannot be multiplied (64x57600 and 9216x128)"
    assert parsed.user_frame.line == 13


def test_public_types_are_exported():
    parsed = parse_fixture("real_linear_mismatch.txt")
    assert all(isinstance(frame, Frame) for frame in parsed.frames)


def test_importing_the_parser_does_not_import_torch():
    code = ("import sys, torchdoctor.parse as p; "
            "p.parse_traceback(open(sys.argv[1]).read()); "
            "print('torch' in sys.modules)")
    env = dict(os.environ, PYTHONPATH=str(REPO))
    done = subprocess.run([sys.executable, "-c", code, str(PASTES / "real_inplace.txt")],
                          capture_output=True, text=True, env=env, cwd=REPO, check=True)
    assert done.stdout.strip() == "False"


SITE = "/home/ana/.venv/lib/python3.11/site-packages"


def traceback_text(frames: list[tuple[str, int, str, str]], final: str) -> str:
    lines = ["Traceback (most recent call last):"]
    for file, line, function, code in frames:
        lines += [f'  File "{file}", line {line}, in {function}', f"    {code}"]
    return "\n".join(lines + [final]) + "\n"


@pytest.mark.parametrize(("file", "function", "is_user"), [
    ("/home/ana/proj/train.py", "main", True),
    ("~/proj/train.py", "main", True),
    ("/tmp/ipykernel_123/456.py", "<module>", True),
    ("<string>", "<module>", True),
    ("<string>", "forward", False),
    ("<eval_with_key>.3", "forward", False),
    ("<frozen runpy>", "_run_code", False),
    ("/usr/lib/python3.11/runpy.py", "_run_code", False),
    ("/opt/conda/lib/python3.10/site-packages/torchvision/ops/boxes.py", "nms", False),
    ("/usr/local/lib/python3.10/dist-packages/torch/nn/modules/module.py", "_call_impl", False),
    ("/home/ana/src/pytorch/torch/nn/modules/module.py", "_call_impl", False),
    (r"C:\Python311\Lib\runpy.py", "_run_code", False),
])
def test_user_and_library_frames(file, function, is_user):
    parsed = parse_traceback(traceback_text([(file, 3, function, "x = f(y)")], "ValueError: bad"))
    assert parsed.frames[0].is_user is is_user


def test_forward_recomputed_inside_backward_counts_as_backward():
    frames = [
        ("/home/ana/proj/train.py", 40, "<module>", "loss.backward()"),
        (f"{SITE}/torch/_tensor.py", 581, "backward", "torch.autograd.backward("),
        (f"{SITE}/torch/autograd/function.py", 306, "apply", "return user_fn(self, *args)"),
        (f"{SITE}/torch/utils/checkpoint.py", 321, "backward", "outputs = ctx.run_function(*i)"),
        ("/home/ana/proj/model.py", 12, "forward", "return self.fc(x)"),
        (f"{SITE}/torch/nn/modules/linear.py", 125, "forward", "return F.linear(x, w, b)"),
    ]
    parsed = parse_traceback(traceback_text(frames, "RuntimeError: boom"))
    assert parsed.phase == "backward"
    assert parsed.user_frame.file == "/home/ana/proj/model.py"


@pytest.mark.parametrize("library_frames", [
    # torch < 0.4: a Variable's view ran through autograd/variable.py and _functions/
    [(f"{SITE}/torch/autograd/variable.py", 469, "view", "return View(*sizes)(self)"),
     (f"{SITE}/torch/autograd/_functions/tensor.py", 96, "forward", "result = i.view(*self.sizes)")],
    # a custom Function's forward, called through apply
    [(f"{SITE}/torch/autograd/function.py", 575, "apply", "return super().apply(*args)"),
     ("/home/ana/proj/ops.py", 9, "forward", "return x.view(-1, 4)")],
    # inference under @torch.no_grad()
    [(f"{SITE}/torch/autograd/grad_mode.py", 27, "decorate_context", "return func(*a, **k)"),
     ("/home/ana/proj/model.py", 40, "forward", "return x.view(-1, 4)")],
])
def test_autograd_frames_that_run_forward_are_not_the_backward_pass(library_frames):
    frames = [("/home/ana/proj/train.py", 13, "<module>", "y = predict(x)")] + library_frames
    parsed = parse_traceback(traceback_text(frames, "RuntimeError: input is not contiguous"))
    assert parsed.phase == "forward"


def test_modules_called_by_a_dataset_count_as_data_loading():
    frames = [
        ("/home/ana/proj/train.py", 30, "<module>", "for x, y in train_loader:"),
        (f"{SITE}/torch/utils/data/dataloader.py", 701, "__next__", "data = self._next_data()"),
        ("/home/ana/proj/data.py", 18, "__getitem__", "image = self.resize(image)"),
        (f"{SITE}/torch/nn/modules/module.py", 1747, "_call_impl", "return forward_call(*a)"),
    ]
    parsed = parse_traceback(traceback_text(frames, "RuntimeError: boom"))
    assert parsed.phase == "data_loading"


def test_backward_inside_forward_is_backward_because_it_is_deeper():
    frames = [
        ("/home/ana/proj/train.py", 30, "<module>", "out = model(x)"),
        ("/home/ana/proj/model.py", 22, "forward", "g = torch.autograd.grad(y, x)"),
        (f"{SITE}/torch/autograd/__init__.py", 496, "grad", "result = _engine_run_backward("),
    ]
    parsed = parse_traceback(traceback_text(frames, "RuntimeError: boom"))
    assert parsed.phase == "backward"


def test_headless_traceback_pasted_from_the_first_frame():
    text = (PASTES / "real_linear_mismatch.txt").read_text().split("\n", 1)[1]
    parsed = parse_traceback(text)
    assert parsed.message.startswith("mat1 and mat2 shapes cannot be multiplied")
    assert parsed.user_frame.line == 13 and not parsed.extras["truncated"]


def test_a_backend_failure_keeps_the_error_it_wraps_in_its_message():
    paste = (
        'Traceback (most recent call last):\n'
        '  File "t.py", line 3, in <module>\n'
        '    f(x)\n'
        "torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised:\n"
        "RuntimeError: Compiler: cc is not found.\n"
    )
    parsed = parse_traceback(paste)
    # The carried error is the root; the wrapper stays beside it with its frames.
    assert (parsed.type, parsed.message) == ("RuntimeError", "Compiler: cc is not found.")
    wrapper = parsed.chain[parsed.root + 1]
    assert wrapper.type == "BackendCompilerFailed"
    assert wrapper.message.endswith("RuntimeError: Compiler: cc is not found.")
    assert parsed.user_frame.file == "t.py"


def test_inductors_wrapper_and_a_full_chain_keep_one_link_per_exception():
    wrapped = parse_traceback("torch._inductor.exc.InductorError: CppCompileError: C++ compile "
                              "error\n")
    assert [link.type for link in wrapped.chain] == ["CppCompileError", "InductorError"]
    chained = parse_traceback(
        "Traceback (most recent call last):\n"
        '  File "/site-packages/torch/_inductor/cpp_builder.py", line 9, in check\n'
        "    raise InvalidCxxCompiler\n"
        "torch._inductor.exc.InvalidCxxCompiler: No working C++ compiler found in "
        "torch._inductor.config.cpp.cxx: (None, 'g++')\n\n"
        "The above exception was the direct cause of the following exception:\n\n"
        "Traceback (most recent call last):\n"
        '  File "t.py", line 3, in <module>\n'
        "    f(x)\n"
        "torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised:\n"
        "InvalidCxxCompiler: No working C++ compiler found in torch._inductor.config.cpp.cxx: "
        "(None, 'g++')\n")
    assert [link.type for link in chained.chain] == ["InvalidCxxCompiler",
                                                     "BackendCompilerFailed"]
    assert chained.root == 0


def test_output_printed_between_the_frames_neither_ends_them_nor_becomes_their_code():
    paste = (
        "Traceback (most recent call last):\n"
        '  File "evaluate.py", line 90, in <module>\n'
        "reading 500 images from disk\n"
        "building the index...\n"
        "    run()\n"
        '  File "evaluate.py", line 71, in run\n'
        "    scores = model(batch)\n"
        '  File "/usr/lib/python3.10/site-packages/torch/nn/modules/module.py", line 1501, '
        "in _call_impl\n"
        "    return forward_call(*args, **kwargs)\n"
        '  File "/work/net.py", line 33, in forward\n'
        "    x = self.stem(x)\n")
    parsed = parse_traceback(paste)
    assert [(f.line, f.code) for f in parsed.frames] == [
        (90, None), (71, "scores = model(batch)"), (1501, "return forward_call(*args, **kwargs)"),
        (33, "x = self.stem(x)")]
    assert parsed.user_frame.code == "x = self.stem(x)" and parsed.phase == "forward"


def test_a_second_trace_starting_over_after_other_output_is_not_joined_to_the_first():
    # Two processes printing at once: the second trace begins at the same outermost frame.
    paste = (
        "Traceback (most recent call last):\n"
        '  File "train.py", line 200, in <module>\n'
        "rank 1: CUDA error: invalid device ordinal\n"
        '  File "train.py", line 200, in <module>\n'
        "    main()\n"
        '  File "train.py", line 150, in main\n'
        "    setup(rank)\n"
        "RuntimeError: CUDA error: invalid device ordinal\n")
    parsed = parse_traceback(paste)
    assert [f.line for f in parsed.frames] == [200, 150]
    assert parsed.type == "RuntimeError"


def test_an_exception_retyped_in_prose_without_the_space_after_its_colon_is_read():
    parsed = parse_traceback("训练时报错（ValueError:Attempting to unscale FP16 gradients.），"
                             "怎么办？\n")
    assert (parsed.type, parsed.message.rstrip(")")) == (
        "ValueError", "Attempting to unscale FP16 gradients.")


def test_a_message_line_ending_in_a_colon_continues_past_the_blank_line_torch_prints():
    # torch >= 2.6 prints the weights-only refusal's reason after a blank line.
    paste = ("Traceback (most recent call last):\n"
             '  File "load.py", line 3, in <module>\n'
             '    state = torch.load("ckpt.pt")\n'
             "_pickle.UnpicklingError: Weights only load failed. Please file an issue with the "
             "following so that we can make `weights_only=True` compatible with your use case: "
             "WeightsUnpickler error: \n\nUnsupported operand 4\n\n"
             "Check the documentation of torch.load to learn more.\n\nI am stuck here.\n")
    parsed = parse_traceback(paste)
    assert parsed.message.endswith("WeightsUnpickler error:\nUnsupported operand 4")
