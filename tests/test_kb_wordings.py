"""Wordings of the shipped knowledge base, as people quote them and as torch prints them.

Each test reads a form a whole family of reports takes (an old message quoted without
its argument, the dispatcher's backend list quoted alone, TorchScript's front-end
errors) against the shipped entries; the TorchScript errors are raised live by the
installed torch, in a subprocess, so the doctor side stays torch-free here.
"""

import json
import subprocess
import sys
import textwrap

import pytest

from torchdoctor.knowledge import load_knowledge
from torchdoctor.match import diagnose

KB = load_knowledge(include_user=False, use_cache=False, report=False)


def top(text: str) -> str | None:
    matches = diagnose(text, KB).matches
    return str(matches[0].entry.id) if matches else None


@pytest.mark.parametrize("quoted", [
    ("forward fails with RuntimeError: Expected object of backend CPU but got backend CUDA, "
    "although the model was moved."),
    "RuntimeError: Expected object of backend CUDA but got backend CPU for argument #2 'mat1'",
])
def test_torch_1_0s_backend_wording_is_a_device_mix_with_or_without_its_argument(quoted):
    assert top(quoted) == "device.mixed_devices"


def cut_traceback(module_file: str, code: str) -> str:
    return textwrap.dedent(f"""\
        # Expected object of type torch.FloatTensor but found type torch.cuda.FloatTensor
        Traceback (most recent call last):
          File "test.py", line 26, in <module>
            out = model(batch)
          File "/usr/lib/python2.7/dist-packages/torch/nn/modules/module.py", line 357, in __call__
            result = self.forward(*input, **kwargs)
          File "/usr/lib/python2.7/dist-packages/torch/nn/modules/{module_file}", line 282, in forward
            {code}
        """)


def test_a_type_mismatch_quoted_without_its_argument_inside_a_convolution_is_its_weight():
    # torch 0.4 named the argument ('weight'); a title drops it, torch's conv.py frame says it.
    assert top(cut_traceback("conv.py", "self.padding, self.dilation, self.groups)")) == (
        "device.input_weight_device")
    assert top(cut_traceback("linear.py", "return F.linear(input, self.weight, self.bias)")) == (
        "device.mixed_devices")


DISPATCH_LIST = ("'aten::_slow_conv2d_forward' is only available for these backends: "
                 "[CPU, Meta, SparseCPU, BackendSelect, Python, Named]")


def test_an_op_without_a_metal_kernel_is_recognised_from_the_dispatchers_words():
    assert top("NotImplementedError: Could not run 'aten::amax.out' with arguments from the "
               "'MPS' backend. This could be because the operator doesn't exist for this "
               "backend") == "device.mps_op_not_implemented"
    # The backend list quoted alone, in typographic quotes, beside words naming the device.
    quoted = DISPATCH_LIST.replace("'", "\u2018", 1).replace("'", "\u2019", 1)
    assert top(f'After model.to("mps") the forward dies with\n\n{quoted}\n') == (
        "device.mps_op_not_implemented")


def test_the_backend_list_alone_says_nothing_of_mps_when_no_word_names_it():
    assert top(f"Calling my CUDA extension gives\n\n{DISPATCH_LIST}\n") != (
        "device.mps_op_not_implemented")


def test_every_leaf_in_place_wording_of_torch_names_the_leaf_entry():
    # The strings torch's autograd raises for a leaf that requires grad written in place.
    for message in ("a leaf Variable that requires grad is being used in an in-place operation.",
                    ("a view of a leaf Variable that requires grad is being used in an in-place "
                    "operation."),
                    "a leaf Variable that requires grad has been used in an in-place operation.",
                    "leaf variable has been moved into the graph interior"):
        assert top(f"RuntimeError: {message}") == "autograd.leaf_inplace", message


