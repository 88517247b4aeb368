"""Load and validate the YAML knowledge base.

The knowledge base is data written by people, shipped ones and users' own,
so everything in it is checked before the matcher sees it, and every problem
names the file and line to fix (see docs/knowledge-format.md for the format).

Layers load in order: the shipped directory, the user's directories
(``$XDG_CONFIG_HOME/torchdoctor/knowledge``, then ``$TORCHDOCTOR_KB``), then
the directories given with ``--kb``. An entry whose id already exists
replaces the earlier one in its place, so a user can correct a shipped entry
without forking the knowledge base. Inside one directory a repeated id is an
error. A broken shipped knowledge base raises ``KnowledgeError``; a broken
user file is skipped and reported, so the rest keeps working.

Loading stays well inside ``torchdoctor diagnose``'s start-up budget by
caching the validated knowledge base in ``~/.cache/torchdoctor``, keyed by the
size and modification time of every YAML file and of the code that judges it.
The cache is JSON in a private directory (``knowledge_cache``), never code.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import hashlib
import os
import re
import string
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torchdoctor
from torchdoctor import config
from torchdoctor.linear_regex import RegexError, bounded, compile_linear
from torchdoctor.yaml_limits import ShapeError, check_shape

CATEGORIES = (
    "shape",
    "device",
    "index",
    "dtype",
    "autograd",
    "numerics",
    "memory",
    "dataloader",
    "state_dict",
    "training",
    "distributed",
    "compile",
    "other",
)
# Numbers the matcher reads from prose; symptom entries may use them in templates.
PROSE_FIELDS = ("loss", "classes", "epoch", "step", "lr", "num_workers", "accuracy")

ENTRY_KEYS = (
    "id",
    "title",
    "category",
    "patterns",
    "messages",
    "symptoms",
    "derive",
    "example",
    "counter_example",
    "example_requires",
    "raised_in",
    "hypotheses",
    "references",
)
# What an example needs beyond this machine's torch: a GPU, several, Apple's MPS, or an
# older (or differently built) torch that still raised the message.
EXAMPLE_REQUIREMENTS = ("cuda", "multi_gpu", "mps", "old_torch", "other_build")
HYPOTHESIS_KEYS = ("id", "statement", "why", "predicts", "probe", "confirm", "reject", "fix",
                   "explained_by", "excludes")
PATTERN_KEYS = ("type", "regex", "unless", "inside")
PROBE_KEYS = ("name", "params")
FIX_KEYS = ("summary", "before", "after")

_SLUG = re.compile(r"[a-z0-9_]+\Z")
# A raising site: a library file's path from its package's folder, and a function in it.
RAISE_SITE = re.compile(r"[A-Za-z_][\w.-]*(?:/[\w.-]+)*\.py:[A-Za-z_]\w*")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_CONDITION_INDEX = re.compile(r"condition (\d+): ")
_CACHE_FORMAT = 2
_UNREADABLE = object()  # a file whose problem is already reported


@dataclass(frozen=True)
class KBError:
    file: str
    line: int  # 1-based; 0 when the problem is with the file or directory as a whole
    message: str

    def __str__(self) -> str:
        where = _display(self.file)
        return f"{where}:{self.line}: {self.message}" if self.line else f"{where}: {self.message}"


class KnowledgeError(Exception):
    """The knowledge base cannot be used; ``errors`` lists every problem found."""

    def __init__(self, errors: list[KBError]):
        self.errors = errors
        lines = "\n".join(f"  {error}" for error in errors)
        super().__init__(f"the knowledge base is invalid ({len(errors)} problems):\n{lines}")


@dataclass
class Pattern:
    regex: str
    type: str | None = None
    groups: tuple[str, ...] = ()
    ignore_case: bool = False
    # A second regex: when it is found in the text this one matched, the match does not
    # count. It says "any signal but Bus error" without lookahead, which RE2 lacks.
    unless: str | None = None
    # A third: the wording counts only when the error was raised inside this op (the
    # raising line, the functions of the frames under it). Siblings share one message
    # ("Dimension out of range" from cross_entropy, from bmm, from anything); the frame
    # that raised it is what tells them apart.
    inside: str | None = None
    _compiled: Any = field(default=None, repr=False, compare=False)
    _unless: Any = field(default=None, repr=False, compare=False)
    _inside: Any = field(default=None, repr=False, compare=False)

    @property
    def compiled(self) -> Any:
        """The RE2 program, compiled on first use so a cached knowledge base loads fast."""
        if self._compiled is None:
            self._compiled = compile_linear(self.regex, self.ignore_case)
        return self._compiled

    def search(self, text: str) -> Any:
        """The match in the head of ``text`` (see linear_regex), unless ``unless`` vetoes it."""
        found = self.compiled.search(bounded(text))
        if found is None or self.unless is None:
            return found
        if self._unless is None:
            self._unless = compile_linear(self.unless, self.ignore_case)
        return None if self._unless.search(found.group(0)) else found

    def raised_inside(self, context: str) -> bool:
        """Whether ``context`` (where the error was raised) is the op this pattern is
        about; always true for a pattern that names none. Letter case does not count:
        the context mixes code, function names and prose."""
        if self.inside is None:
            return True
        if self._inside is None:
            self._inside = compile_linear(self.inside, True)
        return self._inside.search(bounded(context)) is not None


@dataclass
class Fix:
    summary: str
    before: str = ""
    after: str = ""
    # Named rewrite operations with literal parameters (torchdoctor.rewrites), best first.
    rewrites: list[dict] = field(default_factory=list)


@dataclass
class Hypothesis:
    id: str
    statement: str
    why: str = ""
    predicts: str = ""
    probe: str | None = None
    params: dict[str, Any] = field(default_factory=dict)
    confirm: list = field(default_factory=list)
    reject: list = field(default_factory=list)
    fix: Fix | None = None
    # Causes (``entry.id`` or ``entry.id/hyp``) that produce the symptom this hypothesis
    # names: when one of them is confirmed on the same run, it is the cause and this
    # one is set aside. ``excludes``: causes that cannot hold together with this one.
    explained_by: list[str] = field(default_factory=list)
    excludes: list[str] = field(default_factory=list)


@dataclass
class Entry:
    id: str
    title: str
    category: str
    patterns: list[Pattern] = field(default_factory=list)
    messages: list[str] = field(default_factory=list)
    symptoms: list[Pattern] = field(default_factory=list)
    derive: list[str] = field(default_factory=list)
    example: str | None = None
    counter_example: str | None = None
    # What the example needs beyond a CPU build of torch ("cuda"); without
    # it the example is skipped and the entry's `messages` carry the text.
    example_requires: str | None = None
    # Library functions ("torch/amp/grad_scaler.py:_unscale_grads_") whose every raise is
    # this entry's error: a traceback cut before its message that ends there is this one.
    raised_in: list[str] = field(default_factory=list)
    hypotheses: list[Hypothesis] = field(default_factory=list)
    references: list[str] = field(default_factory=list)
    file: str = ""
    line: int = 0

    @property
    def source(self) -> str:
        return f"{_display(self.file)}:{self.line}"


@dataclass
class KnowledgeBase:
    entries: list[Entry]
    dirs: list[str] = field(default_factory=list)
    # Problems in user directories whose files were skipped.
    problems: list[KBError] = field(default_factory=list)
    # (id, source replaced, source that replaced it)
    overrides: list[tuple[str, str, str]] = field(default_factory=list)
    by_id: dict[str, Entry] = field(init=False, repr=False)
    categories: dict[str, list[Entry]] = field(init=False, repr=False)
    pattern_entries: list[Entry] = field(init=False, repr=False)
    symptom_entries: list[Entry] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.by_id = {entry.id: entry for entry in self.entries}
        self.categories = {c: [e for e in self.entries if e.category == c] for c in CATEGORIES}
        self.categories = {c: entries for c, entries in self.categories.items() if entries}
        self.pattern_entries = [e for e in self.entries if e.patterns]
        self.symptom_entries = [e for e in self.entries if e.symptoms]

    def __len__(self) -> int:
        return len(self.entries)


def shipped_dir() -> Path:
    """Inside the package when installed from a wheel, else the repository's ``knowledge/``."""
    package = Path(torchdoctor.__file__).resolve().parent
    inside = package / "knowledge"
    return inside if inside.is_dir() else package.parent / "knowledge"


