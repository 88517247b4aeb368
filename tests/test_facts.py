"""Derived facts: the numbers a person would otherwise work out by hand."""

import math

import pytest

from torchdoctor.facts import DERIVATIONS, chw_factorizations, derive, human_size, parse_size


def test_every_derivation_declares_what_it_adds_and_only_adds_that():
    samples = {
        "factorize_features": {"features": "57600", "in_features": "9216"},
        "index_vs_size": {"index": "10", "size": "10"},
        "oom_numbers": {"requested": "2.00 GiB", "free": "1.12 GiB"},
        "dtype_pair": {"expected": "Long", "found": "Float"},
        "device_pair": {"device_a": "cuda:0", "device_b": "cpu"},
        "log_classes": {"loss": "2.30", "classes": "10"},
    }
    assert set(samples) == set(DERIVATIONS)
    for name, fields in samples.items():
        added = derive([name], fields)
        facts = added.pop("facts")
        assert facts, name
        assert set(added) <= set(DERIVATIONS[name][1]), name


def test_57600_factorises_as_the_classic_64_channel_map_first():
    options = chw_factorizations(57600)
    assert options[:3] == [(64, 30, 30), (256, 15, 15), (16, 60, 60)]
    for channels, height, width in options:
        assert channels * height * width == 57600


def test_known_in_features_explains_a_larger_input_with_the_same_channels():
    added = derive(["factorize_features"], {"features": "57600", "in_features": "9216"})
    assert added["features_chw"] == "64 × 30 × 30"
    assert added["in_features_chw"] == "64 × 12 × 12"
    assert "larger than the net was designed for" in added["size_note"]
    assert added["facts"][0].startswith("57600 = 64 × 30 × 30")


def test_smaller_input_says_smaller():
    added = derive(["factorize_features"], {"features": "1024", "in_features": "9216"})
    assert added["features_chw"].startswith("64 ×")
    assert "smaller" in added["size_note"]


def test_prime_feature_count_adds_no_fake_factorisation():
    added = derive(["factorize_features"], {"features": "9973"})
    assert added == {"facts": []}


def test_index_equal_to_size_is_called_one_based():
    added = derive(["index_vs_size"], {"index": "10", "size": "10"})
    assert added["one_based"] is True
    assert added["excess"] == 1
    assert added["valid_range"] == "0..9"
    assert "one-based" in added["facts"][0]


def test_index_far_past_the_end_says_how_far():
    added = derive(["index_vs_size"], {"index": "15", "size": "10"})
    assert added["one_based"] is False
    assert "6 past the last valid index" in added["facts"][0]


OLD_OOM = ("CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 15.78 GiB total capacity; "
           "13.50 GiB already allocated; 1.12 GiB free; 14.00 GiB reserved in total by PyTorch)")
NEW_OOM = ("CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
           "79.15 GiB of which 1.2 GiB is free. Including non-PyTorch memory, this process has "
           "77.9 GiB memory in use. Of the allocated memory 75 GiB is allocated by PyTorch, and "
           "1.5 GiB is reserved by PyTorch but unallocated.")


def test_old_oom_wording_gives_requested_free_and_shortfall():
    added = derive(["oom_numbers"], {}, OLD_OOM)
    assert added["requested_bytes"] == 2 * 2**30
    assert added["free_bytes"] == parse_size("1.12 GiB")
    assert added["shortfall"] == human_size(2 * 2**30 - parse_size("1.12 GiB"))
    assert added["reserved_unallocated"] == "512.00 MiB"
    assert added["fragmentation_hint"] is False


def test_new_oom_wording_points_at_fragmentation():
    added = derive(["oom_numbers"], {}, NEW_OOM)
    assert added["free_bytes"] == parse_size("1.2 GiB")
    assert added["reserved_unallocated"] == "1.50 GiB"
    assert added["fragmentation_hint"] is True
    assert any("expandable_segments" in fact for fact in added["facts"])


def test_captured_oom_fields_win_over_the_message():
    added = derive(["oom_numbers"], {"requested": "20.00 MiB", "free": "2.00 MiB"}, "")
    assert added["requested_bytes"] == 20 * 2**20
    assert added["shortfall"] == "18.00 MiB"


@pytest.mark.parametrize(
    ("fields", "cast", "extra"),
    [
        ({"expected": "Long", "found": "Float"}, ".long()", "int64"),
        ({"a": "double", "b": "float"}, ".float()", "NumPy"),
        ({"a": "c10::Half", "b": "float"}, ".float()", "autocast"),
    ],
)
def test_dtype_pair_names_the_side_and_the_cast(fields, cast, extra):
    added = derive(["dtype_pair"], fields)
    assert cast in added["cast_hint"]
    assert any(extra in fact for fact in added["facts"])


def test_device_pair_says_which_side_is_on_the_cpu():
    added = derive(["device_pair"], {"device_a": "cpu", "device_b": "cuda:0", "arg": "mat1"})
    assert added["cpu_side"] == "'mat1'"
    added = derive(["device_pair"], {"input_type": "torch.cuda.FloatTensor",
                                     "weight_type": "torch.FloatTensor"})
    assert added["cpu_side"] == "the weights (the model)"
    assert added["cuda_side"] == "the input"


def test_same_device_kind_adds_nothing():
    assert derive(["device_pair"], {"device_a": "cuda:0", "device_b": "cuda:1"}) == {"facts": []}


def test_loss_near_ln_classes_means_not_learning():
    added = derive(["log_classes"], {"loss": "2.30", "classes": "10"})
    assert added["near_ln_classes"] is True
    assert added["ln_classes"] == f"{math.log(10):.3f}"
    assert "not learning at all" in added["facts"][0]
    assert added["facts"][0].startswith("2.30 ≈ ln 10")


@pytest.mark.parametrize(("loss", "classes"), [("0.69", 2), ("4.61", 100), ("6.9", 1000)])
def test_loss_alone_guesses_the_class_count(loss, classes):
    added = derive(["log_classes"], {"loss": loss})
    assert added["guessed_classes"] == classes


def test_learning_loss_is_not_called_stuck():
    added = derive(["log_classes"], {"loss": "0.41", "classes": "10"})
    assert added["near_ln_classes"] is False
    assert "below chance" in added["facts"][0]


def test_chance_accuracy():
    added = derive(["log_classes"], {"accuracy": "10", "classes": "10"})
    assert added["chance_accuracy"] == "10%"
    assert "chance level" in added["facts"][0]


def test_unknown_derivations_and_missing_inputs_are_skipped():
    assert derive(["no_such_thing", "index_vs_size"], {"index": "x"}) == {"facts": []}


@pytest.mark.parametrize(("loss", "classes"), [("10.82", 50257), ("1.386", 4), ("10.37", 32000)])
def test_facts_and_prose_readings_know_the_same_class_counts(loss, classes):
    from torchdoctor.symptoms import readings

    assert derive(["log_classes"], {"loss": loss})["guessed_classes"] == classes
    assert f"a uniform guess over {classes} classes" in " ".join(
        readings(f"loss: {loss}\nloss: {loss}\nloss: {loss}"))


def test_a_loss_a_tenth_off_ln_c_is_not_called_a_guess_by_either():
    from torchdoctor.symptoms import readings

    assert "guessed_classes" not in derive(["log_classes"], {"loss": "2.25"})
    assert not any("uniform guess" in r for r in readings("loss: 2.25\nloss: 2.25\nloss: 2.25"))

