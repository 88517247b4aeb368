"""Which property of the failing value broke, and where it became wrong.

The property is read from what the recording saw at the failing op where it
can be (operands on two devices, two floating dtypes) and from the error's
own words where only the message says it (a saved tensor's versions, which
argument of a loss is out of its range). Each walker returns the fix site and
the facts that argue for it; when no earlier line made the property wrong,
``fix_at`` stays null and the finding keeps pointing at the line that raised.
"""

from __future__ import annotations

import re
from typing import Any

from torchdoctor.provenance.graph import Graph, identity
from torchdoctor.provenance.sites import constant_binding, last_binding, site, step

_VERSION = re.compile(r"is at version (\d+); expected version (\d+)")
_SAVED = re.compile(r"\[torch\.\w+ \[([\d, ]*)\]\], which is output \d+ of (\w+)")
_SHAPE_WORDS = re.compile(r"shape|size|dimension|view|batch_size|cannot be multiplied",
                          re.IGNORECASE)
_VALUE_WORDS = re.compile(r"between|out of bounds|out of range|index|elements of|Target",
                          re.IGNORECASE)
_NONCONTIGUOUS = ("permute", "transpose", "t", "mT", "T", "swapaxes", "swapdims", "movedim",
                  "expand", "narrow", "unfold")
_FLOATS = ("float16", "bfloat16", "float32", "float64")
_DTYPE_WORDS = re.compile(r"dtype|scalar type|expected (?:scalar type )?(?:Float|Double|Long)"
                          r"|Found dtype", re.IGNORECASE)
_DETACHING = ("detach", "detach_")
_FREED = "backward through the graph a second time"
_CHANNELS = re.compile(r"to have (\d+) channels, but got (\d+) channels")
_REBUILDING = ("tensor", "as_tensor", "from_numpy", "Tensor", "FloatTensor")


def trace_back(recording: dict[str, Any], error: dict[str, Any] | None = None
               ) -> dict[str, Any]:
    """``{raised_at, fix_at, property, why, ...}`` for the recording's failure.

    ``error`` (``{type, message}``) defaults to the error the replay raised.
    """
    graph = Graph(recording)
    error = error or recording.get("error") or {}
    message = str(error.get("message") or "")
    failure = graph.failure
    answer: dict[str, Any] = {"raised_at": site(failure), "fix_at": None,
                              "property": None, "why": None}
    if failure is None:
        answer["why"] = ("the replay did not fail" if recording.get("replay") != "none"
                         else "nothing was replayed")
        return answer
    for walker in (_version, _carried_state, _graph_cut, _device, _dtype, _last_batch,
                   _channels, _input_size, _unequal_items, _shape, _value):
        found = walker(graph, failure, message)
        if found is not None:
            answer.update(found)
            break
    else:
        answer["why"] = "no property of the failing op's operands points at an earlier line"
    _to_construction(answer, recording.get("modules") or {})
    if answer["fix_at"] is None and graph.dropped:
        answer["why"] = (f"{answer['why']}; the ring dropped the first {graph.dropped} events,"
                         " so an earlier cause may lie outside it")
    return answer


# ---------------------------------------------------------------- versions (in-place writes)


def _version(graph: Graph, failure: dict, message: str) -> dict | None:
    versions = _VERSION.search(message)
    if versions is None:
        return None
    found, expected = int(versions.group(1)), int(versions.group(2))
    saved = _SAVED.search(message)
    shape = [int(d) for d in saved.group(1).split(",") if d.strip()] if saved else None
    maker = _stem(saved.group(2)) if saved else None
    candidates = [(event, t, before) for event, t, before in graph.writes()
                  if event["seq"] < failure["seq"] and before <= expected < t["version"]
                  and (shape is None or _same_or_transposed(t["shape"], shape))]
    facts: dict[str, Any] = {"property": "version", "version_expected": expected,
                             "version_found": found, "saved_shape": shape}
    if not candidates:
        return {**facts, "why": "no recorded in-place write or optimizer step moved a tensor of"
                " that shape past the saved version"}
    exact = [c for c in candidates if c[2] == expected] or candidates
    made_by_maker = [c for c in exact if maker and _made_by(graph, c[1], c[0]["seq"], maker)]
    event, tensor, before = (made_by_maker or exact)[-1]
    saved_at = graph.users(identity(tensor), expected, event["seq"])
    step_write = event.get("kind") == "optimizer_step"
    facts.update(
        fix_at=site(event),
        write_kind="optimizer_step" if step_write else "inplace_op",
        write_op=event.get("op"),
        written_param=tensor.get("name") if step_write else None,
        saved_at=site(saved_at[-1]) if saved_at else None,
        why=(f"{event.get('op')} wrote the tensor of shape {tensor['shape']} from version"
             f" {before} to {tensor['version']} after it was saved at version {expected}"),
    )
    return facts