def knowledge_files(path: Path) -> list[Path]:
    return sorted(p for p in path.iterdir() if p.suffix in (".yaml", ".yml") and p.is_file())


def template_fields(text: str) -> list[str]:
    """The ``{name}`` fields a template uses; raises ValueError for malformed braces."""
    names = []
    for _literal, name, _spec, _conversion in string.Formatter().parse(text):
        if name is not None:
            names.append(name)
    return names


def load_knowledge(
    extra_dirs: Iterable[str | os.PathLike] = (),
    include_user: bool = True,
    *,
    use_cache: bool = True,
    report: bool = True,
) -> KnowledgeBase:
    """The shipped knowledge base merged with the user's and ``extra_dirs``.

    Raises KnowledgeError when the shipped knowledge base is invalid. Problems
    in other directories are kept in ``problems`` (and printed to stderr when
    ``report``); the files that have them are left out.
    """
    layers: list[tuple[Path, bool]] = [(shipped_dir(), True)]
    if include_user:
        user_dirs = config.user_knowledge_dirs()
        # The config directory is optional; a directory named explicitly is not.
        layers.append((user_dirs[0], False))
        layers += [(d, True) for d in user_dirs[1:]]
    layers += [(Path(d).expanduser(), True) for d in extra_dirs]
    from torchdoctor import knowledge_cache

    cache_file = _cache_file(layers) if use_cache else None
    key = _cache_key(layers) if use_cache else None
    with _collector_paused():
        kb = knowledge_cache.read(cache_file, key) if cache_file else None
        if kb is None:
            kb = _build(layers)
            if cache_file:
                knowledge_cache.write(cache_file, key, kb)
    if report and kb.problems:
        for problem in kb.problems:
            print(f"torchdoctor: {problem}", file=sys.stderr)
        skipped = sorted({_display(p.file) for p in kb.problems})
        print(f"torchdoctor: left out of the knowledge base: {', '.join(skipped)}",
              file=sys.stderr)
    return kb