SCRIPTED = textwrap.dedent('''
    import json, traceback, warnings
    import torch
    warnings.simplefilter("ignore")

    def comprehension_if(x):
        return [i for i in range(3) if i]

    def unknown_name(x):
        return not_defined_anywhere + x

    def python_builtin(x):
        with open("data.txt") as f:
            pass
        return x

    out = []
    for fn in (comprehension_if, unknown_name, python_builtin):
        try:
            torch.jit.script(fn)
            out.append(None)
        except Exception:
            out.append(traceback.format_exc())
    print(json.dumps(out))
''')


def test_torchscripts_front_end_errors_raised_by_the_installed_torch_name_its_entry(tmp_path):
    script = tmp_path / "scripted.py"  # TorchScript compiles from the source file
    script.write_text(SCRIPTED)
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=120, check=True)
    tracebacks = json.loads(done.stdout.strip().splitlines()[-1])
    assert all(tracebacks), "each function must fail to script"
    for text in tracebacks:
        assert top(text) == "compile.torchscript_unsupported", text


def keys_error(model: str, missing: str, unexpected: str) -> str:
    return (f"RuntimeError: Error(s) in loading state_dict for {model}:\n"
            f"\tMissing key(s) in state_dict: {missing}. \n"
            f"\tUnexpected key(s) in state_dict: {unexpected}. \n")


def test_key_lists_blanked_out_still_name_the_wrapper_the_checkpoint_was_loaded_into():
    assert top(keys_error("DataParallel", "xxxxxxxx", "xxxxxxxx")) == "state_dict.module_prefix"
    # Both sides prefixed: the wrapper is on both, the layers differ.
    assert top(keys_error("DataParallel", '"module.fc.weight"', '"module.head.weight"')) == (
        "state_dict.missing_unexpected_keys")


def test_keys_cut_by_a_fixed_count_show_a_prefix_strip_applied_to_unprefixed_keys():
    # k[7:] on keys without "module.": "t" becomes "", "binary1.cl" becomes ".cl".
    cut = keys_error("Net", '"t", "layer_list.0.cl", "binary1.cl"', '"", "ist.0.cl", ".cl"')
    assert top(cut) == "state_dict.module_prefix"
    renamed = keys_error("Net", '"fc.weight", "fc.bias"', '"classifier.weight", "classifier.bias"')
    assert top(renamed) == "state_dict.missing_unexpected_keys"


@pytest.mark.parametrize(("prose", "expected"), [
    # the installed build named by its device, in any language, beside a CUDA check that fails
    ("装好环境后发现 torch 是 CPU 版本, torch.cuda.is_available() 一直返回 False。",
     "device.torch_without_cuda"),
    ("pip gave me the cpu wheel of torch; torch.cuda.is_available() prints False.",
     "device.torch_without_cuda"),
    # the run goes on, on the CPU
    ("Training works but the CPU is at 100 % and the GPU stays at 0 % the whole time.",
     "device.no_cuda_device"),
    # the message retold
    ("It keeps saying my tensors are on different devices although I called model.to(device).",
     "device.mixed_devices"),
    # a tensor the module holds, left behind by .cuda()
    (("After net.cuda():\n>>> net.fc.weight.device\ndevice(type='cuda', index=0)\n"
     ">>> net.anchors.device\ndevice(type='cpu')"), "device.mixed_devices"),
    ("Predicting fails on the GPU; moving the model to the cpu first works.",
     "device.input_weight_device"),
    # checkpoints and the wrapper they were saved from
    (("I trained with nn.DataParallel and now the checkpoint only loads if I wrap the model "
     "in DataParallel again."), "state_dict.module_prefix"),
    ("I get a shape mismatch when loading the pretrained weights into my 10-class model.",
     "state_dict.size_mismatch"),
    (("I changed the first conv block and now loading the pretrained weights complains about "
     "missing keys and unexpected keys."), "state_dict.missing_unexpected_keys"),
    # compile: the Triton class torch imports, a guard on a value read out of a tensor
    ("torch.compile fails because AttrsDescriptor cannot be found in triton.compiler.compiler.",
     "compile.triton_missing"),
    ("# Guard fails when indexing with `.item()` under torch.compile", "compile.data_dependent_guard"),
    # weights a module never registered: the optimizer never sees them
    (("The gates live in a regular dict rather than an nn.ModuleDict, so they never appear in "
     "`model.parameters()` and keep their initial values."), "training.optimizer_param_no_grad"),
])
def test_a_described_symptom_names_its_entry(prose, expected):
    assert top(prose) == expected


