"""The matcher: tiers, fields, facts, rendered hypotheses, prose, determinism.

These tests build a small knowledge base in code so that the ranking rules
are tested on their own; tests/test_kb_examples.py tests the shipped one
against real torch errors.
"""

import json
import re
import textwrap
from pathlib import Path

import pytest

from torchdoctor.knowledge import Entry, Fix, Hypothesis, KnowledgeBase, Pattern
from torchdoctor.match import (
    CONFIDENT,
    CONTESTED_PENALTY,
    OP_BONUS,
    TIER_MESSAGE,
    TIER_REGEX,
    TIER_SYMPTOM,
    TIER_TYPE_AND_REGEX,
    diagnose,
    fill,
    required_literal,
)

EXAMPLES = Path(__file__).parent / "fixtures" / "examples"
# The op a hand-written product raises in, as knowledge/shape.yaml binds shape.matmul_inner_dim.
MATMUL_INSIDE = r"\b(?:matmul|mm)\b|[\w)\]]\s*@\s*[\w(]"
LINEAR_REGEX = (r"mat1 and mat2 shapes cannot be multiplied \((?P<batch>\d+)x(?P<features>\d+)"
                r" and (?P<in_features>\d+)x(?P<out_features>\d+)\)")


def entry(id_, patterns=(), symptoms=(), messages=(), derive=(), hypotheses=None):
    category = id_.split(".")[0]
    return Entry(
        id=id_, title=f"title of {id_}", category=category,
        patterns=[Pattern(regex=r, type=t) for t, r in patterns],
        symptoms=[Pattern(regex=s, ignore_case=True) for s in symptoms],
        messages=list(messages), derive=list(derive),
        hypotheses=hypotheses or [Hypothesis(id="h", statement=f"statement of {id_}")],
    )


LINEAR = entry(
    "shape.linear_in_features",
    patterns=[("RuntimeError", LINEAR_REGEX)],
    derive=["factorize_features"],
    hypotheses=[
        Hypothesis(
            id="flatten_size",
            statement="The layer before this Linear emits {features} features, built for "
                      "{in_features}; {{literal}} {nowhere}",
            predicts="{features} = {features_chw}",
            probe="trace", params={"backward": False},
            fix=Fix(summary="Set in_features to {features}",
                    before="nn.Linear({in_features}, {out_features})",
                    after="nn.Linear({features}, {out_features})"),
        ),
        Hypothesis(id="lazy", statement="Use LazyLinear"),
    ],
)
MATMUL_ANY = entry("shape.matmul_generic", patterns=[(None, r"shapes cannot be multiplied")])
STUCK = entry(
    "training.loss_constant",
    symptoms=[r"loss (stays|stuck|is constant|doesn't (go )?down)", r"\bclasses\b"],
    derive=["log_classes"],
    hypotheses=[Hypothesis(id="no_step", statement="loss {loss} vs ln {classes} = {ln_classes}")],
)
MEMORY = entry("memory.growth", symptoms=[r"memory (keeps )?grow"])


def kb(*entries):
    return KnowledgeBase(list(entries))


LINEAR_TRACEBACK = (EXAMPLES / "linear_mismatch.txt").read_text()


def test_real_linear_traceback_ranks_the_linear_entry_first_with_facts_and_filled_hypotheses():
    diagnosis = diagnose(LINEAR_TRACEBACK, kb(MATMUL_ANY, LINEAR, STUCK))
    assert diagnosis.input == "traceback"
    assert [m.entry.id for m in diagnosis.matches] == ["shape.linear_in_features",
                                                      "shape.matmul_generic"]
    best = diagnosis.matches[0]
    assert best.fields["features"] == "57600" and best.fields["in_features"] == "9216"
    assert best.fields["features_chw"] == "64 × 30 × 30"
    assert best.facts[0].startswith("57600 = 64 × 30 × 30")
    assert any("larger than the net was designed for" in fact for fact in best.facts)
    hypothesis = best.hypotheses[0]
    # The clause quoting a field no pattern captured is left out of the sentence.
    assert hypothesis["statement"] == ("The layer before this Linear emits 57600 features, "
                                       "built for 9216.")
    assert hypothesis["predicts"] == "57600 = 64 × 30 × 30"
    assert hypothesis["probe"] == {"name": "trace", "params": {"backward": False}}
    assert hypothesis["fix"]["after"] == "nn.Linear(57600, 128)"
    assert best.hypotheses[1]["probe"] is None and best.hypotheses[1]["fix"] is None
    assert "exception type RuntimeError agrees" in best.reason


def test_tiers_type_and_regex_then_regex_then_message_wording():
    typed = entry("other.typed", patterns=[("ValueError", r"the widget (?P<n>\d+) broke")])
    untyped = entry("other.untyped", patterns=[("KeyError", r"widget \d+ broke")])
    worded = entry("other.worded", patterns=[(None, r"never matches this")],
                   messages=["the widget 3 broke in /old/path/file.py"])
    text = "Traceback (most recent call last):\n  File \"a.py\", line 1, in <module>\n" \
           "ValueError: the widget 7 broke\n"
    matches = diagnose(text, kb(worded, untyped, typed)).matches
    assert [m.entry.id for m in matches] == ["other.typed", "other.untyped"]
    alone = [diagnose(text, kb(one)).matches[0].score for one in (typed, untyped)]
    assert TIER_TYPE_AND_REGEX <= alone[0] < TIER_TYPE_AND_REGEX + 1
    assert TIER_REGEX <= alone[1] < TIER_REGEX + 1
    # Two entries matching one paste each lose the same penalty: the order stays.
    assert [m.score for m in matches] == [round(a - CONTESTED_PENALTY, 4) for a in alone]
    only_wording = diagnose(text, kb(worded)).matches
    assert [m.entry.id for m in only_wording] == ["other.worded"]
    assert TIER_MESSAGE <= only_wording[0].score < TIER_MESSAGE + 1


def test_ties_go_to_the_more_specific_pattern_then_to_the_id():
    short = entry("other.b_short", patterns=[(None, r"boom")])
    long_ = entry("other.c_long", patterns=[(None, r"big boom (?P<n>\d+)")])
    twin = entry("other.a_twin", patterns=[(None, r"boom")])
    text = "RuntimeError: big boom 3"
    ids = [m.entry.id for m in diagnose(text, kb(short, long_, twin)).matches]
    assert ids == ["other.c_long", "other.a_twin", "other.b_short"]


def test_a_match_on_another_chain_link_ranks_below_one_on_the_root_cause():
    cause = entry("other.cause", patterns=[("KeyError", r"'missing_key'")])
    root = entry("other.root", patterns=[("RuntimeError", r"loading failed: (?P<why>\w+)")])
    text = textwrap.dedent("""\
        Traceback (most recent call last):
          File "load.py", line 3, in <module>
            d["missing_key"]
        KeyError: 'missing_key'

        The above exception was the direct cause of the following exception:

        Traceback (most recent call last):
          File "load.py", line 5, in <module>
            raise RuntimeError("loading failed: badly") from e
        RuntimeError: loading failed: badly
        """)
    matches = diagnose(text, kb(cause, root)).matches
    assert [m.entry.id for m in matches] == ["other.cause", "other.root"]
    assert "another link" in matches[1].reason
    assert matches[1].score < matches[0].score