def _same_or_transposed(got: list[int], want: list[int]) -> bool:
    return got == want or got == list(reversed(want))


def _stem(node: str) -> str:
    """``SigmoidBackward0`` / ``Sigmoid`` → ``sigmoid``: the forward op that saved the tensor."""
    return re.sub(r"Backward\d*$", "", node).lower()


def _made_by(graph: Graph, tensor: dict, before: int, maker: str) -> bool:
    made = graph.producer(tensor, before)
    if made is None and tensor.get("base") is not None:
        made = graph.producer({"id": tensor["base"]}, before)
    return made is not None and maker in str(made.get("op", "")).lower().replace("_", "")


# ---------------------------------------------------------------- state carried across iterations


def _carried_state(graph: Graph, failure: dict, message: str) -> dict | None:
    """A tensor with history made in the previous iteration and read in this one.

    "Backward through the graph a second time" after one backward per
    iteration: the op that made the tensor ran before the previous backward
    and ran again since (the same op on the same line: a new iteration), so the
    value read now is last iteration's, whose graph that backward freed (an RNN's
    hidden state, a running average fed back). Two losses of one forward differ:
    their shared part was made once, before the first backward, and not again.
    The fix (detach it) is where the loop binds the carried value.
    """
    if _FREED not in message:
        return None
    backwards = [e for e in graph.events if e["seq"] < failure["seq"]
                 and _bare(e) == "backward"]
    if not backwards:
        return None
    previous = backwards[-1]["seq"]
    since = [e for e in graph.events if previous < e["seq"] < failure["seq"]]
    for event in since:
        for t in event.get("inputs") or []:
            if not t.get("grad"):
                continue
            made = graph.producer(t, event["seq"])
            if (made is None or made.get("kind") != "op" or made.get("inplace")
                    or made["seq"] > previous):
                continue
            again = next((e for e in since if e["seq"] <= event["seq"]
                          and (e.get("op"), e.get("file"), e.get("line"))
                          == (made.get("op"), made.get("file"), made.get("line"))), None)
            if again is None:
                continue
            return {
                "property": "carried_state", "carried_shape": t["shape"],
                "made_at": site(made), "read_at": site(event),
                "fix_at": _where_bound(graph.outer_frame, again) or site(again),
                "why": (f"the {t['shape']} tensor {made.get('op')} made in the previous"
                        f" iteration is read again at {_line(event)}; the backward before"
                        " freed its graph, so this backward walks into it"),
            }
    return None


def _bare(event: dict) -> str:
    return str(event.get("op", "")).rsplit(".", 1)[-1]


def _line(event: dict) -> str:
    return f"line {event.get('line')}"


def _where_bound(frame: dict | None, made: dict) -> dict | None:
    """The line of the failure's outermost frame that binds an output of ``made``."""
    if not frame:
        return None
    names = frame.get("names") or {}
    held = {names[str(t["id"])] for t in made.get("outputs") or [] if str(t["id"]) in names}
    line = last_binding(frame["file"], held, frame.get("first_line") or 1, frame["line"])
    return site({"file": frame["file"], "line": line}) if line else None


# ---------------------------------------------------------------- a cut in the graph