def check_dir(path: str | os.PathLike) -> list[KBError]:
    """Every problem in one knowledge directory (or file), in file and line order."""
    _entries, errors = scan_dir(Path(path))
    return errors


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """Parsing YAML and reading the cache create many small objects and no cycles; the cyclic
    collector would scan them again and again (3x slower for a large knowledge base)."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


def _build(layers: list[tuple[Path, bool]]) -> KnowledgeBase:
    merged: dict[str, Entry] = {}
    problems: list[KBError] = []
    overrides: list[tuple[str, str, str]] = []
    dirs: list[str] = []
    for index, (directory, must_exist) in enumerate(layers):
        shipped = index == 0
        if not directory.is_dir():
            if shipped:
                raise KnowledgeError([KBError(str(directory), 0, "knowledge directory not found")])
            if must_exist:
                problems.append(KBError(str(directory), 0, "no such knowledge directory"))
            continue
        entries, errors = scan_dir(directory)
        if shipped and errors:
            raise KnowledgeError(errors)
        bad_files = {error.file for error in errors}
        problems += errors
        dirs.append(str(directory))
        for entry in entries:
            if entry.file in bad_files:
                continue
            if entry.id in merged:
                overrides.append((entry.id, merged[entry.id].source, entry.source))
            merged[entry.id] = entry
    return KnowledgeBase(list(merged.values()), dirs, problems, overrides)


def scan_dir(path: Path) -> tuple[list[Entry], list[KBError]]:
    """The valid entries of one directory (or one YAML file) and the problems of the rest."""
    if path.is_file():
        files = [path]
    elif path.is_dir():
        files = knowledge_files(path)
    else:
        return [], [KBError(str(path), 0, "no such knowledge directory")]
    entries: list[Entry] = []
    errors: list[KBError] = []
    first_seen: dict[str, str] = {}
    for file in files:
        checker = _FileChecker(file)
        built = checker.check()
        repeated = set()
        for entry_id, line in checker.ids:
            if entry_id in first_seen:
                checker.error(line, f"duplicate id {entry_id!r} (first at {first_seen[entry_id]})")
                repeated.add(line)
            else:
                first_seen[entry_id] = f"{_display(checker.file)}:{line}"
        entries += [entry for entry in built if entry.line not in repeated]
        errors += checker.errors
    errors += _relation_errors(entries, path)
    errors.sort(key=lambda e: (e.file, e.line))
    return entries, errors


def _relation_errors(entries: list[Entry], path: Path) -> list[KBError]:
    """``explained_by`` / ``excludes`` must name causes that exist (in this directory or
    the shipped knowledge base), never the hypothesis itself, and ``explained_by`` must
    not go round in a circle: in a circle every cause would set every other aside."""
    known = {entry.id: {h.id for h in entry.hypotheses} for entry in entries}
    if any(ref.split("/")[0] not in known for entry in entries for h in entry.hypotheses
           for ref in (*h.explained_by, *h.excludes)) and path.resolve() != shipped_dir():
        shipped, _ = scan_dir(shipped_dir())
        known = {**{e.id: {h.id for h in e.hypotheses} for e in shipped}, **known}
    errors = []
    edges: dict[str, set[str]] = {}
    for entry in entries:
        for hyp in entry.hypotheses:
            key = f"{entry.id}/{hyp.id}"
            for field_name in ("explained_by", "excludes"):
                for ref in getattr(hyp, field_name):
                    entry_id, _, hyp_id = ref.partition("/")
                    if entry_id not in known or hyp_id and hyp_id not in known[entry_id]:
                        problem = f"names {ref!r}, which no knowledge-base entry holds"
                    elif ref in (key, entry.id):
                        problem = "names the hypothesis itself or its own entry"
                    else:
                        problem = ""
                    if problem:
                        errors.append(KBError(entry.file, entry.line,
                                              f"{entry.id}: hypothesis {hyp.id!r}: "
                                              f"'{field_name}' {problem}"))
            edges[key] = {f"{ref}/{h}" if "/" not in ref else ref
                          for ref in hyp.explained_by
                          for h in (known.get(ref, ()) if "/" not in ref else ("",))}
            edges[key] = {e.rstrip("/") for e in edges[key]}
    for entry in entries:
        for hyp in entry.hypotheses:
            key = f"{entry.id}/{hyp.id}"
            if _reaches(edges, key, key):
                errors.append(KBError(entry.file, entry.line,
                                      f"{entry.id}: hypothesis {hyp.id!r}: 'explained_by' "
                                      "goes round in a circle back to it"))
    return errors


def _reaches(edges: dict[str, set[str]], start: str, goal: str) -> bool:
    seen: set[str] = set()
    todo = list(edges.get(start, ()))
    while todo:
        key = todo.pop()
        if key == goal:
            return True
        if key not in seen:
            seen.add(key)
            todo += edges.get(key, ())
    return False


class _FileChecker:
    """Validates one YAML file and builds the entries that have no problems."""

    def __init__(self, path: Path):
        self.path = path
        self.file = str(path)
        self.category = path.stem
        self.errors: list[KBError] = []
        self.ids: list[tuple[str, int]] = []  # every entry id with its line, valid or not

    def error(self, line: int, message: str) -> None:
        self.errors.append(KBError(self.file, line, message))

    def check(self) -> list[Entry]:
        data = self._read()
        if data is _UNREADABLE:
            return []
        if not isinstance(data, dict) or "entries" not in data:
            self.error(_line(data, 1), "a knowledge file is a mapping with one key, 'entries'")
            return []
        self._unknown_keys(data, ("entries",), "the file")
        raw_entries = data["entries"]
        if not isinstance(raw_entries, list):
            self.error(_field_line(data, "entries"), "'entries' must be a list of entries")
            return []
        entries = []
        for index, raw in enumerate(raw_entries):
            if not isinstance(raw, dict):
                self.error(_item_line(raw_entries, index), "an entry must be a mapping")
                continue
            before = len(self.errors)
            entry = self._entry(raw)
            if entry is not None and len(self.errors) == before:
                entries.append(entry)
        return entries

    def _read(self) -> Any:
        import yaml

        try:
            text = self.path.read_bytes().decode("utf-8")
        except UnicodeDecodeError as exc:
            self.error(0, f"not UTF-8 text ({exc.reason} at byte {exc.start})")
            return _UNREADABLE
        except OSError as exc:
            self.error(0, f"cannot read: {exc.strerror}")
            return _UNREADABLE
        try:
            check_shape(text)
        except ShapeError as exc:
            self.error(exc.line, f"YAML refused: {exc}")
            return _UNREADABLE
        try:
            return yaml.load(text, Loader=_line_loader())
        except RecursionError:
            self.error(0, "YAML refused: nested too deep to load")
            return _UNREADABLE
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
            problem = getattr(exc, "problem", None) or str(exc)
            context = getattr(exc, "context", None)
            detail = f"{problem} ({context})" if context else problem
            self.error(mark.line + 1 if mark else 0, f"YAML syntax error: {detail}")
            return _UNREADABLE

    def _entry(self, raw: dict) -> Entry | None:
        entry_id = raw.get("id")
        label = f"entry {entry_id}" if isinstance(entry_id, str) else "entry"
        line = raw.line
        if _text(entry_id):
            self.ids.append((entry_id, line))
        self._unknown_keys(raw, ENTRY_KEYS, label)
        self._identity(raw, label)
        patterns = self._patterns(raw, label)
        symptoms = self._symptoms(raw, label)
        if not (_nonempty_list(raw.get("patterns")) or _nonempty_list(raw.get("symptoms"))):
            self.error(line, f"{label}: has neither 'patterns' nor 'symptoms'")
        if _nonempty_list(raw.get("patterns")) and "example" not in raw:
            self.error(line, f"{label}: a pattern entry needs an 'example' that raises the error")
        requires = raw.get("example_requires")
        if requires is not None and requires not in EXAMPLE_REQUIREMENTS:
            self.error(_field_line(raw, "example_requires"),
                       f"{label}: example_requires must be one of {', '.join(EXAMPLE_REQUIREMENTS)}")
        messages = self._messages(raw, label, patterns)
        raised_in = self._raised_in(raw, label)
        derive = self._derive(raw, label)
        references = self._strings(raw, "references", label)
        names = set(PROSE_FIELDS) if _nonempty_list(raw.get("symptoms")) else set()
        for pattern in patterns + symptoms:
            names.update(pattern.groups)
        self._derive_inputs(raw, label, derive, names)
        derivations = _derivations()
        for name in derive:
            names.update(derivations.get(name, ((), ()))[1])
        hypotheses = self._hypotheses(raw, label, names)
        if not all(isinstance(raw.get(k), str) for k in ("id", "title", "category")):
            return None
        return Entry(
            id=raw["id"],
            title=raw["title"],
            category=raw["category"],
            patterns=patterns,
            messages=messages,
            symptoms=symptoms,
            derive=derive,
            example=raw.get("example"),
            counter_example=raw.get("counter_example"),
            example_requires=raw.get("example_requires"),
            raised_in=raised_in,
            hypotheses=hypotheses,
            references=references,
            file=self.file,
            line=line,
        )

    def _identity(self, raw: dict, label: str) -> None:
        """Required fields, and an id, category and file name that agree."""
        line = raw.line
        entry_id = raw.get("id")
        for key in ("id", "title", "category", "hypotheses"):
            if key not in raw:
                self.error(line, f"{label}: missing required field '{key}'")
        for key in ("id", "title", "category", "example", "counter_example"):
            if key in raw and not _text(raw[key]):
                self.error(_field_line(raw, key), f"{label}: '{key}' must be non-empty text")
        category = raw.get("category")
        if isinstance(category, str) and category:
            if category not in CATEGORIES:
                self.error(_field_line(raw, "category"),
                           f"{label}: unknown category {category!r} (known: {', '.join(CATEGORIES)})")
            elif category != self.category:
                self.error(_field_line(raw, "category"),
                           f"{label}: category {category!r} does not match the file name "
                           f"{self.path.name!r}")
        if isinstance(entry_id, str) and entry_id:
            prefix, _, slug = entry_id.partition(".")
            if not slug or not _SLUG.match(slug) or prefix != category:
                self.error(_field_line(raw, "id"),
                           f"{label}: id must be 'category.slug' with category {category!r} "
                           f"and slug of [a-z0-9_]")

    def _patterns(self, raw: dict, label: str) -> list[Pattern]:
        items = raw.get("patterns", [])
        if not isinstance(items, list):
            self.error(_field_line(raw, "patterns"), f"{label}: 'patterns' must be a list")
            return []
        patterns = []
        for index, item in enumerate(items):
            line = _item_line(items, index)
            if not isinstance(item, dict):
                self.error(line, f"{label}: a pattern is a mapping {{type, regex}}")
                continue
            self._unknown_keys(item, PATTERN_KEYS, f"{label}: pattern")
            type_ = item.get("type")
            if type_ is not None and not _text(type_):
                self.error(_field_line(item, "type"), f"{label}: pattern 'type' must be text")
                continue
            pattern = self._regex(item.get("regex"), _field_line(item, "regex"), label, type_)
            unless = item.get("unless")
            if unless is not None and not self._regex(unless, _field_line(item, "unless"),
                                                      f"{label}: unless", None):
                continue
            inside = item.get("inside")
            if inside is not None and not self._regex(
                    inside, _field_line(item, "inside"), f"{label}: inside", None,
                    ignore_case=True):
                continue
            if pattern is not None:
                pattern.unless = unless
                pattern.inside = inside
                patterns.append(pattern)
        return patterns

    def _symptoms(self, raw: dict, label: str) -> list[Pattern]:
        items = raw.get("symptoms", [])
        if not isinstance(items, list):
            self.error(_field_line(raw, "symptoms"), f"{label}: 'symptoms' must be a list")
            return []
        symptoms = []
        for index, item in enumerate(items):
            pattern = self._regex(item, _item_line(items, index), label, None, ignore_case=True)
            if pattern is not None:
                symptoms.append(pattern)
        return symptoms

    def _regex(
        self, regex: Any, line: int, label: str, type_: str | None, ignore_case: bool = False
    ) -> Pattern | None:
        if not _text(regex):
            self.error(line, f"{label}: a regex must be non-empty text")
            return None
        try:
            compiled = compile_linear(regex, ignore_case)
        except RegexError as exc:
            hint = ("; lookaround and backreferences are not available (see "
                    "docs/knowledge-format.md)" if "perl operator" in str(exc)
                    or "escape sequence" in str(exc) or "group name" in str(exc) else "")
            self.error(line, f"{label}: regex does not compile under RE2: {exc}{hint}")
            return None
        return Pattern(regex, type_, tuple(compiled.groupindex), ignore_case, None,
                       _compiled=compiled)

    def _messages(self, raw: dict, label: str, patterns: list[Pattern]) -> list[str]:
        messages = self._strings(raw, "messages", label)
        if messages and "patterns" not in raw:
            self.error(_field_line(raw, "messages"), f"{label}: 'messages' need 'patterns'")
            return messages
        # A pattern that failed to compile is already reported; judging messages
        # against the rest would only add noise.
        if len(patterns) != len(raw.get("patterns") or []):
            return messages
        items = raw.get("messages") or []
        for index, message in enumerate(items):
            if _text(message) and not any(p.search(message) for p in patterns):
                self.error(_item_line(items, index),
                           f"{label}: message matches none of the patterns: {_short(message)}")
        return messages

    def _derive(self, raw: dict, label: str) -> list[str]:
        names = self._strings(raw, "derive", label)
        known = _derivations()
        items = raw.get("derive") or []
        for index, name in enumerate(items):
            if _text(name) and name not in known:
                self.error(_item_line(items, index),
                           f"{label}: unknown derived fact {name!r} (known: {', '.join(known)})")
        return [n for n in names if n in known]

    def _derive_inputs(self, raw: dict, label: str, derive: list[str], captured: set[str]) -> None:
        """A derivation none of whose inputs is captured would only ever render '?'."""
        items = raw.get("derive") or []
        for name in derive:
            needs = _derivations()[name][0]
            if needs and not captured.intersection(needs):
                self.error(_item_line(items, items.index(name)),
                           f"{label}: derived fact {name!r} needs {' or '.join(needs)}, which no "
                           f"pattern captures")

    def _raised_in(self, raw: dict, label: str) -> list[str]:
        sites = self._strings(raw, "raised_in", label)
        if sites and "patterns" not in raw:
            self.error(_field_line(raw, "raised_in"), f"{label}: 'raised_in' needs 'patterns'")
        for index, site in enumerate(sites):
            if not RAISE_SITE.fullmatch(site):
                self.error(_item_line(raw.get("raised_in"), index),
                           f"{label}: 'raised_in' items are 'path/of/file.py:function', "
                           f"got {site!r}")
        return [site for site in sites if RAISE_SITE.fullmatch(site)]

    def _strings(self, raw: dict, key: str, label: str) -> list[str]:
        items = raw.get(key)
        if items is None:
            return []
        if not isinstance(items, list):
            self.error(_field_line(raw, key), f"{label}: '{key}' must be a list")
            return []
        good = []
        for index, item in enumerate(items):
            if _text(item):
                good.append(item)
            else:
                self.error(_item_line(items, index), f"{label}: '{key}' items must be text")
        return good

    def _hypotheses(self, raw: dict, label: str, names: set[str]) -> list[Hypothesis]:
        items = raw.get("hypotheses")
        if items is None:
            return []
        if not isinstance(items, list) or not items:
            self.error(_field_line(raw, "hypotheses"),
                       f"{label}: 'hypotheses' must be a non-empty list")
            return []
        hypotheses = []
        seen: set[str] = set()
        for index, item in enumerate(items):
            if not isinstance(item, dict):
                self.error(_item_line(items, index), f"{label}: a hypothesis must be a mapping")
                continue
            hypothesis = self._hypothesis(item, label, names)
            if hypothesis is None:
                continue
            if hypothesis.id in seen:
                self.error(item.line, f"{label}: duplicate hypothesis id {hypothesis.id!r}")
            seen.add(hypothesis.id)
            hypotheses.append(hypothesis)
        return hypotheses

    def _hypothesis(self, item: dict, label: str, names: set[str]) -> Hypothesis | None:
        hyp_id = item.get("id")
        where = f"{label}: hypothesis {hyp_id!r}" if _text(hyp_id) else f"{label}: hypothesis"
        self._unknown_keys(item, HYPOTHESIS_KEYS, where)
        for key in ("id", "statement", "why", "fix"):
            if key not in item:
                self.error(item.line, f"{where}: missing required field '{key}'")
        if _text(hyp_id) and not _SLUG.match(hyp_id):
            self.error(_field_line(item, "id"), f"{where}: id must be [a-z0-9_]+")
        for key in ("id", "statement", "why", "predicts"):
            if key in item and not _text(item[key]):
                self.error(_field_line(item, key), f"{where}: '{key}' must be non-empty text")
        for key in ("statement", "predicts"):
            self._template(item.get(key), _field_line(item, key), f"{where}: {key}", names)
        fix = self._fix(item, where, names)
        probe, params, facts = self._probe(item, where)
        criteria = {}
        for key in ("confirm", "reject"):
            criteria[key] = self._criteria(item, key, where, probe, facts, names)
        if not (_text(hyp_id) and _text(item.get("statement"))):
            return None
        return Hypothesis(
            id=hyp_id,
            statement=item["statement"],
            why=item.get("why") if _text(item.get("why")) else "",
            predicts=item.get("predicts") if _text(item.get("predicts")) else "",
            probe=probe,
            params=params,
            confirm=criteria["confirm"],
            reject=criteria["reject"],
            fix=fix,
            explained_by=self._relations(item, "explained_by", where),
            excludes=self._relations(item, "excludes", where),
        )

    def _relations(self, item: dict, key: str, where: str) -> list[str]:
        """``explained_by`` / ``excludes``: ids of other causes, ``entry.id`` or
        ``entry.id/hyp``; whether they exist is checked once every file is read."""
        ids = self._strings(item, key, where)
        good = []
        for index, ref in enumerate(ids):
            entry_id, _, hyp_id = ref.partition("/")
            prefix, _, slug = entry_id.partition(".")
            if not (prefix in CATEGORIES and slug and _SLUG.match(slug)
                    and (not hyp_id and "/" not in ref or _SLUG.match(hyp_id))):
                self.error(_item_line(item.get(key) or [], index),
                           f"{where}: '{key}' names {ref!r}, which is not 'category.slug' "
                           "or 'category.slug/hypothesis'")
                continue
            good.append(ref)
        return good

    def _fix(self, item: dict, where: str, names: set[str]) -> Fix | None:
        raw = item.get("fix")
        if raw is None:
            return None
        line = _field_line(item, "fix")
        if not isinstance(raw, dict):
            self.error(line, f"{where}: 'fix' is a mapping {{summary, before, after}}")
            return None
        self._unknown_keys(raw, (*FIX_KEYS, "rewrite"), f"{where}: fix")
        if not _text(raw.get("summary")):
            self.error(line, f"{where}: fix needs a 'summary'")
        rewrites = self._rewrites(raw, where)
        for key in FIX_KEYS:
            value = raw.get(key)
            if value is not None and not isinstance(value, str):
                self.error(_field_line(raw, key), f"{where}: fix '{key}' must be text")
            else:
                self._template(value, _field_line(raw, key), f"{where}: fix {key}", names)
        if not _text(raw.get("summary")):
            return None
        return Fix(raw["summary"], _plain_text(raw.get("before")), _plain_text(raw.get("after")),
                   rewrites)

    def _rewrites(self, raw: dict, where: str) -> list[dict]:
        """``rewrite:`` is one operation or a list of them, each checked against the catalogue."""
        from torchdoctor.rewrites.catalog import check_rewrite

        value = raw.get("rewrite")
        if value is None:
            return []
        items = value if isinstance(value, list) else [value]
        valid = []
        for item in items:
            problems = check_rewrite(item)
            for problem in problems:
                self.error(_field_line(raw, "rewrite"), f"{where}: fix {problem}")
            if not problems:
                valid.append({"op": item["op"], "params": dict(item.get("params") or {})})
        return valid

    def _probe(self, item: dict, where: str) -> tuple[str | None, dict, tuple[str, ...] | None]:
        from torchdoctor.probes_manifest import PROBES

        raw = item.get("probe")
        if raw is None:
            return None, {}, None
        line = _field_line(item, "probe")
        if not isinstance(raw, dict):
            self.error(line, f"{where}: 'probe' is a mapping {{name, params}}")
            return None, {}, None
        self._unknown_keys(raw, PROBE_KEYS, f"{where}: probe")
        name = raw.get("name")
        spec = PROBES.get(name) if isinstance(name, str) else None
        if spec is None:
            shown = "nothing" if name is None else repr(name)
            self.error(_field_line(raw, "name"),
                       f"{where} names unknown probe {shown} (known: {', '.join(PROBES)})")
            return None, {}, None
        params = raw.get("params") or {}
        if not isinstance(params, dict):
            self.error(_field_line(raw, "params"), f"{where}: probe 'params' must be a mapping")
            return name, {}, spec.facts
        for key, value in params.items():
            param = spec.param(key)
            param_line = _field_line(params, key)
            if param is None:
                known = ", ".join(p.name for p in spec.params) or "none"
                self.error(param_line,
                           f"{where}: probe {name!r} has no parameter {key!r} (known: {known})")
            elif not _param_type_ok(param.type, value):
                self.error(param_line, f"{where}: probe {name!r} parameter {key!r} takes "
                           f"{param.type}, not {type(value).__name__} {value!r}")
        return name, _plain(params), spec.facts

    def _criteria(
        self,
        item: dict,
        key: str,
        where: str,
        probe: str | None,
        facts: tuple[str, ...] | None,
        names: set[str],
    ) -> list:
        from torchdoctor.criteria import validate_conditions

        if key not in item:
            return []
        conditions = item[key]
        line = _field_line(item, key)
        if "probe" not in item:
            self.error(line, f"{where}: '{key}' needs a 'probe' whose result it judges")
            return []
        for problem in validate_conditions(conditions, facts, names):
            match = _CONDITION_INDEX.match(problem)
            problem_line = _item_line(conditions, int(match.group(1)) - 1) if match else line
            self.error(problem_line, f"{where}: {key} {problem}")
        return _plain(conditions) if probe else []

    def _template(self, text: Any, line: int, where: str, names: set[str]) -> None:
        if not isinstance(text, str):
            return
        try:
            used = template_fields(text)
        except ValueError as exc:
            self.error(line, f"{where}: bad template ({exc}); write {{{{ and }}}} for a literal "
                       f"brace")
            return
        for name in dict.fromkeys(used):
            if not _IDENTIFIER.match(name):
                self.error(line, f"{where}: template field {{{name}}} is not a plain name; "
                           f"write {{{{ and }}}} for a literal brace")
            elif name not in names:
                known = ", ".join(sorted(names)) or "none"
                self.error(line, f"{where} uses {{{name}}}, which no pattern captures and no "
                           f"derived fact adds (available: {known})")

    def _unknown_keys(self, raw: dict, known: tuple[str, ...], where: str) -> None:
        import difflib

        for key, line in getattr(raw, "duplicates", ()):
            self.error(line, f"{where}: key {key!r} appears twice")
        for key in raw:
            if key in known:
                continue
            close = difflib.get_close_matches(str(key), known, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else f" (known: {', '.join(known)})"
            self.error(_field_line(raw, key), f"{where}: unknown key {key!r}{hint}")


class _Map(dict):
    """A YAML mapping that remembers its line and the line of each key."""

    def __init__(self, line: int):
        super().__init__()
        self.line = line
        self.key_lines: dict[Any, int] = {}
        self.duplicates: tuple[tuple[str, int], ...] = ()


class _Seq(list):
    """A YAML sequence that remembers its line and the line of each item."""

    def __init__(self, line: int, item_lines: list[int]):
        super().__init__()
        self.line = line
        self.item_lines = item_lines


def _construct_map(loader: Any, node: Any) -> Any:
    data = _Map(node.start_mark.line + 1)
    yield data
    data.update(loader.construct_mapping(node))
    lines: dict = {}
    duplicates = []
    for key_node, _value in node.value:
        key = getattr(key_node, "value", None)
        if isinstance(key, str) and key in lines:
            duplicates.append((key, key_node.start_mark.line + 1))
        lines[key] = key_node.start_mark.line + 1
    data.key_lines = lines
    data.duplicates = tuple(duplicates)


def _construct_seq(loader: Any, node: Any) -> Any:
    data = _Seq(node.start_mark.line + 1, [item.start_mark.line + 1 for item in node.value])
    yield data
    data.extend(loader.construct_sequence(node))


@functools.cache
def _line_loader() -> type:
    """A safe loader (the C one when built) whose mappings and lists know their lines."""
    import yaml

    base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    loader = type("LineSafeLoader", (base,), {})
    loader.add_constructor("tag:yaml.org,2002:map", _construct_map)
    loader.add_constructor("tag:yaml.org,2002:seq", _construct_seq)
    return loader


@functools.cache
def _derivations() -> dict[str, tuple[tuple[str, ...], tuple[str, ...]]]:
    """Derived-fact names with the fields each needs and adds."""
    from torchdoctor.facts import DERIVATIONS

    return DERIVATIONS


def _param_type_ok(kind: str, value: Any) -> bool:
    if kind == "bool":
        return isinstance(value, bool)
    if kind == "int":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "float":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind == "str":
        return isinstance(value, str)
    if kind == "list":
        return isinstance(value, list)
    return True


def _plain(value: Any) -> Any:
    """Line-aware YAML containers as plain dicts and lists, for the JSON cache."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _plain_text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _nonempty_list(value: Any) -> bool:
    return isinstance(value, list) and bool(value)