def test_prose_symptom_reads_numbers_and_says_not_learning():
    diagnosis = diagnose("my loss stays at 2.30 with 10 classes", kb(LINEAR, STUCK, MEMORY))
    assert diagnosis.input == "symptom"
    assert [m.entry.id for m in diagnosis.matches if m.kind == "match"] == ["training.loss_constant"]
    best = diagnosis.matches[0]
    assert TIER_SYMPTOM <= best.score < TIER_MESSAGE
    assert best.fields["loss"] == "2.30" and best.fields["classes"] == "10"
    assert "not learning at all" in best.facts[0]
    assert best.hypotheses[0]["statement"] == "loss 2.30 vs ln 10 = 2.303"
    assert best.reason == "2 of 2 symptom phrases matched"


def test_prose_symptom_ranks_by_how_many_phrases_match():
    half = entry("training.half", symptoms=[r"loss", r"never seen phrase"])
    both = entry("training.both", symptoms=[r"loss", r"stuck"])
    ids = [m.entry.id for m in diagnose("the loss is stuck", kb(half, both)).matches]
    assert ids == ["training.both", "training.half"]


def test_nothing_matches_gives_no_matches():
    diagnosis = diagnose("ValueError: something nobody has seen", kb(LINEAR, STUCK))
    assert diagnosis.matches == []
    assert diagnosis.to_dict()["matches"] == []


def test_to_dict_has_the_documented_shape_and_is_json():
    shape = diagnose(LINEAR_TRACEBACK, kb(LINEAR)).to_dict()
    json.dumps(shape)
    assert shape["input"] == "traceback"
    assert {"type", "message", "phase", "user_frame"} <= set(shape["error"])
    assert shape["error"]["type"] == "RuntimeError"
    assert shape["error"]["phase"] == "forward"
    assert shape["error"]["user_frame"]["line"] == 19
    match = shape["matches"][0]
    assert {"entry", "category", "title", "score", "fields", "facts", "hypotheses"} <= set(match)
    assert {"id", "statement", "probe", "fix"} <= set(match["hypotheses"][0])
    assert match["category"] == "shape"


def test_symptom_to_dict_keeps_the_error_keys():
    shape = diagnose("GPU memory keeps growing", kb(MEMORY)).to_dict()
    assert shape["input"] == "symptom"
    assert shape["error"]["type"] is None and shape["error"]["user_frame"] is None
    assert shape["matches"][0]["entry"] == "memory.growth"


def test_diagnosis_is_deterministic():
    entries = kb(MATMUL_ANY, LINEAR, STUCK, MEMORY)
    first = json.dumps(diagnose(LINEAR_TRACEBACK, entries).to_dict(), sort_keys=True)
    assert json.dumps(diagnose(LINEAR_TRACEBACK, entries).to_dict(), sort_keys=True) == first


def test_message_only_paste_still_matches():
    text = "RuntimeError: mat1 and mat2 shapes cannot be multiplied (32x4096 and 1024x10)"
    best = diagnose(text, kb(LINEAR)).matches[0]
    assert best.entry.id == "shape.linear_in_features"
    assert best.fields["features"] == "4096"


@pytest.mark.parametrize(
    ("regex", "literal"),
    [
        (LINEAR_REGEX, "mat1 and mat2 shapes cannot be multiplied ("),
        (r"size mismatch, m1: \[(?P<a>\d+) x", "size mismatch, m1: ["),
        (r"(?:foo|barbaz) qux", " qux"),
        (r"a+bcdef?", "bcde"),
        (r"(?i)CUDA out of memory", "cuda out of memory"),
        (r"(\d+)?", ""),
        (r"[", ""),
    ],
)
def test_required_literal(regex, literal):
    assert required_literal(regex) == literal


@pytest.mark.parametrize(
    ("regex", "texts"),
    [
        (r"Expected (all )?tensors? to be on the same device",
         ["Expected tensors to be on the same device"]),
        (r"index (?P<index>-?\d+) is out of bounds", ["index -3 is out of bounds"]),
        (r"(?:Half|BFloat16) and Float", ["BFloat16 and Float"]),
    ],
)
def test_the_prefilter_literal_is_in_every_text_the_regex_matches(regex, texts):
    literal = required_literal(regex)
    for text in texts:
        assert re.search(regex, text)
        assert literal in text.lower()


def test_fill_templates():
    assert fill("{a} and {{b}} and {c}", {"a": 1, "c": True}) == "1 and {b} and yes"
    assert fill("{missing}", {}) == "?"
    assert fill(None, {}) == ""


def test_an_unknown_error_is_read_for_symptoms_in_its_message_only():
    nan = entry("numerics.nan_loss", symptoms=[r"\bnan\b"])
    text = ("Traceback (most recent call last):\n  File \"train.py\", line 9, in <module>\n"
            "    loss_is_nan = check(loss)\nValueError: the loss became NaN at step 12\n")
    best = diagnose(text, kb(nan)).matches[0]
    assert best.entry.id == "numerics.nan_loss"
    assert best.fields["step"] == "12"
    quiet = text.replace("the loss became NaN at step 12", "bad value")
    assert diagnose(quiet, kb(nan)).matches == []


STACK = r"stack expects each tensor to be equal size, but got \[(?P<a>[\d, ]*)\] at entry"
COLLATE_TRACEBACK = textwrap.dedent("""\
    Traceback (most recent call last):
      File "/home/me/train.py", line 30, in <module>
        for images, labels in loader:
      File "/usr/lib/python3.11/site-packages/torch/utils/data/dataloader.py", line 733, in __next__
        data = self._next_data()
      File "/usr/lib/python3.11/site-packages/torch/utils/data/_utils/collate.py", line 211, in collate_tensor_fn
        return torch.stack(batch, 0, out=out)
    RuntimeError: stack expects each tensor to be equal size, but got [3, 32, 32] at entry 0 and [3, 28, 28] at entry 5
    """)
PLAIN_STACK_TRACEBACK = textwrap.dedent("""\
    Traceback (most recent call last):
      File "/home/me/model.py", line 12, in <module>
        torch.stack(sentences)
    RuntimeError: stack expects each tensor to be equal size, but got [3] at entry 0 and [4] at entry 1
    """)


def test_phase_bound_categories_win_only_in_their_phase():
    collate = entry("dataloader.collate", patterns=[("RuntimeError", STACK)])
    stack = entry("shape.stack", patterns=[("RuntimeError", STACK)])
    entries = kb(collate, stack)
    in_loader = diagnose(COLLATE_TRACEBACK, entries)
    assert in_loader.error.phase == "data_loading"
    assert [m.entry.id for m in in_loader.matches] == ["dataloader.collate", "shape.stack"]
    outside = diagnose(PLAIN_STACK_TRACEBACK, entries).matches
    assert [m.entry.id for m in outside] == ["shape.stack", "dataloader.collate"]
    assert "not in the data loading phase" in outside[1].reason


# Pastes without frames: only the code they show tells where the sizes met.
SHOWN_USER_STACK = textwrap.dedent("""\
    After I changed the encoder this line fails:

        merged = torch.stack(per_layer, dim=1)
    RuntimeError: stack expects each tensor to be equal size, but got [64, 512] at entry 0 and [64, 1024] at entry 2
    """)
INLINE_USER_STACK = ("Calling `batch = torch.stack(crops)` on my list of crops ends with "
                     "RuntimeError: stack expects each tensor to be equal size, but got "
                     "[3, 160, 160] at entry 0 and [3, 150, 160] at entry 1")