def test_torchs_own_key_lists_are_the_message_not_a_retelling_of_it():
    quoted = ('Resuming gives `Missing key(s) in state_dict: "stem.weight", [...] '
              'Unexpected key(s) in state_dict: "_orig_mod.stem.weight", [...]`.')
    assert top(quoted) == "state_dict.compile_prefix"


INPLACE_AFTER_RETAIN = (
    "The loop first said I was trying to backward through the graph a second time, so I "
    "passed retain_graph=True to backward, and now it fails with\n\n"
    "RuntimeError: one of the variables needed for gradient computation has been modified by an "
    "inplace operation: [torch.FloatTensor [64, 16]] is at version 3; expected version 2 instead.\n")


def test_an_inplace_error_after_retain_graph_was_added_is_the_first_errors_cause():
    ranked = [m.entry.id for m in diagnose(INPLACE_AFTER_RETAIN, KB).matches]
    assert ranked[:2] == ["autograd.backward_twice", "autograd.inplace_modified"]
    # The in-place error alone stays the in-place entry.
    alone = INPLACE_AFTER_RETAIN.split("now it fails with\n\n")[1]
    assert top(alone) == "autograd.inplace_modified"


def copy_error(expected: str, src: str, counts: str) -> str:
    return (f"RuntimeError: inconsistent tensor size, expected tensor [{expected}] and src [{src}] "
            f"to have the same number of elements, but got {counts} elements respectively at "
            "/pytorch/torch/lib/TH/generic/THTensorCopy.c:86")


def test_a_layer_filled_from_a_short_flat_slice_is_a_weights_file_for_another_network():
    # torch < 0.4: darknet loaders copy 1-D slices of the file into each layer.
    assert top(copy_error("64 x 32 x 3 x 3", "1776", "18432 and 1776")) == (
        "state_dict.size_mismatch")
    # Two tensors of different shapes copied: an ordinary element-count mismatch.
    assert top(copy_error("100 x 3 x 128 x 128", "100 x 3 x 112 x 128", "4915200 and 4300800")) == (
        "shape.numel_mismatch")


@pytest.mark.parametrize(("message", "expected"), [
    ("Placeholder storage has not been allocated on MPS device!", "device.mixed_devices"),
    ("Input type (MPSFloatType) and weight type (torch.FloatTensor) should be the same",
     "device.input_weight_device"),
    ("Input type (CPUBFloat16Type) and weight type (MPSBFloat16Type) should be the same",
     "device.input_weight_device"),
])
def test_the_apple_gpus_device_mix_wordings(message, expected):
    assert top(f"RuntimeError: {message}") == expected



HOOK_UNDER_NO_GRAD = textwrap.dedent('''
    import torch
    layer = torch.nn.Linear(4, 2)
    with torch.no_grad():
        out = layer(torch.randn(3, 4))
    out.register_hook(lambda grad: grad)
''')


def test_a_gradient_hook_on_an_output_made_under_no_grad_is_a_graph_cut(tmp_path):
    script = tmp_path / "cam.py"
    script.write_text(HOOK_UNDER_NO_GRAD)
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, check=False,
                          timeout=120)
    assert "register a hook" in done.stderr
    assert top(done.stderr) == "autograd.no_grad_fn"


TOO_OLD = ("Found NVIDIA GeForce GTX 1070 which is too old to be supported by the triton GPU "
           "compiler, which is used as the backend. Triton only supports devices of CUDA "
           "Capability >= 7.0, but your device is of CUDA capability 6.1")


