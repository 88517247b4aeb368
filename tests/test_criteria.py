"""The declarative confirm/reject criteria: a truth table per operator."""

from __future__ import annotations

import pytest

from torchdoctor.criteria import evaluate, validate_conditions, verdict
from torchdoctor.knowledge import Hypothesis

RESULT = {
    "probe": "census",
    "status": "fail",
    "summary": "labels out of range",
    "facts": {
        "label_max": 10,
        "num_classes": 10,
        "ratio": 0.98,
        "dtype": "torch.float64",
        "devices": ["cpu", "cuda:0"],
        "message": "index 10 is out of bounds for dimension 0 with size 10",
        "first_bad": {"module": "features.3", "step": 4},
        "layers": [{"name": "fc"}],
        "nothing": None,
        "training": False,
        "changed_count": 0,
    },
}
FIELDS = {"classes": "10", "index": "12", "op": "view"}

TRUTH_TABLE = [
    ({"status": "fail"}, True),
    ({"status": "pass"}, False),
    ({"status": ["warn", "fail"]}, True),
    ({"status": ["pass", "warn"]}, False),
    ({"fact": "label_max", "eq": 10}, True),
    ({"fact": "label_max", "eq": 9}, False),
    ({"fact": "label_max", "ne": 9}, True),
    ({"fact": "label_max", "ne": 10}, False),
    ({"fact": "ratio", "lt": 1}, True),
    ({"fact": "ratio", "lt": 0.98}, False),
    ({"fact": "ratio", "le": 0.98}, True),
    ({"fact": "ratio", "gt": 0.9}, True),
    ({"fact": "ratio", "gt": 0.98}, False),
    ({"fact": "ratio", "ge": 0.98}, True),
    ({"fact": "label_max", "ge": {"fact": "num_classes"}}, True),
    ({"fact": "label_max", "gt": {"fact": "num_classes"}}, False),
    ({"fact": "label_max", "ge": {"field": "classes"}}, True),  # "10" read as a number
    ({"fact": "label_max", "lt": {"field": "index"}}, True),
    ({"fact": "label_max", "eq": {"field": "classes"}}, True),
    ({"fact": "label_max", "eq": {"field": "missing"}}, False),
    ({"fact": "label_max", "ge": {"fact": "missing"}}, False),
    ({"fact": "dtype", "in": ["torch.float64", "torch.float16"]}, True),
    ({"fact": "dtype", "in": ["torch.float32"]}, False),
    ({"fact": "dtype", "not_in": ["torch.float32"]}, True),
    ({"fact": "dtype", "not_in": ["torch.float64"]}, False),
    ({"fact": "label_max", "in": ["10", 11]}, True),
    ({"fact": "devices", "contains": "cuda:0"}, True),
    ({"fact": "devices", "contains": "mps"}, False),
    ({"fact": "message", "contains": "out of bounds"}, True),
    ({"fact": "message", "contains": 10}, False),
    ({"fact": "first_bad", "contains": "module"}, True),
    ({"fact": "message", "matches": r"index \d+ is out of bounds"}, True),
    ({"fact": "message", "matches": r"^bounds"}, False),
    ({"fact": "label_max", "matches": r"^1\d$"}, True),
    ({"fact": "first_bad.module", "eq": "features.3"}, True),
    ({"fact": "first_bad.step", "gt": 3}, True),
    ({"fact": "first_bad.missing", "exists": False}, True),
    ({"fact": "layers.0.name", "eq": "fc"}, True),
    ({"fact": "layers.5.name", "exists": True}, False),
    ({"fact": "label_max", "exists": True}, True),
    ({"fact": "label_max", "exists": False}, False),
    ({"fact": "nothing", "exists": True}, False),
    ({"fact": "nothing", "exists": False}, True),
    ({"fact": "missing", "exists": False}, True),
    ({"fact": "missing", "eq": None}, False),
    ({"fact": "missing", "ne": 3}, False),
    ({"fact": "missing", "not_in": [1]}, False),
    ({"fact": "training", "eq": False}, True),
    ({"fact": "training", "eq": 0}, True),  # Python's own equality
    ({"fact": "changed_count", "eq": 0}, True),
    ({"fact": "dtype", "gt": 3}, False),  # a string is not a number: false, not an exception
    ({"fact": "label_max", "in": "10"}, False),  # 'in' wants a list
    ({"any": [{"fact": "ratio", "gt": 5}, {"status": "fail"}]}, True),
    ({"any": [{"fact": "ratio", "gt": 5}, {"status": "pass"}]}, False),
    ({"any": []}, False),
    ({"fact": "label_max", "gte": 3}, False),  # unknown operator
    ({"fact": "label_max", "eq": 10, "ne": 3}, False),  # two operators
    ({"fact": "label_max", "eq": {"fact": "num_classes", "field": "classes"}}, False),
    ({"label_max": 10}, False),
    ("status: fail", False),
]


@pytest.mark.parametrize(("condition", "expected"), TRUTH_TABLE)
def test_truth_table(condition, expected):
    assert evaluate([condition], RESULT, FIELDS) is expected