IPYTHON_COLLATE = textwrap.dedent("""\
    /opt/conda/lib/python3.8/site-packages/torch/utils/data/_utils/collate.py in default_collate(batch)
         54             out = elem.new(storage)
    ---> 55         return torch.stack(batch, 0, out=out)

    RuntimeError: stack expects each tensor to be equal size, but got [3, 500, 375] at entry 0 and [3, 333, 500] at entry 1
    """)


@pytest.mark.parametrize("paste", [SHOWN_USER_STACK, INLINE_USER_STACK])
def test_a_stack_the_paste_shows_in_user_code_is_not_a_collate_error(paste):
    collate = entry("dataloader.collate", patterns=[("RuntimeError", STACK)])
    stack = entry("shape.stack", patterns=[("RuntimeError", STACK)])
    found = diagnose(paste, kb(collate, stack)).matches
    assert [m.entry.id for m in found] == ["shape.stack", "dataloader.collate"]
    assert "outside data loading" in found[1].reason
    assert found[0].score - found[1].score == pytest.approx(2 * OP_BONUS)


def test_frames_the_parser_cannot_read_still_show_the_data_loader():
    collate = entry("dataloader.collate", patterns=[("RuntimeError", STACK)])
    stack = entry("shape.stack", patterns=[("RuntimeError", STACK)])
    found = diagnose(IPYTHON_COLLATE, kb(collate, stack)).matches
    assert [m.entry.id for m in found] == ["dataloader.collate", "shape.stack"]


def test_literals_are_remembered_between_processes_and_a_broken_cache_is_ignored(
        tmp_path, monkeypatch):
    from torchdoctor.match import MatchIndex

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    first = MatchIndex([LINEAR]).patterns[0]
    cache = tmp_path / "torchdoctor" / "match-literals-v1.json"
    assert json.loads(cache.read_text())[LINEAR_REGEX][0] == first.literal
    cache.write_text("{not json")
    again = MatchIndex([LINEAR]).patterns[0]
    assert (again.literal, again.specificity) == (first.literal, first.specificity)
    assert diagnose(LINEAR_TRACEBACK, kb(LINEAR)).matches[0].fields["features"] == "57600"


def test_cuda_kernel_assertion_outranks_the_generic_device_side_assert():
    from torchdoctor.knowledge import load_knowledge
    from torchdoctor.match import diagnose as diagnose_text

    paste = (Path(__file__).parent / "fixtures" / "examples" / "cuda_nll_assert.txt").read_text()
    ranked = [m.entry.id for m in diagnose_text(paste, load_knowledge()).matches]
    assert ranked[:2] == ["index.nll_target_assert", "index.device_side_assert"]


OLD_CAT = ("RuntimeError: invalid argument 0: Sizes of tensors must match except in dimension 0."
           " Got 3 and 4 in dimension 1 at /pytorch/aten/src/TH/generic/THTensor.cpp:612\n")


@pytest.mark.parametrize("frames, first", [
    # the user's own stack: torch < 1.5 stacked by concatenating, with cat's message
    ('  File "batch.py", line 12, in embed\n    feats = torch.stack(per_face)\n',
     "shape.stack_sizes"),
    ('  File "batch.py", line 12, in embed\n    feats = torch.cat(per_face)\n',
     "shape.cat_sizes"),
    (('  File "train.py", line 40, in main\n    for images, labels in loader:\n'
     '  File "/usr/lib/python3.6/site-packages/torch/utils/data/dataloader.py", line 138, in'
     ' _worker_loop\n    samples = collate_fn([dataset[i] for i in batch_indices])\n'
     '  File "/usr/lib/python3.6/site-packages/torch/utils/data/dataloader.py", line 209, in'
     ' default_collate\n    return torch.stack(batch, 0, out=out)\n'),
     "dataloader.collate_stack_size"),
])
def test_old_torchs_cat_message_is_told_apart_by_the_op_that_raised_it(frames, first):
    from torchdoctor.knowledge import load_knowledge
    from torchdoctor.match import diagnose as diagnose_text

    paste = "Traceback (most recent call last):\n" + frames + OLD_CAT
    assert diagnose_text(paste, load_knowledge()).matches[0].entry.id == first


def test_torch_03s_inconsistent_sizes_is_a_collate_error_only_under_default_collate():
    from torchdoctor.knowledge import load_knowledge
    from torchdoctor.match import diagnose as diagnose_text

    message = ("RuntimeError: inconsistent tensor sizes at "
               "/pytorch/torch/lib/TH/generic/THTensorMath.c:2709\n")
    collate = ("Traceback (most recent call last):\n"
               '  File "train.py", line 113, in train\n    for i, data in enumerate(loader):\n'
               '  File "/usr/lib/python2.7/site-packages/torch/utils/data/dataloader.py", line 109,'
               " in default_collate\n    return torch.stack(batch, 0, out=out)\n") + message
    kb_ = load_knowledge()
    assert diagnose_text(collate, kb_).matches[0].entry.id == "dataloader.collate_stack_size"
    assert [m.entry.id for m in diagnose_text(message, kb_).matches] == ["shape.cat_sizes"]


WARNED = ("model.py:12: UserWarning: Using a target size (torch.Size([66])) that is different"
          " to the input size (torch.Size([66, 3])). This will likely lead to incorrect"
          " results due to broadcasting.\n  loss = F.mse_loss(out, y)\n")


def test_a_torch_warning_names_the_cause_of_an_error_of_another_kind_nothing_recognises():
    target = entry("shape.loss_target", patterns=[("UserWarning", r"Using a target size")])
    pasted = WARNED + "ValueError: Found input variables with inconsistent numbers of samples\n"
    [found] = diagnose(pasted, kb(target)).matches
    assert found.entry.id == "shape.loss_target"
    assert found.score < TIER_REGEX  # read from a warning, not the error: worded as a guess
    # An unknown RuntimeError is most likely torch's own: its words, not the warning.
    unknown = WARNED + "RuntimeError: some wording the entries lack\n"
    assert diagnose(unknown, kb(target)).matches == []


def test_prose_leaves_out_the_parts_that_quote_unknown_numbers():
    from torchdoctor.match import fill, fill_prose

    template = ("The loss ({loss}) stays because step() is never called; with {classes}"
                " classes ln C is {ln_classes}, a uniform guess.")
    assert fill_prose(template, {}) == "The loss stays because step() is never called."
    assert fill_prose(template, {"loss": 2.3, "classes": 10, "ln_classes": 2.303}) == (
        "The loss (2.3) stays because step() is never called; with 10 classes ln C is 2.303,"
        " a uniform guess.")
    assert fill_prose("sized for {a} along dimension {b}", {}) == "sized for ? along dimension ?"
    # A parenthesis keeps the parts that quote a known number.
    template = "The batch is elsewhere (model on {a}, batch on {b}; argument {c}): move it."
    assert fill_prose(template, {"a": "cuda:0", "b": "cpu"}) == (
        "The batch is elsewhere (model on cuda:0, batch on cpu): move it.")
    assert fill_prose(template, {}) == "The batch is elsewhere: move it."
    assert fill("x = {a}", {}) == "x = ?"  # code is never rewritten


# --- confidence, similar entries, other libraries -------------------------------------