def _graph_cut(graph: Graph, failure: dict, message: str) -> dict | None:
    """The op on the loss's data path that left autograd: an integer result of float
    values (``argmax``, a comparison, ``.long()``), a ``detach``, or a tensor rebuilt
    from plain numbers (``torch.tensor(loss.item())``). Ops after it (``.float()``,
    arithmetic) cannot bring the history back."""
    if "does not require grad and does not have a grad_fn" not in message:
        return None
    operands = failure.get("inputs") or []
    if not operands:
        return None
    path = graph.data_path(operands[0], failure["seq"])
    cut = None
    for event in path:
        bare = str(event.get("op", "")).rsplit(".", 1)[-1]
        main = graph.main_input(event)
        out = (event.get("outputs") or [{}])[0]
        if bare in _DETACHING or (main is None and bare in _REBUILDING):
            cut = event
            break
        if main is not None and main.get("dtype") in _FLOATS and out.get("dtype") \
                and out["dtype"] not in _FLOATS:
            cut = event
            break
    if cut is None:
        return None
    return {
        "property": "graph_cut", "cut_by": cut.get("op"), "fix_at": site(cut),
        "chain": [step(e) for e in reversed(path)],
        "why": (f"{cut.get('op')} made a tensor without gradient history (from"
                f" {_dtype_of(graph.main_input(cut))} to"
                f" {(cut.get('outputs') or [{}])[0].get('dtype')}); the loss is computed"
                " from it, so nothing reaches the model's parameters"),
    }


def _dtype_of(tensor: dict | None) -> str:
    return str(tensor.get("dtype")) if tensor else "plain numbers"


# ---------------------------------------------------------------- devices and dtypes


def _device(graph: Graph, failure: dict, message: str) -> dict | None:
    return _odd_one_out(graph, failure, "device", lambda t: t.get("device"), None)


def _dtype(graph: Graph, failure: dict, message: str) -> dict | None:
    floats = _odd_one_out(graph, failure, "dtype",
                          lambda t: t.get("dtype") if t.get("dtype") in _FLOATS else None,
                          "float32")
    if floats is not None or not _DTYPE_WORDS.search(message):
        return floats
    # An op that wants one dtype for all its operands (a float loss given integer labels):
    # the integer operand is the odd one, made where it became integer.
    return _odd_one_out(graph, failure, "dtype", lambda t: t.get("dtype"), "float32")


def _odd_one_out(graph: Graph, failure: dict, prop: str, value_of: Any,
                 usual: str | None) -> dict | None:
    """Operands disagree on a property: the odd operand, and the line that gave it its value.

    The odd value is the one that is not ``usual`` (float32, torch's default);
    without one, the value of the operand that came through the recording (a
    weight has no producer in it, an activation does).
    """
    operands = [t for t in failure.get("inputs") or [] if value_of(t) is not None]
    values = {value_of(t) for t in operands}
    if len(values) < 2:
        return None
    produced = [t for t in operands if graph.producer(t, failure["seq"]) is not None]
    if usual in values:
        odd_value = next(v for v in (value_of(t) for t in operands) if v != usual)
    else:
        odd_value = value_of(produced[0]) if produced else value_of(operands[0])
    odd = next(t for t in operands if value_of(t) == odd_value)
    chain = graph.walk_back(odd, failure["seq"], lambda t: value_of(t) == odd_value)
    made = chain[-1] if chain else None
    described = [{prop: value_of(t), "shape": t["shape"],
                  "produced_at": site(graph.producer(t, failure["seq"]))} for t in operands]
    return {
        "property": prop, "odd_value": odd_value, "operands": described,
        "fix_at": site(made),
        "chain": [step(e) for e in reversed(chain)],
        "why": (f"the operand {odd['shape']} is {odd_value} since {made['op']}"
                if made else f"the operand {odd['shape']} was {odd_value} before the recording"
                " saw it"),
    }


# ---------------------------------------------------------------- shapes