def test_all_conditions_must_hold_and_an_empty_list_never_does():
    assert evaluate([{"status": "fail"}, {"fact": "label_max", "eq": 10}], RESULT, FIELDS)
    assert not evaluate([{"status": "fail"}, {"fact": "label_max", "eq": 9}], RESULT, FIELDS)
    assert not evaluate([], RESULT, FIELDS)
    assert not evaluate(None, RESULT, FIELDS)


def test_a_result_without_facts_only_satisfies_status_and_absence():
    bare = {"status": "pass"}
    assert evaluate([{"status": "pass"}, {"fact": "x", "exists": False}], bare, {})
    assert not evaluate([{"fact": "x", "ne": 1}], bare, {})


def _hypothesis(confirm, reject):
    return Hypothesis("h", "statement", probe="census", confirm=confirm, reject=reject)


@pytest.mark.parametrize(
    ("confirm", "reject", "status", "expected"),
    [
        ([{"status": "fail"}], [{"status": "pass"}], "fail", "confirmed"),
        ([{"status": "fail"}], [{"status": "pass"}], "pass", "rejected"),
        ([{"status": "fail"}], [{"status": "pass"}], "warn", "inconclusive"),
        ([{"status": "fail"}], [{"status": "pass"}], "error", "error"),
        ([], [{"status": "pass"}], "fail", "inconclusive"),
        ([{"status": ["fail", "pass"]}], [{"status": "pass"}], "pass", "confirmed"),
    ],
)
def test_verdict(confirm, reject, status, expected):
    result = {**RESULT, "status": status}
    assert verdict(_hypothesis(confirm, reject), result, FIELDS) == expected
    as_mapping = {"confirm": confirm, "reject": reject}
    assert verdict(as_mapping, result, FIELDS) == expected


def test_verdict_without_a_result_is_untested():
    assert verdict(_hypothesis([{"status": "fail"}], []), None, FIELDS) == "untested"


def test_validate_conditions_accepts_every_documented_form():
    conditions = [
        {"status": "fail"},
        {"status": ["fail", "warn"]},
        {"fact": "label_max", "ge": {"fact": "num_classes"}},
        {"fact": "nonfinite_module", "exists": True},
        {"fact": "changed_params", "eq": 0},
        {"fact": "dtype", "in": ["torch.float64", "torch.float16"]},
        {"fact": "message", "matches": r"index \d+ is out of bounds"},
        {"any": [{"fact": "a", "gt": 0}, {"fact": "b", "gt": 0}]},
        {"fact": "first_bad.module", "eq": {"field": "module"}},
    ]
    assert validate_conditions(conditions) == []


@pytest.mark.parametrize(
    ("conditions", "problem"),
    [
        ({"status": "fail"}, "criteria must be a list"),
        (["fail"], "condition 1: a condition must be a mapping"),
        ([{"status": "done"}], "unknown status 'done'"),
        ([{"status": "fail", "fact": "x"}], "'status' stands alone"),
        ([{"any": {"status": "fail"}}], "'any' takes a non-empty list"),
        ([{"value": 3}], "needs 'status', 'fact' or 'any'"),
        ([{"fact": "x", "gte": 3}], "unknown operator 'gte'"),
        ([{"fact": "x"}], "exactly one operator (got 0)"),
        ([{"fact": "x", "eq": 1, "ne": 2}], "exactly one operator (got 2)"),
        ([{"fact": "x", "exists": "yes"}], "'exists' takes true or false"),
        ([{"fact": "x", "in": "abc"}], "'in' takes a list"),
        ([{"fact": "x", "lt": "3"}], "'lt' takes a number"),
        ([{"fact": "x", "matches": "(a"}], "'matches' regex does not compile"),
        ([{"fact": "x", "eq": {"facts": "y"}}], "literal, {fact: NAME} or {field: NAME}"),
        ([{"fact": 3, "eq": 1}], "'fact' takes a name"),
        ([{"status": "fail"}, {"any": [{"fact": "x", "eq": {"field": "nope"}}]}],
         "condition 2: unknown field 'nope'"),
        ([{"fact": "nope.deep", "eq": 1}], "unknown fact 'nope.deep' (known: x)"),
    ],
)
def test_validate_conditions_explains_each_problem(conditions, problem):
    problems = validate_conditions(conditions, facts=("x",), fields=("classes",))
    assert any(problem in p for p in problems), problems


def test_cited_facts_are_the_facts_the_conditions_read():
    from torchdoctor.criteria import cited_facts

    result = {"status": "fail", "facts": {"inputs": {"shape": [8, 3, 32, 32]}, "classes_out": 10,
                                          "label_max": 10, "rows": [1, 2]}}
    conditions = [{"fact": "inputs.shape.1", "eq": 3},
                  {"any": [{"fact": "label_max", "ge": {"fact": "classes_out"}},
                           {"fact": "missing", "exists": True}]},
                  {"fact": "rows", "exists": True}, {"status": "fail"}]
    assert cited_facts(conditions, result) == {"inputs.shape.1": 3, "label_max": 10,
                                               "classes_out": 10}
