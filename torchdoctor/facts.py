"""Derived facts: the arithmetic a person would otherwise do by hand.

A knowledge-base entry lists derivations by name in ``derive:``; each takes
fields captured from the error message (strings) and adds new fields for the
templates, plus human-readable sentences. ``derive`` returns both in one
dict: the added fields, and the sentences under the key ``"facts"``.

``DERIVATIONS`` says what each derivation needs and adds, so the knowledge
validator can accept template names that only a derivation produces.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping

from torchdoctor.linear_regex import bounded, compile_linear
from torchdoctor.readings.chance_level import chance_classes, near_ln

# name -> (fields it reads, fields it adds)
DERIVATIONS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "factorize_features": (
        ("features", "in_features"),
        ("factorizations", "features_chw", "in_features_chw", "size_note"),
    ),
    "index_vs_size": (("index", "size"), ("excess", "one_based", "valid_range")),
    "oom_numbers": (
        ("requested", "total", "free", "allocated", "reserved"),
        (
            "requested_bytes",
            "free_bytes",
            "shortfall",
            "reserved_unallocated",
            "fragmentation_hint",
        ),
    ),
    "dtype_pair": (("expected", "found", "a", "b"), ("which_side", "cast_hint")),
    "device_pair": (("device_a", "device_b", "arg"), ("cpu_side", "cuda_side", "move_hint")),
    "log_classes": (
        ("loss", "classes", "accuracy"),
        ("ln_classes", "near_ln_classes", "guessed_classes", "chance_accuracy"),
    ),
}

FACTS_KEY = "facts"


def derive(names: Iterable[str], fields: Mapping[str, object], message: str = "") -> dict:
    """Run the named derivations over ``fields`` (and the raw ``message``, for
    derivations such as OOM that read more numbers than a pattern captures).

    Unknown names and missing inputs are skipped rather than raised: a
    derivation that cannot apply simply adds nothing.
    """
    added: dict = {}
    sentences: list[str] = []
    for name in names:
        function = _FUNCTIONS.get(name)
        if function is None:
            continue
        new_fields, new_sentences = function({**fields, **added}, message)
        added.update(new_fields)
        sentences.extend(s for s in new_sentences if s not in sentences)
    added[FACTS_KEY] = sentences
    return added


_DECIMAL = r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?"


def _number(value: object) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return float(value)
    match = compile_linear(_DECIMAL).search(bounded(str(value).replace(",", "")))
    number = float(match.group()) if match else None
    # Twenty thousand digits read as a float are infinite; no fact is built on that.
    return number if number is not None and math.isfinite(number) else None


def _integer(value: object) -> int | None:
    number = _number(value)
    return int(number) if number is not None and number == int(number) else None


# --- factorize_features -------------------------------------------------------

# How often a channel count is seen right before a flatten; 64 is the classic.
_CHANNEL_PRIOR = {64: 3.0, 32: 2.8, 128: 2.8, 16: 2.5, 256: 2.5, 512: 2.3, 3: 2.0, 1024: 2.0,
                  2048: 2.0, 8: 1.8, 1: 1.5, 6: 1.2, 96: 1.2, 192: 1.2, 384: 1.2, 768: 1.2}


def _channel_prior(channels: int) -> float:
    if channels in _CHANNEL_PRIOR:
        return _CHANNEL_PRIOR[channels]
    return 1.0 if channels & (channels - 1) == 0 else 0.0


def _spatial_prior(height: int, width: int) -> float:
    side = max(height, width)
    return 1.0 if 2 <= side <= 64 else 0.5 if side <= 128 else 0.0


def chw_factorizations(features: int, limit: int = 5) -> list[tuple[int, int, int]]:
    """Plausible (C, H, W) with C·H·W == features, most plausible first.

    Square maps with common channel counts win; non-square maps (aspect ≤ 4)
    are offered only for common channel counts and rank below square ones.
    """
    scored: list[tuple[float, int, tuple[int, int, int]]] = []
    for channels in range(1, min(features, 4096) + 1):
        if features % channels:
            continue
        area = features // channels
        side = math.isqrt(area)
        prior = _channel_prior(channels)
        if side * side == area and side > 1:
            scored.append((prior + _spatial_prior(side, side), channels, (channels, side, side)))
        elif prior >= 1.5:
            for height in range(side, 1, -1):
                if area % height == 0 and area // height <= 4 * height:
                    width = area // height
                    score = prior + _spatial_prior(height, width) - 1.5
                    scored.append((score, channels, (channels, height, width)))
                    break
    scored.sort(key=lambda item: (-item[0], -item[1]))
    return [chw for _, _, chw in scored[:limit]]


def _chw_text(chw: tuple[int, int, int]) -> str:
    return " × ".join(str(part) for part in chw)


def _factorize_features(fields: Mapping, message: str) -> tuple[dict, list[str]]:
    features = _integer(fields.get("features"))
    if not features or features <= 0:
        return {}, []
    options = chw_factorizations(features)
    if not options:
        return {}, []
    in_features = _integer(fields.get("in_features"))
    expected = chw_factorizations(in_features, limit=1) if in_features else []
    added: dict = {}
    sentences: list[str] = []
    if expected:
        same_channels = [chw for chw in options if chw[0] == expected[0][0]]
        if same_channels:
            options.remove(same_channels[0])
            options.insert(0, same_channels[0])
    best = options[0]
    added["factorizations"] = ", ".join(_chw_text(chw) for chw in options[:3])
    added["features_chw"] = _chw_text(best)
    alternatives = " or ".join(_chw_text(chw) for chw in options[1:3])
    sentences.append(
        f"{features} = {_chw_text(best)} (C × H × W)"
        + (f"; also possible: {alternatives}" if alternatives else "")
    )
    if expected and in_features != features:
        want = expected[0]
        added["in_features_chw"] = _chw_text(want)
        if want[0] == best[0]:
            bigger = "larger" if features > in_features else "smaller"
            note = (
                f"expected {_chw_text(want)}: same {want[0]} channels but "
                f"{best[1]} × {best[2]} instead of {want[1]} × {want[2]} spatially — the input "
                f"was {bigger} than the net was designed for"
            )
        else:
            note = (
                f"expected {in_features} = {_chw_text(want)}: the layer before the flatten "
                f"emits a different shape than in_features was computed for"
            )
        added["size_note"] = note
        sentences.append(note)
    return added, sentences


# --- index_vs_size ------------------------------------------------------------


def _index_vs_size(fields: Mapping, message: str) -> tuple[dict, list[str]]:
    index, size = _integer(fields.get("index")), _integer(fields.get("size"))
    if index is None or size is None:
        return {}, []
    valid = f"0..{size - 1}" if size > 0 else "none (the dimension is empty)"
    added = {
        "excess": index - size + 1,
        "one_based": index == size,
        "valid_range": valid,
    }
    if size <= 0:
        sentence = f"index {index} into an empty dimension (size {size}): nothing is valid"
    elif index == size:
        sentence = (
            f"index {index} with size {size}: valid indices are {valid}; an index equal to "
            f"the size usually means labels counted from 1 (one-based) — subtract 1"
        )
    elif index > size:
        sentence = (
            f"index {index} with size {size}: valid indices are {valid}; it is "
            f"{index - size + 1} past the last valid index"
        )
    elif index < -size:
        sentence = f"index {index} with size {size}: negative indices stop at -{size}"
    else:
        sentence = f"index {index} with size {size}: valid indices are {valid}"
    return added, [sentence]


# --- oom_numbers --------------------------------------------------------------

_UNITS = {"b": 1, "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40,
          "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12}
_SIZE = r"(\d{1,15}(?:\.\d{1,15})?)\s*([KMGT]i?B|B)\b"
_OOM_SOURCES = {
    "requested": [rf"Tried to allocate {_SIZE}"],
    "total": [rf"{_SIZE} total capacity", rf"total capacity of {_SIZE}"],
    "free": [rf"{_SIZE} free", rf"of which {_SIZE} is free"],
    "allocated": [rf"{_SIZE} already allocated", rf"{_SIZE} is allocated by PyTorch"],
    "reserved": [rf"{_SIZE} reserved in total by PyTorch"],
    "reserved_unallocated": [rf"{_SIZE} is reserved by PyTorch but unallocated"],
    "in_use": [rf"this process has {_SIZE} memory in use"],
}


def parse_size(text: object) -> int | None:
    """'2.00 GiB' -> bytes; ``None`` when there is no size in ``text``."""
    match = compile_linear(_SIZE, ignore_case=True).search(bounded(str(text)))
    if not match:
        return None
    return int(float(match.group(1)) * _UNITS[match.group(2).lower()])


def human_size(count: float) -> str:
    for unit, factor in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if abs(count) >= factor:
            return f"{count / factor:.2f} {unit}"
    return f"{int(count)} B"


def _oom_numbers(fields: Mapping, message: str) -> tuple[dict, list[str]]:
    sizes: dict[str, int] = {}
    for key, patterns in _OOM_SOURCES.items():
        value = parse_size(fields[key]) if fields.get(key) else None
        for pattern in patterns:
            if value is not None:
                break
            found = compile_linear(pattern, ignore_case=True).search(bounded(message))
            if found:
                value = parse_size(found.group(0))
        if value is not None:
            sizes[key] = value
    if "requested" not in sizes:
        return {}, []
    requested = sizes["requested"]
    added: dict = {"requested_bytes": requested, "fragmentation_hint": False}
    sentences: list[str] = []
    if "free" in sizes:
        free = sizes["free"]
        added["free_bytes"] = free
        shortfall = requested - free
        added["shortfall"] = human_size(max(shortfall, 0))
        if shortfall > 0:
            sentences.append(
                f"asked for {human_size(requested)} with {human_size(free)} free: "
                f"{human_size(shortfall)} short"
            )
        else:
            sentences.append(
                f"asked for {human_size(requested)} while {human_size(free)} was free: "
                f"enough in total but not in one contiguous block"
            )
    else:
        sentences.append(f"asked for {human_size(requested)} more")
    unallocated = sizes.get("reserved_unallocated")
    if unallocated is None and "reserved" in sizes and "allocated" in sizes:
        unallocated = max(sizes["reserved"] - sizes["allocated"], 0)
    if unallocated is not None:
        added["reserved_unallocated"] = human_size(unallocated)
        total = sizes.get("total", 0)
        if unallocated >= requested / 2 or (total and unallocated >= total * 0.05):
            added["fragmentation_hint"] = True
            sentences.append(
                f"PyTorch holds {human_size(unallocated)} reserved but unallocated "
                f"(fragmentation): try PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"
            )
    if "total" in sizes and "allocated" in sizes:
        sentences.append(
            f"PyTorch tensors take {human_size(sizes['allocated'])} of "
            f"{human_size(sizes['total'])} on the device"
        )
    return added, sentences


# --- dtype_pair ---------------------------------------------------------------

_DTYPE_ALIASES = {
    "float": "Float", "float32": "Float", "torch.float32": "Float", "floattensor": "Float",
    "double": "Double", "float64": "Double", "torch.float64": "Double",
    "doubletensor": "Double", "half": "Half", "float16": "Half", "torch.float16": "Half",
    "halftensor": "Half", "bfloat16": "BFloat16", "torch.bfloat16": "BFloat16",
    "long": "Long", "int64": "Long", "torch.int64": "Long", "longtensor": "Long",
    "int": "Int", "int32": "Int", "torch.int32": "Int", "bool": "Bool",
    "byte": "Byte", "uint8": "Byte", "char": "Char",
}


def dtype_name(text: object) -> str:
    """A dtype in the words the messages use ('Float', 'Double', 'Long')."""
    raw = re.sub(r"^(c10::|torch\.cuda\.|torch\.)", "", str(text).strip())
    return _DTYPE_ALIASES.get(raw.lower(), raw)


_CASTS = {"Float": ".float()", "Double": ".double()", "Half": ".half()",
          "BFloat16": ".bfloat16()", "Long": ".long()", "Int": ".int()", "Bool": ".bool()"}


def _dtype_pair(fields: Mapping, message: str) -> tuple[dict, list[str]]:
    if fields.get("expected") and fields.get("found"):
        want, got = dtype_name(fields["expected"]), dtype_name(fields["found"])
        side = f"the op expected {want} but one operand is {got}"
    elif fields.get("a") and fields.get("b"):
        want, got = dtype_name(fields["b"]), dtype_name(fields["a"])
        side = f"the first operand (usually the input) is {got}, the second (weight) is {want}"
    else:
        return {}, []
    cast = _CASTS.get(want, f" cast to {want}")
    added = {"which_side": side, "cast_hint": f"convert the {got} tensor with {cast}"}
    sentences = [f"{side}: convert the {got} tensor with {cast}"]
    pair = {want, got}
    if pair == {"Float", "Double"}:
        sentences.append(
            "Double usually comes from NumPy (float64 by default): torch.from_numpy keeps "
            "float64; call .float() on the data, not .double() on the model"
        )
    elif want == "Long":
        sentences.append("class-index targets must be int64 (Long): use target.long()")
    elif pair & {"Half", "BFloat16"}:
        sentences.append(
            "a Half/BFloat16 operand meets a Float one: compute inside torch.autocast "
            "instead of casting some tensors by hand"
        )
    return added, sentences


# --- device_pair --------------------------------------------------------------


def _is_cuda(text: str) -> bool:
    return "cuda" in text.lower() or "mps" in text.lower()


def _device_pair(fields: Mapping, message: str) -> tuple[dict, list[str]]:
    first = str(fields.get("device_a") or fields.get("input_type") or "")
    second = str(fields.get("device_b") or fields.get("weight_type") or "")
    if not first or not second or _is_cuda(first) == _is_cuda(second):
        return {}, []
    named = fields.get("arg")
    first_name = f"'{named}'" if named else "the first tensor"
    if fields.get("input_type"):
        first_name, second_name = "the input", "the weights (the model)"
    else:
        second_name = "the other tensor(s)"
    cpu_side, cuda_side = (first_name, second_name) if not _is_cuda(first) else (
        second_name, first_name)
    added = {
        "cpu_side": cpu_side,
        "cuda_side": cuda_side,
        "move_hint": f"move {cpu_side} to the device with .to(device)",
    }
    sentence = (f"on the CPU: {cpu_side}; on the GPU: {cuda_side} — "
                f"move {cpu_side} with .to(device)")
    return added, [sentence]


# --- log_classes --------------------------------------------------------------

def _log_classes(fields: Mapping, message: str) -> tuple[dict, list[str]]:
    loss = _number(fields.get("loss"))
    classes = _integer(fields.get("classes"))
    accuracy = _number(fields.get("accuracy"))
    added: dict = {}
    sentences: list[str] = []
    if classes and classes > 1:
        chance = 100.0 / classes
        added["chance_accuracy"] = f"{chance:g}%"
        if accuracy is not None and abs(accuracy - chance) <= max(chance * 0.15, 1.0):
            sentences.append(
                f"accuracy {accuracy:g}% is chance level for {classes} classes (1/{classes}): "
                f"the model predicts no better than a guess"
            )
    if loss is None:
        return added, sentences
    loss_text = str(fields.get("loss")).strip()
    if classes and classes > 1:
        ln_classes = math.log(classes)
        added["ln_classes"] = f"{ln_classes:.3f}"
        added["near_ln_classes"] = near_ln(loss, classes)
        if added["near_ln_classes"]:
            sentences.append(
                f"{loss_text} ≈ ln {classes} = {ln_classes:.3f}: not learning at all — the loss "
                f"of a uniform guess over {classes} classes"
            )
        else:
            sentences.append(
                f"loss {loss_text} vs ln {classes} = {ln_classes:.3f} (a uniform guess): "
                f"{'below' if loss < ln_classes else 'above'} chance level"
            )
        return added, sentences
    guess = chance_classes(loss)
    if guess is not None:
        added.update(guessed_classes=guess, ln_classes=f"{math.log(guess):.3f}",
                     near_ln_classes=True)
        sentences.append(
            f"{loss_text} ≈ ln {guess} = {math.log(guess):.3f}: the loss of a uniform guess "
            f"over {guess} classes — if you have {guess} classes, nothing is being learned"
        )
    return added, sentences


_FUNCTIONS: dict[str, Callable[[Mapping, str], tuple[dict, list[str]]]] = {
    "factorize_features": _factorize_features,
    "index_vs_size": _index_vs_size,
    "oom_numbers": _oom_numbers,
    "dtype_pair": _dtype_pair,
    "device_pair": _device_pair,
    "log_classes": _log_classes,
}