COLLATE = entry("dataloader.collate_sizes",
                patterns=[("RuntimeError", r"stack expects each tensor to be equal size")])
CHECKPOINT = entry("state_dict.missing_keys",
                   patterns=[("RuntimeError", r"Error\(s\) in loading state_dict for \w+")])
NAN = entry("numerics.nan_loss", symptoms=[r"loss (is|becomes) nan"])


def test_an_uncontested_typed_match_is_confident_and_a_contested_one_a_guess():
    text = "RuntimeError: mat1 and mat2 shapes cannot be multiplied (32x4096 and 1024x10)"
    alone = diagnose(text, kb(LINEAR)).matches[0]
    assert alone.confident and alone.score >= CONFIDENT
    contested = diagnose(text, kb(LINEAR, MATMUL_ANY)).matches[0]
    assert contested.entry.id == "shape.linear_in_features"
    assert not contested.confident and "other entries matched too" in contested.reason
    assert diagnose(text, kb(LINEAR)).to_dict()["matches"][0]["confident"] is True


def test_an_unrecognised_error_gets_similar_entries_below_every_tier_and_a_question():
    text = ("Traceback (most recent call last):\n  File \"train.py\", line 9, in <module>\n"
            "    model.load_state_dict(torch.load(path))\n"
            "KeyError: 'state_dict' missing while loading the checkpoint\n")
    diagnosis = diagnose(text, kb(LINEAR, COLLATE, CHECKPOINT, NAN))
    assert diagnosis.matches == [] and diagnosis.kind == "similar"
    assert diagnosis.similar[0].entry.id == "state_dict.missing_keys"
    assert all(m.kind == "similar" and m.score < TIER_SYMPTOM and not m.confident
               for m in diagnosis.similar)
    assert len(diagnosis.similar) <= 3
    shape = diagnosis.to_dict()
    assert shape["kind"] == "similar" and shape["matches"] == []
    assert shape["similar"][0]["kind"] == "similar"


def test_the_question_names_the_places_when_categories_differ_and_the_entries_otherwise():
    from torchdoctor.similar import telling_question

    assert telling_question([CHECKPOINT, LINEAR]) == (
        "Did this happen while saving or loading a checkpoint or in the forward pass, "
        "where two shapes meet?")
    assert telling_question([LINEAR, MATMUL_ANY]) == (
        "Which describes it: title of shape.linear_in_features or "
        "title of shape.matmul_generic?")
    assert telling_question([LINEAR]) is None


def test_text_with_no_error_and_no_symptom_is_the_only_dead_end():
    diagnosis = diagnose("the weather is lovely today", kb(LINEAR, COLLATE, CHECKPOINT, NAN))
    assert (diagnosis.kind, diagnosis.matches, diagnosis.similar) == ("nothing", [], [])
    assert diagnosis.to_dict()["question"] is None


PIL_ERROR = """Traceback (most recent call last):
  File "train.py", line 12, in <module>
    img = Image.open(path)
  File "/usr/lib/python3.10/site-packages/PIL/Image.py", line 3186, in open
    raise UnidentifiedImageError(
PIL.UnidentifiedImageError: cannot identify image file 'data/x.jpg'
"""
DATASET_PATH = """Traceback (most recent call last):
  File "train.py", line 40, in <module>
    for x, y in loader:
  File "/home/me/data.py", line 22, in __getitem__
    img = open(self.root + name, "rb")
FileNotFoundError: [Errno 2] No such file or directory: 'imagesfoo_1.png'
"""
TOKENIZER = """Traceback (most recent call last):
  File "prep.py", line 3, in <module>
    tok = AutoTokenizer.from_pretrained("./ckpt")
  File "/venv/lib/python3.11/site-packages/transformers/tokenization_utils_base.py", line 2010, in from_pretrained
    raise EnvironmentError(
OSError: Can't load tokenizer for './ckpt'.
"""


@pytest.mark.parametrize("text, library, function", [
    (PIL_ERROR, "PIL", "open"),
    (DATASET_PATH, "the filesystem", "__getitem__"),
    (TOKENIZER, "transformers", "from_pretrained"),
    ("ModuleNotFoundError: No module named 'cv2'", "cv2", None),
])
def test_an_error_from_another_library_is_named_with_the_frame_that_raised_it(
        text, library, function):
    origin = diagnose(text, kb(LINEAR)).to_dict()["raised_by"]
    assert origin["library"] == library
    assert (origin["frame"] or {}).get("function") == function


def test_torchs_own_errors_are_not_put_on_another_library():
    assert diagnose(LINEAR_TRACEBACK, kb(LINEAR)).raised_by is None
    assert diagnose("ModuleNotFoundError: No module named 'torch._C'", kb(LINEAR)).raised_by is None


def test_one_alternation_regex_scores_as_its_phrases_not_a_full_share_on_any_hit():
    packed = entry("training.packed", symptoms=[
        r"\bnan\b.{0,20}\bat step\b|\bloss\b.{0,20}\bexplod\w*"])
    separate = entry("numerics.separate", symptoms=[
        r"\bloss\b.{0,20}\bnan\b", r"\bnan\b.{0,20}\bat step\b", r"\bloss\b.{0,20}\binf\b"])
    ranked = diagnose("the loss is nan at step 0", kb(packed, separate)).matches
    assert [m.entry.id for m in ranked] == ["numerics.separate", "training.packed"]
    assert "1 of 2 symptom phrases" in ranked[1].reason


def test_siblings_with_one_wording_are_told_apart_by_the_op_the_raising_line_calls():
    bmm = Entry(id="shape.bmm_operands", title="torch.bmm with incompatible operands",
                category="shape", patterns=[Pattern(regex=LINEAR_REGEX, type="RuntimeError")],
                hypotheses=[Hypothesis(id="h", statement="s")])
    linear = entry("shape.linear_in_features", patterns=[("RuntimeError", LINEAR_REGEX)])

    def raised_by(code):
        return ('Traceback (most recent call last):\n  File "attn.py", line 9, in score\n'
                f"    {code}\nRuntimeError: mat1 and mat2 shapes cannot be multiplied "
                "(4x8 and 16x2)\n")

    called = {m.entry.id: m.score for m in
              diagnose(raised_by("w = torch.bmm(q, k)"), kb(linear, bmm)).matches}
    assert called["shape.bmm_operands"] == pytest.approx(
        called["shape.linear_in_features"] + OP_BONUS)
    module = {m.entry.id: m.score for m in
              diagnose(raised_by("w = self.proj(q)"), kb(linear, bmm)).matches}
    assert module["shape.bmm_operands"] == module["shape.linear_in_features"]


DIM_RANGE = r"Dimension out of range \(expected to be in range of \[-1, 0\], but got 1\)"
LOSS_FRAMES = """\
Traceback (most recent call last):
  File "fit.py", line 145, in evaluate
    batch_loss = loss_fn(batch_output, labels)
  File "/usr/lib/python3.8/site-packages/torch/nn/modules/loss.py", line 948, in forward
    ignore_index=self.ignore_index, reduction=self.reduction)
  File "/usr/lib/python3.8/site-packages/torch/nn/functional.py", line 2422, in cross_entropy
    return nll_loss(log_softmax(input, 1), target, weight, None, ignore_index, None, reduction)
  File "/usr/lib/python3.8/site-packages/torch/nn/functional.py", line 1591, in log_softmax
    ret = input.log_softmax(dim)
IndexError: Dimension out of range (expected to be in range of [-1, 0], but got 1)
"""
SOFTMAX_FRAMES = """\
Traceback (most recent call last):
  File "predict.py", line 30, in main
    loss = torch.softmax(scores, dim=1)
IndexError: Dimension out of range (expected to be in range of [-1, 0], but got 1)
"""