def _shape(graph: Graph, failure: dict, message: str) -> dict | None:
    if not _SHAPE_WORDS.search(message):
        return None
    operands = failure.get("inputs") or []
    op_bare = str(failure.get("op", "")).rsplit(".", 1)[-1]
    if op_bare == "view" and operands and "compatible" in message:
        return _noncontiguous_view(graph, failure, operands[0])
    for operand in operands:
        merged = _batch_merge(graph, failure, operand, operands)
        if merged is not None:
            return merged
    first = operands[0] if operands else None
    if first is not None and graph.producer(first, failure["seq"]) is not None:
        return {"property": "shape", "batch_merged": False, "operand_shape": first["shape"],
                "why": "the operands' leading dimension is the batch the data came with",
                "operands": [{"shape": t["shape"],
                              "produced_at": site(graph.producer(t, failure["seq"]))}
                             for t in operands]}
    return None


def _last_batch(graph: Graph, failure: dict, message: str) -> dict | None:
    """The failing values came from the short last batch of an epoch.

    When a loader's dataset is not a multiple of its batch size and it keeps
    the remainder (``drop_last=False``), the epoch ends with a smaller batch.
    Code that ran on every full batch and fails on that one fails because of
    its size (a ``view(BSIZE, ...)``, BatchNorm given one sample): the fix is
    where the loader was built (``drop_last=True``). The batches before it
    must have run, or nothing shows that full batches pass.
    """
    if not _SHAPE_WORDS.search(message):
        return None
    for operand in failure.get("inputs") or []:
        path = graph.data_path(operand, failure["seq"])
        origin = path[-1] if path else None
        if origin is None or origin.get("kind") != "batch":
            continue
        loader = origin.get("loader") or {}
        size = next((t["shape"][0] for t in origin.get("outputs") or [] if t.get("shape")),
                    None)
        full = loader.get("batch_size")
        last = loader.get("batches") is not None and loader.get("index") == loader["batches"]
        if (size is None or not full or size >= full or not last or loader.get("drop_last")
                or loader["index"] < 2):
            continue
        return {
            "property": "last_batch", "last_batch": True, "batch_size": full,
            "last_batch_size": size, "dataset_len": loader.get("dataset_len"),
            "fix_at": site(loader.get("built_at")), "loaded_at": site(origin),
            "chain": [step(e) for e in reversed(path)],
            "why": (f"the failing values come from the last batch of the epoch, {size} samples"
                    f" where the {loader['index'] - 1} batches before it held {full}: the"
                    f" dataset's {loader.get('dataset_len')} samples are not a multiple of"
                    " the batch size and the loader keeps the remainder (drop_last=False)"),
        }
    return None


def _channels(graph: Graph, failure: dict, message: str) -> dict | None:
    """A convolution given images with another number of channels than it was built for.

    The channel count is the data's: nothing between the reader and the first
    convolution changes it (a permute only moves it). So the walk goes back along
    the input, through the loader's batches into each sample, to where the sample
    tensor was made from data (``from_numpy``, ``torch.tensor``); ``data_source``
    says so, and the patient follows the array further back into the reader, to
    the line where it took the shape it has (``convert('L')``, ``expand_dims``).
    """
    counts = _CHANNELS.search(message)
    operands = failure.get("inputs") or []
    if counts is None or not operands:
        return None
    path = graph.data_path(operands[0], failure["seq"], through_batches=True)
    source = path[-1] if path else None
    if source is None or source.get("kind") != "op" or source.get("inputs"):
        return None
    shape = (source.get("outputs") or [{}])[0].get("shape")
    return {
        "property": "channels", "channels_expected": int(counts.group(1)),
        "channels_got": int(counts.group(2)), "fix_at": site(source),
        "data_source": {**(site(source) or {}), "op": source.get("op"), "shape": shape},
        "chain": [step(e) for e in reversed(path)],
        "why": (f"the images carry {counts.group(2)} channels from where they were made from"
                f" data ({source.get('op')}, {shape}); the network was built for"
                f" {counts.group(1)}"),
    }


