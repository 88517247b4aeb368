"""Declarative confirm/reject criteria, judged without ``eval``.

A knowledge base never runs code, so a hypothesis says what a probe result
must look like as data (see docs/knowledge-format.md, "Criteria"), and this
module is the only interpreter of that data. Anything it cannot read as a
comparison is simply false: a typo in a user's knowledge base must never
make a hypothesis look confirmed.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from torchdoctor.linear_regex import RegexError, bounded, compile_linear

STATUSES = ("pass", "warn", "fail", "inconclusive", "error")
OPERATORS = ("eq", "ne", "lt", "le", "gt", "ge", "in", "not_in", "contains", "matches", "exists")
VERDICTS = ("confirmed", "rejected", "inconclusive", "untested", "error")

_MISSING = object()


def evaluate(conditions: list, result: Mapping[str, Any], fields: Mapping[str, Any]) -> bool:
    """True when every condition holds for this probe result; an empty list never holds.

    An empty list is false so that a hypothesis without ``confirm`` is never
    confirmed by accident.
    """
    if not isinstance(conditions, list) or not conditions:
        return False
    return all(_holds(condition, result, fields) for condition in conditions)


def verdict(hypothesis: Any, result: Mapping[str, Any] | None, fields: Mapping[str, Any]) -> str:
    """The verdict of one probe result on one hypothesis (an object or a mapping)."""
    if result is None:
        return "untested"
    if result.get("status") == "error":
        return "error"
    if evaluate(_attribute(hypothesis, "confirm"), result, fields):
        return "confirmed"
    if evaluate(_attribute(hypothesis, "reject"), result, fields):
        return "rejected"
    return "inconclusive"


def cited_facts(conditions: list, result: Mapping[str, Any]) -> dict[str, Any]:
    """The facts (by dotted name) that these conditions read, with their values.

    A verdict is only as convincing as the facts that decided it; front ends
    show these beside the probe's summary, which may speak of other things.
    """
    cited: dict[str, Any] = {}
    facts = result.get("facts") or {}
    for condition in conditions or []:
        if not isinstance(condition, Mapping):
            continue
        for part in condition.get("any") or [condition]:
            if not isinstance(part, Mapping) or not isinstance(part.get("fact"), str):
                continue
            names = [part["fact"]] + [v["fact"] for v in part.values()
                                      if isinstance(v, Mapping) and isinstance(v.get("fact"), str)]
            for name in names:
                value = _lookup(facts, name)
                if value is not _MISSING and not isinstance(value, (dict, list)):
                    cited[name] = value
    return cited


def validate_conditions(
    conditions: Any, facts: Collection[str] | None = None, fields: Collection[str] | None = None
) -> list[str]:
    """Problems with a criteria list, in words; ``facts``/``fields`` restrict the names used.

    Fact names are checked on their first dotted segment, since a probe
    declares only its top-level facts.
    """
    if not isinstance(conditions, list):
        return [f"criteria must be a list of conditions, not {_kind(conditions)}"]
    problems: list[str] = []
    for index, condition in enumerate(conditions):
        problems += [f"condition {index + 1}: {p}" for p in _check(condition, facts, fields)]
    return problems


def _check(
    condition: Any, facts: Collection[str] | None, fields: Collection[str] | None
) -> list[str]:
    if not isinstance(condition, Mapping):
        return [f"a condition must be a mapping, not {_kind(condition)}"]
    keys = set(condition)
    if "status" in condition:
        if keys != {"status"}:
            return [f"'status' stands alone; unexpected {_names(keys - {'status'})}"]
        wanted = condition["status"]
        wanted = wanted if isinstance(wanted, list) else [wanted]
        bad = [w for w in wanted if w not in STATUSES]
        return [f"unknown status {b!r} (known: {', '.join(STATUSES)})" for b in bad]
    if "any" in condition:
        if keys != {"any"}:
            return [f"'any' stands alone; unexpected {_names(keys - {'any'})}"]
        alternatives = condition["any"]
        if not isinstance(alternatives, list) or not alternatives:
            return ["'any' takes a non-empty list of conditions"]
        return [p for alt in alternatives for p in _check(alt, facts, fields)]
    if "fact" not in condition:
        return [f"a condition needs 'status', 'fact' or 'any' (got {_names(keys)})"]
    problems = _check_name("fact", condition["fact"], facts)
    operators = keys - {"fact"}
    unknown = sorted(str(k) for k in operators if k not in OPERATORS)
    if unknown:
        problems.append(f"unknown operator {_names(unknown)} (known: {', '.join(OPERATORS)})")
    elif len(operators) != 1:
        problems.append(f"a fact condition takes exactly one operator (got {len(operators)})")
    else:
        (operator,) = operators
        problems += _check_value(operator, condition[operator], facts, fields)
    return problems


def _check_value(
    operator: str, value: Any, facts: Collection[str] | None, fields: Collection[str] | None
) -> list[str]:
    if isinstance(value, Mapping):
        if len(value) != 1 or next(iter(value)) not in ("fact", "field"):
            return [f"'{operator}' value must be a literal, {{fact: NAME}} or {{field: NAME}}"]
        kind, name = next(iter(value.items()))
        return _check_name(kind, name, facts if kind == "fact" else fields)
    if operator == "exists" and not isinstance(value, bool):
        return ["'exists' takes true or false"]
    if operator in ("in", "not_in") and not isinstance(value, list):
        return [f"'{operator}' takes a list"]
    if operator in ("lt", "le", "gt", "ge") and not _is_number(value):
        return [f"'{operator}' takes a number, not {_kind(value)}"]
    if operator == "matches":
        if not isinstance(value, str):
            return ["'matches' takes a regex string"]
        try:
            compile_linear(value)
        except RegexError as exc:
            return [f"'matches' regex does not compile under RE2: {exc}"]
    return []


def _check_name(kind: str, name: Any, known: Collection[str] | None) -> list[str]:
    if not isinstance(name, str) or not name:
        return [f"'{kind}' takes a name, not {_kind(name)}"]
    if known is not None and name.split(".")[0] not in known:
        listing = ", ".join(sorted(known)) or "none"
        return [f"unknown {kind} {name!r} (known: {listing})"]
    return []


def _holds(condition: Any, result: Mapping[str, Any], fields: Mapping[str, Any]) -> bool:
    if not isinstance(condition, Mapping):
        return False
    if "status" in condition:
        wanted = condition["status"]
        wanted = wanted if isinstance(wanted, list) else [wanted]
        return result.get("status") in wanted
    if "any" in condition:
        alternatives = condition["any"]
        return isinstance(alternatives, list) and any(
            _holds(alt, result, fields) for alt in alternatives
        )
    operators = [k for k in condition if k != "fact"]
    if "fact" not in condition or len(operators) != 1 or operators[0] not in OPERATORS:
        return False
    operator = operators[0]
    actual = _lookup(result.get("facts") or {}, condition["fact"])
    if operator == "exists":
        return (actual is not _MISSING) == (condition["exists"] is True)
    if actual is _MISSING:
        return False
    expected = _resolve(condition[operator], result, fields)
    if expected is _MISSING:
        return False
    return _compare(operator, actual, expected)


def _compare(operator: str, actual: Any, expected: Any) -> bool:
    actual, expected = _align_numbers(actual, expected)
    try:
        if operator == "eq":
            return actual == expected
        if operator == "ne":
            return actual != expected
        if operator in ("lt", "le", "gt", "ge"):
            if not (_is_number(actual) and _is_number(expected)):
                return False
            return {
                "lt": actual < expected,
                "le": actual <= expected,
                "gt": actual > expected,
                "ge": actual >= expected,
            }[operator]
        if operator in ("in", "not_in"):
            if not isinstance(expected, list):
                return False
            found = any(_equal(actual, item) for item in expected)
            return found if operator == "in" else not found
        if operator == "contains":
            if isinstance(actual, str):
                return isinstance(expected, str) and expected in actual
            if isinstance(actual, (list, tuple, Mapping)):
                return expected in actual
            return False
        if operator == "matches":
            if not isinstance(expected, str) or isinstance(actual, (list, dict)):
                return False
            return compile_linear(expected).search(bounded(str(actual))) is not None
    except (TypeError, RegexError):
        return False
    return False


def _equal(a: Any, b: Any) -> bool:
    a, b = _align_numbers(a, b)
    return a == b


def _lookup(facts: Any, dotted: Any) -> Any:
    """Follow a dotted name through nested mappings (and list indices); None counts as missing."""
    if not isinstance(dotted, str):
        return _MISSING
    value = facts
    for part in dotted.split("."):
        if isinstance(value, Mapping) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            return _MISSING
    return _MISSING if value is None else value


def _resolve(value: Any, result: Mapping[str, Any], fields: Mapping[str, Any]) -> Any:
    if isinstance(value, Mapping):
        if set(value) == {"fact"}:
            return _lookup(result.get("facts") or {}, value["fact"])
        if set(value) == {"field"}:
            return _lookup(fields, value["field"])
        return _MISSING
    return value


def _align_numbers(a: Any, b: Any) -> tuple[Any, Any]:
    """Fields captured by a regex are strings; compare ``'10'`` with ``10`` as numbers."""
    if _is_number(a) and isinstance(b, str):
        return a, _as_number(b, b)
    if _is_number(b) and isinstance(a, str):
        return _as_number(a, a), b
    return a, b


def _as_number(text: str, default: Any) -> Any:
    try:
        return int(text)
    except ValueError:
        try:
            return float(text)
        except ValueError:
            return default


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _attribute(obj: Any, name: str) -> Any:
    if isinstance(obj, Mapping):
        return obj.get(name) or []
    return getattr(obj, name, None) or []


def _kind(value: Any) -> str:
    return "nothing" if value is None else type(value).__name__


def _names(names: Collection[Any]) -> str:
    return ", ".join(repr(str(n)) for n in sorted(names, key=str))