def _text(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _line(data: Any, default: int) -> int:
    return getattr(data, "line", 0) or default


def _field_line(raw: Any, key: Any) -> int:
    lines = getattr(raw, "key_lines", {})
    return lines.get(key) or getattr(raw, "line", 0)


def _item_line(items: Any, index: int) -> int:
    lines = getattr(items, "item_lines", [])
    return lines[index] if index < len(lines) else getattr(items, "line", 0)


def _short(text: str, limit: int = 80) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _display(file: str) -> str:
    """A path relative to the current directory when it lies beneath it, as people type it."""
    if not os.path.isabs(file):
        return file
    try:
        return os.path.relpath(file) if Path(file).is_relative_to(Path.cwd()) else file
    except (OSError, ValueError):
        return file


# The cache: the validated knowledge base, keyed by every file it was built from.

_JUDGES = ("knowledge.py", "knowledge_cache.py", "criteria.py", "probes_manifest.py",
           "facts.py", "linear_regex.py")


def _cache_file(layers: list[tuple[Path, bool]]) -> Path:
    dirs = "\0".join(str(d.resolve()) if d.exists() else str(d) for d, _ in layers)
    digest = hashlib.sha1(dirs.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return config.cache_dir() / f"knowledge-{digest}.json"


def _cache_key(layers: list[tuple[Path, bool]]) -> tuple:
    package = Path(__file__).parent
    stamps: list[tuple] = [(_CACHE_FORMAT, torchdoctor.__version__, sys.version_info[:2])]
    stamps += [_stamp(package / name) for name in _JUDGES]
    for directory, _must_exist in layers:
        stamps.append((str(directory), _stamp(directory)))
        if directory.is_dir():
            stamps += [_stamp(file) for file in knowledge_files(directory)]
    return tuple(stamps)


def _stamp(path: Path) -> tuple:
    try:
        info = path.stat()
    except OSError:
        return (str(path), None)
    return (str(path), info.st_mtime_ns, info.st_size)