def _dimension_siblings():
    generic = entry("shape.dim_out_of_range", patterns=[("IndexError", DIM_RANGE)])
    loss = entry("shape.loss_rank", patterns=[("IndexError", DIM_RANGE)])
    loss.patterns[0].inside = r"cross[ _-]?entropy|nll_?loss|\bcriterion\b"
    return kb(generic, loss)


@pytest.mark.parametrize("paste", [
    LOSS_FRAMES,
    # a notebook cell shows the statement instead of frames
    "In [5]:\nloss_nn = criterion(output, label)\nloss_nn\n\n" + SOFTMAX_FRAMES.splitlines()[-1],
    # neither frames nor code: the paste's words say where
    "Calling the criterion on the scores gives\n\n*** " + SOFTMAX_FRAMES.splitlines()[-1],
])
def test_a_wording_bound_to_an_op_wins_where_the_frame_shows_that_op(paste):
    found = diagnose(paste, _dimension_siblings()).matches
    assert [m.entry.id for m in found] == ["shape.loss_rank", "shape.dim_out_of_range"]
    assert found[0].score == pytest.approx(found[1].score + OP_BONUS)


def test_a_wording_bound_to_an_op_does_not_count_elsewhere():
    # "loss" names the variable, not the op that raised: softmax is the sibling's.
    [found] = diagnose(SOFTMAX_FRAMES, _dimension_siblings()).matches
    assert found.entry.id == "shape.dim_out_of_range"
    assert found.score >= CONFIDENT


def test_a_repl_statement_is_the_raising_line_of_a_stdin_frame():
    bmm = entry("shape.bmm_batch", patterns=[(None, r"(?i)dimension out of range")])
    bmm.patterns[0].inside = r"\bbmm\b"
    generic = entry("shape.dim_out_of_range", patterns=[(None, r"(?i)dimension out of range")])
    paste = (">>> e = torch.bmm(c, d)\nTraceback (most recent call last):\n"
             '  File "<stdin>", line 1, in <module>\n'
             "RuntimeError: Dimension out of range (expected to be in range of [-2, 1], but got 2)\n")
    assert [m.entry.id for m in diagnose(paste, kb(generic, bmm)).matches] == [
        "shape.bmm_batch", "shape.dim_out_of_range"]


def test_a_pattern_bound_to_a_product_counts_only_when_a_product_raised_it():
    # torch prints one wording for nn.Linear and for a hand-written a @ b: the matmul
    # entry's pattern holds only inside a product, so a module call is no contest at all.
    matmul = Entry(id="shape.matmul_inner_dim", title="A hand-written torch.matmul",
                   category="shape", hypotheses=[Hypothesis(id="h", statement="s")],
                   patterns=[Pattern(regex=LINEAR_REGEX, type="RuntimeError",
                                     inside=MATMUL_INSIDE)])
    linear = entry("shape.linear_in_features", patterns=[("RuntimeError", LINEAR_REGEX)])
    message = "RuntimeError: mat1 and mat2 shapes cannot be multiplied (4x8 and 16x2)\n"

    def raised_by(code):
        return ('Traceback (most recent call last):\n  File "head.py", line 9, in score\n'
                f"    {code}\n{message}")

    for code in ("out = self.fc(x)", None):
        ranked = diagnose(raised_by(code) if code else message, kb(linear, matmul)).matches
        assert [m.entry.id for m in ranked] == ["shape.linear_in_features"]
        assert ranked[0].score >= CONFIDENT
    for code in ("y = x @ w", "g = torch.mm(pair, self.gamma.t())"):
        ranked = diagnose(raised_by(code), kb(linear, matmul)).matches
        assert [m.entry.id for m in ranked] == ["shape.matmul_inner_dim",
                                                "shape.linear_in_features"]


def test_older_wordings_compare_with_each_shape_as_one_value():
    conv = entry("shape.conv_rank", patterns=[(None, r"never matches this")], messages=[
        ("Expected 4-dimensional input for 4-dimensional weight 64 3 7 7, but got 3-dimensional "
        "input of size [3, 448, 448] instead")])
    paste = ("RuntimeError: Expected 4-dimensional input for 4-dimensional weight [32, 1, 5, 5],"
             " but got 2-dimensional input of size [28, 28] instead\n")
    [match] = diagnose(paste, kb(conv)).matches
    assert (match.entry.id, int(match.score)) == ("shape.conv_rank", int(TIER_MESSAGE))


def test_a_message_cut_short_names_an_older_wording_only_when_it_holds_a_phrase_of_it():
    assert_ = entry("index.device_assert", patterns=[(None, r"never matches this")], messages=[
        ("cuda runtime error (59) : device-side assert triggered at /pytorch/aten/src/THC/"
        "generic/THCTensorMath.cu:26")])
    oom = entry("memory.cuda_oom", patterns=[(None, r"never matches this")], messages=[
        "cuda runtime error (2) : out of memory at /pytorch/aten/src/THC/generic/THCStorage.cu:58"])
    entries = kb(assert_, oom)
    # Where the page cut it, any old CUDA message begins like this: it names none.
    assert diagnose("RuntimeError: cuda runtime error (\n", entries).matches == []
    assert diagnose("loss.backward() fails with: out of memory\n", entries).matches == []
    [match] = diagnose("RuntimeError: cuda runtime error (59) : device-side assert trigg\n",
                       entries).matches
    assert (match.entry.id, int(match.score)) == ("index.device_assert", int(TIER_MESSAGE))


def test_a_fragment_holding_a_patterns_own_long_phrase_is_recognised_as_a_wording():
    kernel = entry("shape.kernel_large", patterns=[("RuntimeError", (
        r"Calculated padded input size per channel: \((?P<size>\d+)\)\. "
        r"Kernel size: \((?P<kernel>\d+)\)\. Kernel size can't be greater than actual input size"
    ))])
    scalar_a = entry("dtype.long_target", patterns=[("RuntimeError", (
        r"Expected object of scalar type Long but got scalar type \w+ for argument #2 'target'"))])
    scalar_b = entry("dtype.double_input", patterns=[("RuntimeError", (
        r"Expected object of scalar type Double but got scalar type \w+ for argument #\d+"))])
    base = kb(kernel, scalar_a, scalar_b)
    paste = ("Short clips fail at inference with: Kernel size can't be greater than actual "
             "input size. How can I pad them?")
    [match] = diagnose(paste, base).matches
    assert match.entry.id == "shape.kernel_large"
    assert TIER_MESSAGE <= match.score < TIER_REGEX
    # An opening two entries share names neither.
    shared = "It fails with Expected object of scalar type when I feed the labels"
    assert diagnose(shared, base).matches == []


def test_a_fragment_of_a_wording_siblings_share_names_each_of_them():
    collate = entry("dataloader.collate", patterns=[("RuntimeError", STACK)])
    stack = entry("shape.stack", patterns=[("RuntimeError", STACK)])
    other = entry("shape.other", patterns=[("RuntimeError", r"stack expects a non-empty TensorList")])
    paste = "Batch size 4 fails: # stack expects each tensor to be equal size, but got [2，...."
    found = diagnose(paste, kb(collate, stack, other)).matches
    assert sorted(m.entry.id for m in found) == ["dataloader.collate", "shape.stack"]
    assert all(TIER_MESSAGE <= m.score < TIER_REGEX for m in found)


