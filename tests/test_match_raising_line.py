"""One wording, several entries: the line that raised it, or the loss the person names,
decides which entry it is (old torch's messages name neither op nor operand)."""

from __future__ import annotations

import pytest

from torchdoctor.knowledge import load_knowledge
from torchdoctor.match import diagnose

TH_SIZES = ("RuntimeError: invalid argument 1: the number of sizes provided must be greater "
            "or equal to the number of dimensions in the tensor at "
            "/pytorch/torch/lib/TH/generic/THTensor.c:299")


@pytest.fixture(scope="module")
def kb():
    return load_knowledge(include_user=False, use_cache=False)


def top(text: str, kb) -> str | None:
    matches = diagnose(text, kb).matches
    return matches[0].entry.id if matches else None


def traceback_raising(code: str, message: str) -> str:
    return ("Traceback (most recent call last):\n"
            '  File "reward.py", line 12, in <module>\n'
            f"    {code}\n{message}\n")


@pytest.mark.parametrize("code", ["total += scores.float()", "acc.add_(hits.sum(0))",
                                  "running_loss -= penalty"])
def test_old_expand_check_on_an_in_place_line_is_a_target_that_cannot_grow(code, kb):
    assert top(traceback_raising(code, TH_SIZES), kb) == "shape.inplace_broadcast"


def test_old_expand_check_on_an_expand_call_is_the_expand(kb):
    paste = traceback_raising("mask = mask.expand(batch, 5)", TH_SIZES)
    assert top(paste, kb) == "shape.expand_size"


def test_an_integer_exp_inside_a_bce_loss_is_integer_predictions(kb):
    paste = ("RuntimeError: _th_exp_out not supported on CUDAType for Long\n\nThe loss is "
             "BCEWithLogitsLoss and both inputs are `[16, 2]` of dtype `Long`.\n")
    assert top(paste, kb) == "dtype.integer_prediction_in_loss"


def test_an_integer_exp_in_the_users_own_formula_is_an_integer_input(kb):
    paste = ("RuntimeError: _th_exp_out not supported on CUDAType for Long\n\n"
             "from the line `h = 1 / (1 + torch.exp(-10 * x))`\n")
    assert top(paste, kb) == "dtype.integer_input"


def test_a_scalar_type_mismatch_cut_before_its_argument_is_the_bce_loss_its_words_name(kb):
    paste = ("Training with nn.BCELoss on sigmoid outputs stops with RuntimeError: Expected "
             "object of scalar type Float but got scalar type Long, the labels are 0/1 ids.\n")
    assert top(paste, kb) == "dtype.bce_integer_target"


def test_the_same_cut_mismatch_outside_a_bce_loss_is_no_bce_error(kb):
    paste = ("Training with nn.MSELoss stops with RuntimeError: Expected object of scalar type "
             "Float but got scalar type Long\n")
    assert top(paste, kb) != "dtype.bce_integer_target"


SOFTMAX_LONG = "RuntimeError: \"softmax_lastdim_kernel_impl\" not implemented for 'Long'"


def test_a_softmax_kernel_refusing_integers_inside_a_loss_is_integer_predictions(kb):
    paste = traceback_raising("loss = criterion(scores.long(), labels)", SOFTMAX_LONG)
    assert top(paste, kb) == "dtype.integer_prediction_in_loss"


def test_a_softmax_kernel_refusing_integers_in_the_users_own_call_is_an_integer_input(kb):
    paste = traceback_raising("probs = lens.softmax(-1)", SOFTMAX_LONG)
    assert top(paste, kb) == "dtype.integer_input"


@pytest.mark.parametrize("message", [
    "RuntimeError: Index tensor must have the same number of dimensions as input tensor",
    "RuntimeError: Index tensor must have the same number of dimensions as self tensor",
])
def test_a_gather_or_scatter_index_of_another_rank_is_the_index_shape_entry(message, kb):
    paste = traceback_raising("q = q_values.gather(1, actions)", message)
    assert top(paste, kb) == "index.gather_index_shape"


def test_torch_16s_refusal_of_integer_division_is_its_own_entry(kb):
    paste = traceback_raising(
        "print(100 * correct / total)",
        "RuntimeError: Integer division of tensors using div or / is no longer supported, and "
        "in a future release div will perform true division as in Python 3. Use true_divide or "
        "floor_divide (// in Python) instead.")
    assert top(paste, kb) == "dtype.integer_tensor_division"


def test_bce_expecting_an_integer_dtype_names_integer_predictions(kb):
    paste = traceback_raising("loss = criterion((out > 0.5).long(), labels)",
                              "RuntimeError: Found dtype Float but expected Long")
    assert top(paste, kb) == "dtype.integer_prediction_in_loss"


def test_a_ragged_nested_list_given_to_torch_tensor_is_non_rectangular_data(kb):
    paste = traceback_raising("ids = torch.tensor(batch_token_ids)",
                              "ValueError: expected sequence of length 12 at dim 1 (got 9)")
    assert top(paste, kb) == "other.non_numeric_data_to_tensor"


def test_torch_six_reached_as_an_attribute_is_the_torch_six_entry(kb):
    paste = traceback_raising("if isinstance(x, torch._six.string_classes):",
                              "AttributeError: module 'torch' has no attribute '_six'")
    assert top(paste, kb) == "other.torch_six_removed"


@pytest.mark.parametrize(("message", "entry"), [
    ("AttributeError: 'numpy.ndarray' object has no attribute 'cuda'", "other.numpy_tensor_mixup"),
    ("AttributeError: 'Tensor' object has no attribute 'astype'", "other.numpy_tensor_mixup"),
    ("AttributeError: 'Tensor' object has no attribute 'mT'", "other.removed_tensor_method"),
])
def test_a_missing_attribute_says_which_api_the_code_was_written_for(message, entry, kb):
    assert top(traceback_raising("x = batch.method()", message), kb) == entry


def test_torch_1x_conv_channels_with_bare_weight_sizes(kb):
    paste = ("RuntimeError: Given groups=1, weight of size 64 1 3 3, expected input[32, 3, 224, "
             "224] to have 1 channels, but got 3 channels instead\n")
    assert top(paste, kb) == "shape.conv_channels"


def test_thrusts_failed_synchronize_is_a_device_side_assert(kb):
    paste = ("neg_inds.unique() fails with transform: failed to synchronize: cudaErrorAssert: "
             "device-side assert triggered\n")
    assert top(paste, kb) == "index.device_side_assert"