def test_a_gpu_older_than_triton_supports_is_named_inside_inductors_wrapper_too():
    assert top(f"RuntimeError: {TOO_OLD}") == "compile.gpu_too_old_for_triton"
    wrapped = ("torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised:\n"
               f"RuntimeError: {TOO_OLD}\n\n"
               'Set TORCH_LOGS="+dynamo" and TORCHDYNAMO_VERBOSE=1 for more information\n')
    match = diagnose(wrapped, KB).matches[0]
    assert (match.entry.id, match.fields["capability"]) == ("compile.gpu_too_old_for_triton", "6.1")


NMS = ("NotImplementedError: Could not run '{op}' with arguments from the 'CUDA' backend. This "
       "could be because the operator doesn't exist for this backend.")


def test_a_library_operator_without_a_cuda_kernel_is_a_cpu_build_of_that_library():
    assert top(NMS.format(op="torchvision::nms")) == "device.extension_without_cuda_kernel"
    assert top(NMS.format(op="torchvision::roi_align")) == "device.extension_without_cuda_kernel"
    # torch's own operators are not an extension's.
    assert top(NMS.format(op="aten::empty_strided")) != "device.extension_without_cuda_kernel"
    # The versions printed side by side say the same without the message.
    assert top("torch and torchvision print: 2.7.0+cu128 0.22.0+cpu") == (
        "device.extension_without_cuda_kernel")


def test_a_checkpoint_trained_on_several_gpus_and_loaded_for_one_is_the_wrappers_prefix():
    # In any language: "多卡" / "单卡" read as several GPUs / a single GPU.
    missing = ('RuntimeError: Error(s) in loading state_dict for Net:\n'
               '\tMissing key(s) in state_dict: "aspp.branch1.0.weight", "aspp.branch1.0.bias".\n')
    said = "多卡训出来的模型,用单卡跑测试就报下面的错,两块卡推理却没问题:\n"
    assert top(said + missing) == "state_dict.module_prefix"
    assert top(missing) == "state_dict.missing_unexpected_keys"
    assert top("Trained on 4 GPUs; loading the weights for a single GPU gives missing keys "
               "for every layer.") == "state_dict.module_prefix"


@pytest.mark.parametrize(("message", "expected"), [
    # wordings of older releases, quoted as printed
    (("Some of weight/gradient/input tensors are located on different GPUs. Please move them to "
     "a single one."), "device.mixed_devices"),
    (("Inference tensors can't be saved for backward. To work around you can make a clone to get "
     "a normal tensor and use it in autograd."), "autograd.inference_tensor"),
])
def test_older_wordings_of_device_and_autograd_errors(message, expected):
    assert top(f"RuntimeError: {message}") == expected


def test_a_compile_that_fails_only_in_max_autotune_is_the_backend():
    assert top("torch.compile(mode='max-autotune') dies inside Triton on one matmul; the default "
               "mode works.") == "compile.backend_failed"


@pytest.mark.parametrize("message", [
    "RuntimeError: indices should be either on cpu or on the same device as the indexed tensor (cpu)",
    ("RuntimeError: Tensor for argument #2 'mat1' is on CPU, but expected it to be on GPU "
     "(while checking arguments for addmm)"),
    ("RuntimeError: Tensor for 'out' is on CPU, Tensor for argument #1 'self' is on CPU, but "
     "expected them to be on GPU (while checking arguments for addmm)"),
    ("RuntimeError: Expected condition, x and y to be on the same device, but condition is on "
     "cpu and x and y are on cuda:0 and cuda:0 respectively"),
    ("RuntimeError: Expected tensor for argument #1 'indices' to have the same device as tensor "
     "for argument #2 'weight'; but device 1 does not equal 0 (while checking arguments for "
     "embedding)"),
    "RuntimeError: expected device cuda:0 but got device cpu",
])
def test_every_versions_wording_of_two_devices_in_one_op(message):
    assert top(message) == "device.mixed_devices"


@pytest.mark.parametrize("message", [
    ("IndexError: The shape of the mask [845] at index 0does not match the shape of the indexed "
    "tensor [5, 13, 13] at index 0"),   # torch 1.0 - 1.1 printed no space
    ("RuntimeError: inconsistent tensor size, expected tensor [256 x 256] and mask [256] to have "
    "the same number of elements, but got 65536 and 256 elements respectively at "
    "/pytorch/torch/lib/TH/generic/THTensorMath.c:138"),
])
def test_a_boolean_masks_shape_in_old_wordings(message):
    assert top(message) == "index.mask_shape"