def test_a_message_quoted_without_its_closing_full_stop_still_matches():
    bounds = entry("index.target_bounds", patterns=[
        ("IndexError", r"Target (?P<target>-?\d+) is out of bounds\.")])
    [match] = diagnose("IndexError: Target 192 is out of bounds\n", kb(bounds)).matches
    assert (match.entry.id, match.fields["target"]) == ("index.target_bounds", "192")
    assert match.score >= TIER_TYPE_AND_REGEX


def test_a_message_retyped_in_other_letter_case_matches_below_the_type_tier():
    batch = entry("shape.loss_batch", patterns=[("ValueError", (
        r"Expected input batch_size \((?P<input_batch>\d+)\) to match target batch_size "
        r"\((?P<target_batch>\d+)\)"))])
    short = entry("distributed.failed", patterns=[(None, r"(?P<script>\S+) FAILED")])
    text = "ValueError: expected input batch_size (6) to match target batch_size (2)\n"
    [match] = diagnose(text, kb(batch, short)).matches
    assert (match.entry.id, match.fields["input_batch"]) == ("shape.loss_batch", "6")
    assert TIER_REGEX <= match.score < TIER_TYPE_AND_REGEX
    # A short pattern is never tried in another case: "train.py failed" is not it.
    assert diagnose("RuntimeError: train.py failed\n", kb(short)).matches == []


def test_a_log_line_names_its_numbers_with_identifiers_that_read_as_words():
    nan = entry("numerics.nan", symptoms=[r"\bloss\b.{0,40}\bnan\b"])
    hang = entry("distributed.hang", symptoms=[r"\bnccl\b.{0,100}\bstuck\b"])
    logged = diagnose("after some epochs:\nEpoch: 12 mask_loss:  nan size_loss:  nan\n",
                      kb(nan, hang)).matches
    assert [m.entry.id for m in logged if m.kind == "match"] == ["numerics.nan"]
    # A setting is not a logged value's name: NCCL_P2P_DISABLE stays one word.
    setting = "with NCCL_P2P_DISABLE=1 the K80s no longer get stuck, the loss is 2.3"
    assert [m for m in diagnose(setting, kb(hang)).matches if m.kind == "match"] == []


def test_a_traceback_cut_before_its_error_is_matched_on_the_words_around_it():
    dynamo = entry("compile.python_unsupported", patterns=[
        ("RuntimeError", r"Dynamo is not supported on Python (?P<python>3\.\d+)\+?")])
    paste = ("Under Python 3.12 even the CLI stops: Dynamo is not supported on Python 3.12+\n\n"
             "Traceback (most recent call last):\n"
             '  File ".tox/bin/tool", line 5, in <module>\n'
             "    from tool.lab import main\n")
    [match] = diagnose(paste, kb(dynamo)).matches
    assert (match.entry.id, match.fields["python"]) == ("compile.python_unsupported", "3.12")
    assert TIER_REGEX <= match.score < TIER_TYPE_AND_REGEX


# Warnings: torch 0.4's UserWarning wordings, typed as printed.
WARNING_KB = KnowledgeBase(entries=[
    entry("autograd.volatile_removed",
          patterns=[("UserWarning", r"volatile was removed and now has no effect")]),
    entry("other.zero_dim_index", patterns=[("IndexError", r"invalid index of a 0-dim tensor")]),
])
VOLATILE = ("train.py:653: UserWarning: volatile was removed and now has no effect. "
            "Use `with torch.no_grad():` instead.\n  x = Variable(x, volatile=True)\n")
ZERO_DIM = ("train.py:510: UserWarning: invalid index of a 0-dim tensor. This will be an error "
            "in PyTorch 0.5. Use tensor.item() to convert a 0-dim tensor to a Python number\n"
            "  total += loss.data[0]\n")


def test_a_warning_printed_with_its_type_agrees_with_a_pattern_of_that_type():
    diagnosis = diagnose(VOLATILE, WARNING_KB)
    assert diagnosis.error is None  # warnings alone are no error to the parser
    top = diagnosis.matches[0]
    assert top.entry.id == "autograd.volatile_removed"
    assert top.score >= TIER_TYPE_AND_REGEX
    assert "exception type UserWarning agrees" in top.reason


def test_the_type_printed_before_a_wording_decides_between_two_warnings():
    # The 0-dim wording is typed IndexError (the error it became), this one is a warning.
    ranked = [m.entry.id for m in diagnose(VOLATILE + ZERO_DIM, WARNING_KB).matches]
    assert ranked == ["autograd.volatile_removed", "other.zero_dim_index"]
    ranked = [m.entry.id for m in diagnose(ZERO_DIM + VOLATILE, WARNING_KB).matches]
    assert ranked == ["autograd.volatile_removed", "other.zero_dim_index"]


def test_a_known_warning_beside_an_unrecognised_error_is_a_lead_not_a_certainty():
    text = VOLATILE + "Traceback (most recent call last):\n  File \"train.py\", line 9, in <module>\n" \
        "    x = torch.no_grad(x)\nTypeError: __init__() takes exactly 1 argument (2 given)\n"
    diagnosis = diagnose(text, WARNING_KB)
    assert diagnosis.error.type == "TypeError"
    top = diagnosis.matches[0]
    assert top.entry.id == "autograd.volatile_removed"
    assert top.score < CONFIDENT
    assert "a warning printed beside the error" in top.reason


DESERIALIZE_GONE = entry("device.no_gpu_checkpoint", patterns=[("RuntimeError", (
    r"Attempting to deserialize object on a CUDA device but torch\.cuda\.is_available\(\) "
    r"is False"))], messages=[
    ("Attempting to deserialize object on a CUDA device but torch.cuda.is_available() is False. "
    "If you are running on a CPU-only machine, please use torch.load with map_location="
    "torch.device('cpu') to map your storages to the CPU.")])
DESERIALIZE_INDEX = Entry(
    id="device.checkpoint_index", title="t", category="device",
    patterns=[Pattern(type="RuntimeError", regex=(
        r"Attempting to deserialize object on CUDA device (?P<device_index>\d+) but "
        r"torch\.cuda\.device_count\(\) is (?P<device_count>\d+)"), unless=r"count\(\) is 0\b")],
    messages=[("Attempting to deserialize object on CUDA device 1 but torch.cuda.device_count() "
              "is 1. Please use torch.load with map_location to map your storages to an "
              "existing device.")],
    hypotheses=[Hypothesis(id="h", statement="s")])


@pytest.mark.parametrize("paste, expected", [
    # a space lost between two words
    (("RuntimeError: Attempting todeserialize object on a CUDA device but "
     "torch.cuda.is_available() is False.\n"), "device.no_gpu_checkpoint"),
    # the opening word retold, the numbers of this run kept
    (("loading fails with RuntimeError: Trying to deserialize object on CUDA device 2 but "
     "torch.cuda.device_count() is 2\n"), "device.checkpoint_index"),
    # letters in the wrong case and a word split in two
    (("RuntimeError: attempting to deserialize object on a cuda device but "
     "torch.cuda.is_ available() is false\n"), "device.no_gpu_checkpoint"),
])
def test_a_retyped_message_is_recognised_through_the_stored_wording_it_follows(paste, expected):
    [match] = diagnose(paste, kb(DESERIALIZE_GONE, DESERIALIZE_INDEX)).matches
    assert match.entry.id == expected
    assert int(match.score) == int(TIER_MESSAGE)
    assert "retyped" in match.reason