def _input_size(graph: Graph, failure: dict, message: str) -> dict | None:
    """Feature maps that no longer line up in their spatial sizes, from an input size
    the network cannot take.

    Operands of one batch that disagree in a dimension past the channels (a skip
    connection one pixel off its upsampled partner: an odd size pooled and
    doubled again) came from one input through the network; their sizes follow
    the size the data was given before it entered the model. That is the latest
    op they share, outside any module, that changed the sample's spatial size (a
    resize, a crop),
    and when that op took its size from a named constant (``size=IMAGE_SIZE``),
    the line that sets the constant.
    """
    if not _SHAPE_WORDS.search(message):
        return None
    operands = [t for t in failure.get("inputs") or [] if len(t.get("shape") or []) >= 3]
    if len(operands) < 2 or len({len(t["shape"]) for t in operands}) != 1:
        return None
    if len({t["shape"][0] for t in operands}) != 1 or len(
            {tuple(t["shape"][2:]) for t in operands}) < 2:
        return None
    paths = [graph.data_path(t, failure["seq"], through_batches=True) for t in operands]
    shared = set.intersection(*({e["seq"] for e in path} for path in paths))
    path = paths[0]
    setter = next((e for e in path if e["seq"] in shared and e.get("module") is None
                   and _resizes(graph, e)), None)
    if setter is None:
        return None
    made = (setter.get("outputs") or [{}])[0].get("shape") or []
    answer = {
        "property": "input_size", "input_shape": made, "size_set_at": site(setter),
        "operands": [{"shape": t["shape"]} for t in operands], "fix_at": site(setter),
        "chain": [step(e) for e in reversed(path) if e["seq"] >= setter["seq"]],
        "why": (f"the operands {', '.join(str(t['shape']) for t in operands)} grew apart"
                f" inside the network from the input size {made[-2:]} set by"
                f" {setter.get('op')}; the network takes only sizes it can pool and"
                " upsample back evenly"),
    }
    constant = constant_binding(setter.get("file"), setter.get("line"), made[-2:])
    if constant is not None:
        answer["fix_at"] = site({"file": setter["file"], "line": constant})
    return answer


def _unequal_items(graph: Graph, failure: dict, message: str) -> dict | None:
    """Tensors joined into one (a collate's ``stack``) that were made with different sizes.

    Each was made on its own (one sample, one label sequence), so the size that
    differs was given where they were made: the line that made the ones whose
    size is not the most common (often the same line for all of them, the
    dataset's ``__getitem__`` building each sample's target).
    """
    if _bare(failure) not in ("stack", "cat") or not _SHAPE_WORDS.search(message):
        return None
    operands = failure.get("inputs") or []
    shapes = [tuple(t.get("shape") or ()) for t in operands]
    if len(operands) < 2 or len(set(shapes)) < 2 or len({len(s) for s in shapes}) != 1:
        return None
    common = max(set(shapes), key=shapes.count)
    odd = [t for t, s in zip(operands, shapes) if s != common]
    made = graph.producer(odd[0], failure["seq"])
    if made is None:
        return None
    return {
        "property": "item_size", "odd_shape": odd[0]["shape"], "common_shape": list(common),
        "fix_at": site(made),
        "operands": [{"shape": t["shape"], "produced_at": site(graph.producer(t, failure["seq"]))}
                     for t in operands],
        "why": (f"{len(odd)} of the {len(operands)} tensors {failure.get('op')} joins were made"
                f" {list(odd[0]['shape'])} where the others are {list(common)}; the size was"
                " given where they were made"),
    }


def _resizes(graph: Graph, event: dict) -> bool:
    """An op that gave a sample new spatial sizes: rank kept, the trailing sizes changed,
    and not by reordering them (a permute moves channels, it sets no size)."""
    main = graph.main_input(event)
    out = (event.get("outputs") or [{}])[0].get("shape")
    if event.get("kind") != "op" or not main or out is None:
        return False
    got = main.get("shape") or []
    return (len(got) == len(out) >= 3 and got[-2:] != out[-2:]
            and sorted(got) != sorted(out))