@pytest.mark.parametrize("op", ["addmm_impl_cpu_", "LayerNormKernelImpl", "slow_conv2d_cpu",
                                "baddbmm_with_gemm", "softmax_lastdim_kernel_impl",
                                "upsample_nearest2d_channels_last"])
def test_a_half_kernel_that_names_no_device_is_the_cpus(op):
    assert top(f"RuntimeError: \"{op}\" not implemented for 'Half'") == "dtype.half_on_cpu"


def test_a_cuda_kernel_without_a_reduced_precision_version_is_no_cpu_half():
    assert top("RuntimeError: \"addmm_cuda\" not implemented for 'BFloat16'") == (
        "dtype.half_precision_mismatch")


@pytest.mark.parametrize("message", [
    "Input type (float) and bias type (struct c10::Half) should be the same",
    "Input type (class c10::BFloat16) and weight type (float) should be the same",
    "expected mat1 and mat2 to have the same dtype, but got: struct c10::Half != float",
])
def test_msvc_builds_name_the_reduced_precision_type_with_its_keyword(message):
    assert top(f"RuntimeError: {message}") == "dtype.half_precision_mismatch"


@pytest.mark.parametrize("message", [
    "RuntimeError: cholesky_cuda: For batch 6: U(1,1) is zero, singular U.",
    "RuntimeError: torch.linalg.cholesky: U(70,70) is zero, singular U.",
    "RuntimeError: solve_cpu: For batch 0: U(3,3) is zero, singular U.",
    ("RuntimeError: Lapack Error in gesv : U(2,2) is zero, singular U. at "
    "/pytorch/aten/src/TH/generic/THTensorLapack.cpp:47"),
    ("RuntimeError: MAGMA gesv : U(2,2) is zero, singular U. at "
    "/pytorch/aten/src/THC/generic/THCTensorMathMagma.cu:53"),
    ("RuntimeError: symeig_cpu: the algorithm failed to converge; 2 off-diagonal elements of an "
    "intermediate tridiagonal form did not converge to zero."),
    "RuntimeError: svd_cuda: the updating process of SBDSDC did not converge (error: 11)",
    ("torch._C._LinAlgError: linalg.cholesky: (Batch element 0): The factorization could not be "
    "completed because the input is not positive-definite (the leading minor of order 2 is not "
    "positive-definite)."),
    ("torch._C._LinAlgError: linalg.inv: (Batch element 3): The diagonal element 2 is zero, the "
    "inversion could not be completed because the input matrix is singular."),
])
def test_every_versions_wording_of_a_failed_factorization(message):
    assert top(message) == "numerics.linalg_ill_conditioned"


@pytest.mark.parametrize("wrapper", ["DeepSpeedEngine", "FullyShardedDataParallel",
                                     "OptimizedModule", "MMDataParallel",
                                     "MMDistributedDataParallel", "ShardedDataParallel"])
def test_any_wrapper_that_keeps_the_model_under_module_hides_its_attributes(wrapper):
    assert top(f"AttributeError: '{wrapper}' object has no attribute 'model'") == (
        "distributed.wrapper_hides_attribute")


@pytest.mark.parametrize("quoted", [
    'torch.load complains about "Unsupported global: GLOBAL numpy.core.multiarray.scalar".',
    "Unsupported global: GLOBAL argparse.Namespace was not an allowed global by default.",
])
def test_the_weights_only_refusal_quoted_without_its_lead_in(quoted):
    assert top(quoted) == "state_dict.weights_only_global"


def test_torch_2_4s_unsupported_class_quoted_alone():
    assert top("Loading the checkpoint with torch.load says 'Unsupported class "
               "numpy.core.multiarray._reconstruct'") == "state_dict.weights_only_global"