def test_a_retyped_message_keeps_its_own_numbers_so_the_patterns_still_tell_siblings_apart():
    # device_count() is 0: the index entry's pattern refuses it, and the other entry's
    # pattern does not hold "device 0": a retold wording recognises nothing it does not say.
    paste = ("RuntimeError: Trying to deserialize object on CUDA device 0 but "
             "torch.cuda.device_count() is 0\n")
    assert diagnose(paste, kb(DESERIALIZE_INDEX)).matches == []
    [match] = diagnose(paste.replace("0", "3"), kb(DESERIALIZE_INDEX)).matches
    assert (match.fields["device_index"], match.fields["device_count"]) == ("3", "3")


def test_a_message_that_shares_only_a_few_words_with_a_wording_is_not_retyped_from_it():
    paste = "RuntimeError: cannot deserialize the config on this device, torch says False\n"
    assert diagnose(paste, kb(DESERIALIZE_GONE, DESERIALIZE_INDEX)).matches == []


def test_the_folders_of_a_path_do_not_make_an_unrecognised_paste_resemble_an_entry():
    from torchdoctor.similar import query_text, tokens

    installed = entry("device.library_missing", patterns=[(None, r"never matches this")],
                      messages=[("libcudnn.so.8: cannot open shared object file in "
                                "/home/u/anaconda3/lib/python3.8/site-packages/torch/lib")])
    conv = entry("device.conv_weight", patterns=[(None, r"never matches this either")],
                 messages=["conv forward got its input on another device than its weight"])
    paste = ("Traceback (most recent call last):\n"
             '  File "/home/u/anaconda3/envs/x/lib/python3.8/site-packages/torch/nn/modules/'
             'conv.py", line 446, in forward\n'
             "    return self._conv_forward(input, self.weight, self.bias)\n"
             "see C:\\Users\\u\\anaconda3\\lib\\site-packages\\torch\\nn\\modules\\conv.py\n")
    words = set(tokens(query_text(None, paste)))
    assert {"anaconda3", "packages", "site", "home", "users"}.isdisjoint(words)
    assert "conv" in words
    diagnosis = diagnose(paste, kb(installed, conv))
    assert [m.entry.id for m in diagnosis.similar] == ["device.conv_weight"]


UNSCALE_FP16 = Entry(
    id="dtype.scaler_fp16", title="t", category="dtype",
    patterns=[Pattern(type="ValueError", regex=r"Attempting to unscale FP16 gradients")],
    raised_in=["torch/amp/grad_scaler.py:_unscale_grads_"],
    hypotheses=[Hypothesis(id="h", statement="s")])
CUT_AT_SITE = (
    "Traceback (most recent call last):\n"
    '  File "train.py", line 40, in step\n'
    "    scaler.unscale_(optimizer)\n"
    '  File "{root}/torch/amp/grad_scaler.py", line 337, in unscale_\n'
    '    optimizer_state["found_inf_per_device"] = self._unscale_grads_(\n'
    '  File "{root}/torch/amp/grad_scaler.py", line 259, in _unscale_grads_\n'
    '    raise ValueError("\n')


@pytest.mark.parametrize("root", ["/opt/env/lib/python3.11/site-packages",
                                  "C:\\Python311\\Lib\\site-packages"])
def test_a_traceback_cut_before_its_message_at_an_entrys_raising_site_names_it(root):
    paste = CUT_AT_SITE.format(root=root)
    if "\\" in root:
        paste = paste.replace("/torch/amp/", "\\torch\\amp\\")
    [match] = diagnose(paste, kb(UNSCALE_FP16)).matches
    assert match.entry.id == "dtype.scaler_fp16" and int(match.score) == int(TIER_MESSAGE)
    assert "_unscale_grads_" in match.reason


def test_a_traceback_cut_one_frame_earlier_names_the_site_its_last_line_calls():
    paste = CUT_AT_SITE.format(root="/env/site-packages").rsplit('  File "', 1)[0]
    [match] = diagnose(paste, kb(UNSCALE_FP16)).matches
    assert match.entry.id == "dtype.scaler_fp16"


def test_a_function_of_that_name_in_another_file_is_no_raising_site():
    paste = CUT_AT_SITE.format(root="/env/site-packages").replace(
        "torch/amp/grad_scaler.py", "myproject/grad_scaler.py")
    assert diagnose(paste, kb(UNSCALE_FP16)).matches == []
    # and a traceback that kept its message is matched on the message, not the site
    kept = CUT_AT_SITE.format(root="/env") + "ValueError: something else entirely\n"
    assert diagnose(kept, kb(UNSCALE_FP16)).matches == []


def test_a_retyped_message_follows_todays_wording_written_out_from_its_pattern():
    from torchdoctor.retyped import PLACEHOLDER, wordings_of

    batch = entry("shape.loss_batch", patterns=[("ValueError", (
        r"Expected input batch_size(?: \((?P<input_batch>\d+)\))? to match target "
        r"batch_size(?: \((?P<target_batch>\d+)\))?"))])
    assert wordings_of(batch.patterns[0].regex) == [
        "Expected input batch_size to match target batch_size",
        f"Expected input batch_size ({PLACEHOLDER}) to match target batch_size ({PLACEHOLDER})"]
    # "batch size" for batch_size, in both places; the sizes are the message's own
    [match] = diagnose("ValueError: Expected input batch size (32) to match target batch "
                       "size (64).\n", kb(batch)).matches
    assert (match.entry.id, int(match.score)) == ("shape.loss_batch", int(TIER_MESSAGE))
    assert (match.fields["input_batch"], match.fields["target_batch"]) == ("32", "64")
    [match] = diagnose("RuntimeError: mat1 and mat2 shape cannot be multiplied (64x512 and "
                       "256x10)\n", kb(LINEAR)).matches
    assert (match.fields["features"], match.fields["in_features"]) == ("512", "256")


def test_a_word_mistyped_by_a_letter_still_lines_up_but_a_value_does_not():
    paste = ("RuntimeError: Atempting to deserialize objet on a CUDA device but "
             "torch.cuda.is_available() is False.\n")
    [match] = diagnose(paste, kb(DESERIALIZE_GONE)).matches
    assert match.entry.id == "device.no_gpu_checkpoint" and "retyped" in match.reason
    # another device is a value the message reports, never rewritten into the wording's
    assert diagnose(paste.replace("CUDA device", "MPS device").replace("cuda.", "mps."),
                    kb(DESERIALIZE_GONE)).matches == []


OOM = entry(
    "memory.cuda_oom",
    patterns=[("RuntimeError", r"cuda runtime error \(2\) : out of memory")],
    hypotheses=[Hypothesis(id="batch_too_large", statement="too big"),
                Hypothesis(id="memory_leak", statement="grows", explained_by=["memory.growing"])],
)
GROWING = entry("memory.growing", symptoms=[r"\bmemory\b.{0,40}\bclimbs?\b"])
FRAGMENTED = entry("memory.fragmented", symptoms=[r"\bmemory\b.{0,40}\bclimbs?\b"])


