"""The validated knowledge base as JSON, so ``diagnose`` starts without reading YAML.

The cache is written by one torchdoctor process and read by the next, but it
lies in a directory any program of the user's can write, so reading it must
never run code (it used to be a pickle) and never let a hand-made file add
what the validator would refuse. Every value is rebuilt with its type checked
and every probe name looked up; anything unexpected makes the whole file read
as absent, and the knowledge base is built from its YAML again.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from torchdoctor import private_cache
from torchdoctor.knowledge import Entry, Fix, Hypothesis, KBError, KnowledgeBase, Pattern

FORMAT = 4


class _Foreign(Exception):
    """The cache holds something this module did not write."""


def read(path: Path, key: tuple) -> KnowledgeBase | None:
    stored = private_cache.read_json(path)
    if not isinstance(stored, dict) or stored.get("format") != FORMAT:
        return None
    if stored.get("key") != _digest(key):
        return None
    try:
        return _knowledge_base(stored.get("kb"))
    except (_Foreign, TypeError, ValueError, KeyError, AttributeError):
        return None


def write(path: Path, key: tuple, kb: KnowledgeBase) -> None:
    private_cache.write_json(path, {"format": FORMAT, "key": _digest(key), "kb": _dump(kb)})


def _digest(key: tuple) -> str:
    return hashlib.sha256(json.dumps(key, default=str).encode("utf-8", "surrogatepass")).hexdigest()


# --- writing --------------------------------------------------------------------


def _dump(kb: KnowledgeBase) -> dict:
    return {
        "entries": [_dump_entry(entry) for entry in kb.entries],
        "dirs": list(kb.dirs),
        "problems": [[p.file, p.line, p.message] for p in kb.problems],
        "overrides": [list(o) for o in kb.overrides],
    }


def _dump_entry(entry: Entry) -> dict:
    return {
        "id": entry.id, "title": entry.title, "category": entry.category,
        "patterns": [_dump_pattern(p) for p in entry.patterns],
        "messages": entry.messages,
        "symptoms": [_dump_pattern(p) for p in entry.symptoms],
        "derive": entry.derive, "example": entry.example,
        "counter_example": entry.counter_example, "example_requires": entry.example_requires,
        "raised_in": entry.raised_in,
        "hypotheses": [_dump_hypothesis(h) for h in entry.hypotheses],
        "references": entry.references, "file": entry.file, "line": entry.line,
    }


def _dump_pattern(pattern: Pattern) -> dict:
    return {"regex": pattern.regex, "type": pattern.type, "groups": list(pattern.groups),
            "ignore_case": pattern.ignore_case, "unless": pattern.unless,
            "inside": pattern.inside}


def _dump_hypothesis(hypothesis: Hypothesis) -> dict:
    fix = hypothesis.fix
    return {
        "id": hypothesis.id, "statement": hypothesis.statement, "why": hypothesis.why,
        "predicts": hypothesis.predicts, "probe": hypothesis.probe, "params": hypothesis.params,
        "confirm": hypothesis.confirm, "reject": hypothesis.reject,
        "fix": None if fix is None else [fix.summary, fix.before, fix.after],
        "rewrites": [] if fix is None else fix.rewrites,
        "explained_by": hypothesis.explained_by, "excludes": hypothesis.excludes,
    }


# --- reading, every value checked ----------------------------------------------


def _knowledge_base(raw: Any) -> KnowledgeBase:
    raw = _mapping(raw)
    problems = [KBError(_text(p[0]), _number(p[1]), _text(p[2]))
                for p in _sized_lists(raw["problems"], 3)]
    overrides = [(_text(o[0]), _text(o[1]), _text(o[2])) for o in _sized_lists(raw["overrides"], 3)]
    entries = [_entry(item) for item in _list(raw["entries"])]
    return KnowledgeBase(entries, _texts(raw["dirs"]), problems, overrides)


def _entry(raw: Any) -> Entry:
    raw = _mapping(raw)
    return Entry(
        id=_text(raw["id"]), title=_text(raw["title"]), category=_text(raw["category"]),
        patterns=[_pattern(p) for p in _list(raw["patterns"])],
        messages=_texts(raw["messages"]),
        symptoms=[_pattern(p) for p in _list(raw["symptoms"])],
        derive=_texts(raw["derive"]),
        example=_optional_text(raw["example"]),
        counter_example=_optional_text(raw["counter_example"]),
        example_requires=_optional_text(raw["example_requires"]),
        raised_in=_texts(raw["raised_in"]),
        hypotheses=[_hypothesis(h) for h in _list(raw["hypotheses"])],
        references=_texts(raw["references"]),
        file=_text(raw["file"]), line=_number(raw["line"]),
    )


def _pattern(raw: Any) -> Pattern:
    raw = _mapping(raw)
    ignore_case = raw["ignore_case"]
    if not isinstance(ignore_case, bool):
        raise _Foreign
    return Pattern(_text(raw["regex"]), _optional_text(raw["type"]), tuple(_texts(raw["groups"])),
                   ignore_case, _optional_text(raw["unless"]), _optional_text(raw["inside"]))


def _hypothesis(raw: Any) -> Hypothesis:
    from torchdoctor.probes_manifest import PROBES

    raw = _mapping(raw)
    probe = _optional_text(raw["probe"])
    if probe is not None and probe not in PROBES:
        raise _Foreign
    fix = raw["fix"]
    if fix is not None:
        summary, before, after = (_text(part) for part in _sized_lists([fix], 3)[0])
        fix = Fix(summary, before, after, [_rewrite(item) for item in _list(raw["rewrites"])])
    return Hypothesis(
        id=_text(raw["id"]), statement=_text(raw["statement"]), why=_text(raw["why"]),
        predicts=_text(raw["predicts"]), probe=probe, params=_mapping(raw["params"]),
        confirm=_list(raw["confirm"]), reject=_list(raw["reject"]), fix=fix,
        explained_by=_texts(raw["explained_by"]), excludes=_texts(raw["excludes"]),
    )


def _rewrite(raw: Any) -> dict:
    """A fix's rewrite operation, held to the same catalogue as when it was loaded."""
    from torchdoctor.rewrites.catalog import check_rewrite

    raw = _mapping(raw)
    if set(raw) != {"op", "params"} or check_rewrite(raw):
        raise _Foreign
    return {"op": _text(raw["op"]), "params": _mapping(raw["params"])}


def _mapping(value: Any) -> dict:
    if not isinstance(value, dict):
        raise _Foreign
    return value


def _list(value: Any) -> list:
    if not isinstance(value, list):
        raise _Foreign
    return value


def _sized_lists(value: Any, size: int) -> list[list]:
    items = _list(value)
    if not all(isinstance(item, list) and len(item) == size for item in items):
        raise _Foreign
    return items


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise _Foreign
    return value


def _optional_text(value: Any) -> str | None:
    return None if value is None else _text(value)


def _texts(value: Any) -> list[str]:
    return [_text(item) for item in _list(value)]


def _number(value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise _Foreign
    return value