def _batch_merge(graph: Graph, failure: dict, operand: dict, operands: list[dict]
                 ) -> dict | None:
    """The op that took the batch out of this operand's first dimension, if one did.

    Along the operand's data path, the latest op that changed the leading
    dimension without adding one (a ``view(1, -1)``, ``Flatten(0)``,
    ``argmax(dim=0)``; not the collate ``stack`` that made the batch) merged
    the batch when the leading size it had before is the batch: the size the
    other operands still lead with, or the size the data path started with.
    """
    path = graph.data_path(operand, failure["seq"])
    if not path or not operand["shape"]:
        return None
    others = {t["shape"][0] for t in operands if t is not operand and t["shape"]}
    if operand["shape"][0] in others:
        return None
    started = next((t["shape"][0] for e in reversed(path)
                    for t in (e.get("inputs") or []) + (e.get("outputs") or [])
                    if len(t.get("shape") or []) >= 2), None)
    for event in path:
        main = graph.main_input(event)
        out = (event.get("outputs") or [{}])[0].get("shape")
        if not main or not main.get("shape") or out is None:
            continue
        lead_in, lead_out = main["shape"][0], (out[0] if out else None)
        if lead_in == lead_out or len(out) > len(main["shape"]):
            continue
        if lead_in not in others and lead_in != started:
            return None
        return {
            "property": "batch_dimension", "batch_size": lead_in, "batch_merged": True,
            "operand_shape": operand["shape"], "fix_at": site(event),
            "merged_by": event.get("op"), "chain": [step(e) for e in reversed(path)],
            "why": (f"{event.get('op')} turned {main['shape']} into {out}: the batch of"
                    f" {lead_in} is no longer the first dimension"),
        }
    return None


def _noncontiguous_view(graph: Graph, failure: dict, operand: dict) -> dict:
    path = graph.data_path(operand, failure["seq"])
    reorder = next((e for e in path
                    if str(e.get("op", "")).rsplit(".", 1)[-1] in _NONCONTIGUOUS), None)
    return {
        "property": "contiguity", "operand_shape": operand["shape"],
        "fix_at": site(failure), "made_noncontiguous_at": site(reorder),
        "why": (f"view cannot merge the axes {reorder['op']} reordered; reshape (or"
                " .contiguous() first) can" if reorder else
                "view cannot merge the axes of a non-contiguous tensor; reshape can"),
    }


# ---------------------------------------------------------------- values (loss contracts)


def _value(graph: Graph, failure: dict, message: str) -> dict | None:
    operands = failure.get("inputs") or []
    if not operands or not _VALUE_WORDS.search(message):
        return None
    lowered = message.lower()
    names = ("input", "target")
    blamed = 1 if "target" in lowered and "input" not in lowered.split("target")[0] else 0
    if blamed >= len(operands):
        blamed = 0
    described = []
    for index, t in enumerate(operands[:2]):
        described.append({"argument": names[index], "shape": t["shape"], "dtype": t["dtype"],
                          "stats": t.get("stats") or {},
                          "produced_at": site(graph.producer(t, failure["seq"]))})
    offending = described[blamed]
    return {
        "property": "value", "offending_argument": offending["argument"],
        "operands": described, "fix_at": offending["produced_at"],
        "why": (f"the {offending['argument']} of {failure.get('op')} holds"
                f" {_range(offending['stats'])}; it was made at the fix site"),
    }


def _range(stats: dict) -> str:
    if "min" in stats and "max" in stats:
        return f"values from {stats['min']:.4g} to {stats['max']:.4g}"
    return "values out of the op's contract"


def _to_construction(answer: dict[str, Any], modules: dict[str, Any]) -> None:
    """A torch module that merged the batch (``nn.Flatten(0)``) did only what its
    arguments say: the fix is where it was built; the line that called it is
    ``called_at``."""
    fix = answer.get("fix_at")
    if answer.get("property") != "batch_dimension":
        return  # values, dtypes and devices come from what flowed in, not from arguments
    known = modules.get(fix.get("module")) if fix else None
    if not known or not known.get("torch_builtin") or not (known.get("built_at") or {}).get(
            "file"):
        return
    built = site({**known["built_at"], "module_label": fix["module"]})
    if built is not None and (built["file"], built["line"]) != (fix["file"], fix["line"]):
        answer["called_at"] = fix
        answer["fix_at"] = built