def test_words_around_a_message_name_the_entry_that_explains_it():
    kb = KnowledgeBase([OOM, GROWING, FRAGMENTED])
    quoted = ('In a while(True) loop the GPU memory climbs until I get a '
              '"RuntimeError: cuda runtime error (2) : out of memory".')
    alone = diagnose('RuntimeError: cuda runtime error (2) : out of memory', kb).matches
    matches = diagnose(quoted, kb).matches
    # Only the entry the OOM's hypotheses name as their cause refines it, not any entry
    # whose symptom the same words happen to hit.
    assert [m.entry.id for m in matches] == ["memory.growing", "memory.cuda_oom"]
    assert matches[1].score == round(alone[0].score - CONTESTED_PENALTY, 4)
    assert not matches[0].confident
    assert [m.entry.id for m in alone] == ["memory.cuda_oom"]


def test_the_message_itself_does_not_refine_its_own_entry():
    kb = KnowledgeBase([OOM, entry("memory.growing", symptoms=[r"\bout of memory\b"])])
    paste = ("Traceback (most recent call last):\n  File \"train.py\", line 3, in <module>\n"
             "    out = model(x)\nRuntimeError: cuda runtime error (2) : out of memory\n")
    assert [m.entry.id for m in diagnose(paste, kb).matches] == ["memory.cuda_oom"]


def test_a_failure_at_the_start_of_a_phase_is_not_refined_into_growth():
    kb = KnowledgeBase([OOM, GROWING])
    paste = ('Validation starts and the GPU memory climbs to the limit: '
             '"RuntimeError: cuda runtime error (2) : out of memory".')
    assert [m.entry.id for m in diagnose(paste, kb).matches] == ["memory.cuda_oom"]


def test_words_around_a_message_two_entries_share_decide_between_them():
    shared = r"Sizes of tensors must match except in dimension (?P<dim>\d+)"
    concatenation = entry("shape.concatenated", patterns=[("RuntimeError", shared)])
    batching = entry("shape.stacked_batch", patterns=[("RuntimeError", shared)],
                     symptoms=[r"\bimages?\b.{0,40}\bdifferent sizes\b"])
    message = "RuntimeError: Sizes of tensors must match except in dimension 0. Got 3 and 4\n"
    plain = diagnose(message, kb(concatenation, batching))
    assert plain.matches[0].entry.id == "shape.concatenated"  # tie: the id decides
    said = diagnose("My images come in different sizes and the batch fails:\n" + message,
                    kb(concatenation, batching))
    assert [m.entry.id for m in said.matches] == ["shape.stacked_batch", "shape.concatenated"]
    assert said.matches[0].score == round(said.matches[1].score + 0.01, 4)


def test_torchs_module_file_under_the_users_frame_names_the_op_it_runs():
    # nn.Conv2d.forward calls F.conv2d from a method named forward: only the file
    # torch/nn/modules/conv.py says a convolution raised, when the paste is cut there.
    conv = entry("device.input_weight_device", patterns=[(None, r"found type torch\.cuda")])
    conv.patterns[0].inside = r"(?:\b|_)conv(?:[123]d)?(?:\b|_)"
    generic = entry("device.mixed_devices", patterns=[(None, r"found type torch\.cuda")])

    def cut_in(path):
        return ("# Expected object of type torch.FloatTensor but found type torch.cuda.FloatTensor\n"
                'Traceback (most recent call last):\n  File "test.py", line 3, in <module>\n'
                "    out = net(x)\n"
                f'  File "{path}", line 282, in forward\n'
                "    self.padding, self.dilation, self.groups)\n")

    ranked = diagnose(cut_in("/usr/lib/python2.7/site-packages/torch/nn/modules/conv.py"),
                      kb(generic, conv)).matches
    assert [m.entry.id for m in ranked] == ["device.input_weight_device", "device.mixed_devices"]
    # A user's own file of that name is not torch's convolution.
    ranked = diagnose(cut_in("/home/me/project/conv.py"), kb(generic, conv)).matches
    assert [m.entry.id for m in ranked] == ["device.mixed_devices"]


def test_the_source_line_under_a_warning_is_torchs_output_not_the_persons_words():
    # Both warnings matched; only the person's own words may decide between them, and the
    # code line Python prints under a warning ("total += loss.data[0]") is not theirs.
    volatile = entry("autograd.volatile_removed",
                     patterns=[("UserWarning", r"volatile was removed and now has no effect")])
    zero_dim = entry("other.zero_dim_index",
                     patterns=[("IndexError", r"invalid index of a 0-dim tensor")],
                     symptoms=[r"\.data\[0\]"])
    ranked = [m.entry.id for m in diagnose(VOLATILE + ZERO_DIM, kb(volatile, zero_dim)).matches]
    assert ranked == ["autograd.volatile_removed", "other.zero_dim_index"]
    said = "I still read the loss with loss.data[0] everywhere.\n" + VOLATILE + ZERO_DIM
    ranked = [m.entry.id for m in diagnose(said, kb(volatile, zero_dim)).matches]
    assert ranked == ["other.zero_dim_index", "autograd.volatile_removed"]


def test_a_negation_contracted_or_spelt_out_lines_up_with_the_stored_wording():
    from torchdoctor.retyped import restore

    stored = ["Inference tensors cannot be saved for backward",
              "element 0 of tensors does not require grad and does not have a grad_fn"]
    assert restore("Inference tensors can't be saved for backward", stored) == [stored[0]]
    assert restore("element 0 of tensors doesn't require grad and doesn’t have a grad_fn",
                   stored) == [stored[1]]
    # a negation is not any word: "can" alone is not "cannot"
    assert restore("Inference tensors can be saved for backward", stored) == []


def test_torchs_narrower_exception_types_derive_from_the_bases_the_matcher_names():
    import importlib

    import torch  # the tests may ask torch; the doctor keeps the table instead

    from torchdoctor.match import TORCH_EXCEPTION_BASES

    homes = [importlib.import_module(home) for home in (
        "torch", "torch.cuda", "torch.distributed", "torch._dynamo.exc", "torch._inductor.exc")]
    for name, base in TORCH_EXCEPTION_BASES.items():
        if name == "ModuleAttributeError":   # torch 1.5 - 1.7 only
            continue
        found = [getattr(home, name) for home in homes if hasattr(home, name)]
        assert found, name
        assert all(base in [kind.__name__ for kind in cls.__mro__] for cls in found), name
    assert torch.OutOfMemoryError.__mro__[1] is RuntimeError


def test_a_narrower_type_reported_as_its_base_still_agrees_with_the_pattern():
    from torchdoctor.knowledge import load_knowledge

    kb = load_knowledge(include_user=False, use_cache=False)
    # torch >= 2.1's wording, typed OutOfMemoryError in the pattern, re-raised by a
    # wrapper as the RuntimeError it derives from
    paste = ("RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total "
             "capacity of 7.79 GiB of which 3.50 MiB is free. Including non-PyTorch memory, this "
             "process has 7.78 GiB memory in use. Of the allocated memory 7.50 GiB is allocated by "
             "PyTorch, and 89.03 MiB is reserved by PyTorch but unallocated.")
    top = diagnose(paste, kb).matches[0]
    assert top.entry.id == "memory.cuda_oom"
    assert "exception type OutOfMemoryError agrees" in top.reason
