"""The knowledge-base loader and validator.

Each directory under fixtures/kb_bad holds one class of mistake; the lines
that must be reported end in ``# expect: TEXT``, and the test fails on any
missing or extra error, so the fixtures document the validator.
"""

from __future__ import annotations

import json
import re
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from torchdoctor import knowledge
from torchdoctor.knowledge import (
    KBError,
    KnowledgeError,
    check_dir,
    load_knowledge,
    shipped_dir,
)

FIXTURES = Path(__file__).parent / "fixtures"
GOOD = FIXTURES / "kb_good"
BAD_CASES = sorted(p.name for p in (FIXTURES / "kb_bad").iterdir() if p.is_dir())
EXPECT = re.compile(r"#\s*expect:\s*(.+?)\s*$")


@pytest.fixture(autouse=True)
def isolated_dirs(tmp_path, monkeypatch):
    """Keep the user's real config and cache out of every test."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("TORCHDOCTOR_KB", raising=False)
    return tmp_path


def expectations(case: Path) -> set[tuple[str, int, str]]:
    found = set()
    for file in sorted(case.iterdir()):
        for number, text in enumerate(file.read_text().splitlines(), start=1):
            match = EXPECT.search(text)
            if match:
                found.add((file.name, number, match.group(1)))
    return found


def test_the_good_fixture_loads_with_every_field(monkeypatch):
    assert check_dir(GOOD) == []
    monkeypatch.setattr(knowledge, "shipped_dir", lambda: GOOD)
    kb = load_knowledge(include_user=False, use_cache=False)
    entry = kb.by_id["shape.linear_in_features"]
    assert entry.category == "shape"
    assert entry.patterns[0].type == "RuntimeError"
    assert entry.patterns[0].groups == ("batch", "features", "in_features", "out_features")
    message = "mat1 and mat2 shapes cannot be multiplied (64x57600 and 9216x128)"
    assert entry.patterns[0].compiled.search(message).group("features") == "57600"
    assert entry.derive == ["factorize_features"]
    assert "torch.nn.Linear(9216, 128)" in entry.example
    hypothesis = entry.hypotheses[0]
    assert (hypothesis.id, hypothesis.probe, hypothesis.params) == (
        "flatten_size",
        "trace",
        {"backward": False},
    )
    assert hypothesis.confirm == [{"fact": "feeding_module", "exists": True}]
    assert hypothesis.fix.after.strip().startswith("self.fc = nn.Linear({features}, 128)")
    assert entry.file.endswith("shape.yaml") and entry.line == 3
    symptom = kb.by_id["training.loss_constant"]
    assert symptom.symptoms[0].compiled.search("my LOSS STAYS the same")
    assert [e.id for e in kb.symptom_entries] == ["training.loss_constant"]
    assert "shape.broadcast" in [e.id for e in kb.pattern_entries]
    assert list(kb.categories) == [c for c in knowledge.CATEGORIES if c in ("shape", "training")]


@pytest.mark.parametrize("case", BAD_CASES)
def test_each_mistake_is_reported_on_its_line(case):
    directory = FIXTURES / "kb_bad" / case
    expected = expectations(directory)
    assert expected, f"fixture {case} marks no expected error"
    errors = check_dir(directory)
    got = {(Path(e.file).name, e.line, e.message) for e in errors}
    missing = [
        (name, line, text)
        for name, line, text in expected
        if not any(g[:2] == (name, line) and text in g[2] for g in got)
    ]
    extra = [
        g for g in got
        if not any(g[:2] == (name, line) and text in g[2] for name, line, text in expected)
    ]
    assert not missing and not extra, f"missing: {missing}\nextra: {extra}"


def test_error_text_names_file_line_and_entry():
    errors = check_dir(FIXTURES / "kb_bad" / "probe")
    text = str(errors[0])
    assert re.match(r".*kb_bad/probe/shape\.yaml:10: entry shape\.probe: hypothesis "
                    r"'unknown_probe' names unknown probe 'tracee' \(known: env, ", text)
    assert str(KBError("dir", 0, "no such knowledge directory")) == "dir: no such knowledge directory"


def test_one_file_can_be_checked_alone():
    errors = check_dir(FIXTURES / "kb_bad" / "probe" / "shape.yaml")
    assert [e.line for e in errors] == [10, 18, 26, 32]


def test_missing_directory_and_unreadable_text(tmp_path):
    assert [e.message for e in check_dir(tmp_path / "absent")] == ["no such knowledge directory"]
    (tmp_path / "shape.yaml").write_bytes(b"entries:\n  - id: \xff\xfe\n")
    (error,) = check_dir(tmp_path)
    assert error.line == 0 and "not UTF-8" in error.message


def test_an_empty_file_is_reported(tmp_path):
    (tmp_path / "shape.yaml").write_text("")
    (error,) = check_dir(tmp_path)
    assert "a mapping with one key, 'entries'" in error.message


def test_loading_never_runs_yaml_tags(tmp_path):
    (tmp_path / "shape.yaml").write_text(
        "entries: !!python/object/apply:os.system ['echo hacked']\n"
    )
    (error,) = check_dir(tmp_path)
    assert error.line == 1 and "YAML syntax error" in error.message


def _user_entry(title: str, entry_id: str = "shape.broadcast") -> str:
    return f"""entries:
  - id: {entry_id}
    title: {title}
    category: shape
    patterns:
      - regex: 'The size of tensor a \\((?P<size_a>\\d+)\\)'
    example: |
      import torch
      torch.ones(3) + torch.ones(4)
    hypotheses:
      - {{id: mine, statement: 'My own reading of {{size_a}}', why: w, fix: {{summary: f}}}}
"""


def test_user_dirs_override_in_place_and_merge(tmp_path, monkeypatch):
    shipped = tmp_path / "shipped"
    shipped.mkdir()
    for file in GOOD.iterdir():
        (shipped / file.name).write_text(file.read_text())
    monkeypatch.setattr(knowledge, "shipped_dir", lambda: shipped)
    config_kb = tmp_path / "config" / "torchdoctor" / "knowledge"
    config_kb.mkdir(parents=True)
    (config_kb / "shape.yaml").write_text(_user_entry("From the config dir"))
    env_kb = tmp_path / "env_kb"
    env_kb.mkdir()
    (env_kb / "shape.yaml").write_text(_user_entry("Mine", "shape.my_own"))
    monkeypatch.setenv("TORCHDOCTOR_KB", f"{env_kb}{__import__('os').pathsep}")
    extra = tmp_path / "extra"
    extra.mkdir()
    (extra / "shape.yaml").write_text(_user_entry("From --kb"))

    kb = load_knowledge(use_cache=False)
    assert [e.id for e in kb.entries] == [
        "shape.linear_in_features", "shape.broadcast", "training.loss_constant", "shape.my_own"
    ]
    assert kb.by_id["shape.my_own"].title == "Mine"
    assert kb.by_id["shape.broadcast"].title == "From the config dir"
    assert kb.overrides[0][0] == "shape.broadcast"

    kb = load_knowledge([extra], use_cache=False)
    assert kb.by_id["shape.broadcast"].title == "From --kb"
    assert kb.by_id["shape.broadcast"].hypotheses[0].id == "mine"
    assert [o[0] for o in kb.overrides] == ["shape.broadcast", "shape.broadcast"]

    kb = load_knowledge(include_user=False, use_cache=False)
    assert kb.by_id["shape.broadcast"].title == "Two tensors cannot be broadcast together"


def test_a_bad_user_file_is_skipped_and_reported(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(knowledge, "shipped_dir", lambda: GOOD)
    user = tmp_path / "user"
    user.mkdir()
    (user / "shape.yaml").write_text(_user_entry("Good", "shape.kept"))
    (user / "training.yaml").write_text("entries:\n  - id: training.x\n    titel: typo\n")
    kb = load_knowledge([user, tmp_path / "nowhere"], include_user=False, use_cache=False)
    assert "shape.kept" in kb.by_id and "training.x" not in kb.by_id
    assert {Path(p.file).name for p in kb.problems} == {"training.yaml", "nowhere"}
    err = capsys.readouterr().err
    assert "training.yaml:3: entry training.x: unknown key 'titel'; did you mean 'title'?" in err
    assert "nowhere: no such knowledge directory" in err
    assert "left out of the knowledge base" in err


def test_an_invalid_shipped_kb_raises_with_every_error(monkeypatch):
    monkeypatch.setattr(knowledge, "shipped_dir", lambda: FIXTURES / "kb_bad" / "template")
    with pytest.raises(KnowledgeError) as raised:
        load_knowledge(include_user=False, use_cache=False)
    assert len(raised.value.errors) == 4
    assert "shape.yaml:11: entry shape.template" in str(raised.value)


def test_the_cache_is_used_and_invalidated(tmp_path, monkeypatch):
    shipped = tmp_path / "shipped"
    shipped.mkdir()
    (shipped / "shape.yaml").write_text(_user_entry("First"))
    monkeypatch.setattr(knowledge, "shipped_dir", lambda: shipped)
    first = load_knowledge(include_user=False)
    assert list((tmp_path / "cache" / "torchdoctor").glob("knowledge-*.json"))
    cached = load_knowledge(include_user=False)
    assert cached.by_id["shape.broadcast"].title == "First"
    assert cached.by_id["shape.broadcast"].patterns[0].compiled.search("The size of tensor a (3)")
    assert cached is not first
    (shipped / "shape.yaml").write_text(_user_entry("Second, a longer title"))
    assert load_knowledge(include_user=False).by_id["shape.broadcast"].title.startswith("Second")


class _Planted:
    """Unpickling this creates ``marker``: proof that the cache ran code."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (Path.touch, (self.marker,))


def _cache_files(tmp_path: Path) -> list[Path]:
    return sorted((tmp_path / "cache" / "torchdoctor").iterdir())


def test_a_planted_pickle_in_the_cache_runs_nothing(tmp_path):
    import pickle

    load_knowledge(include_user=False)
    marker = tmp_path / "ran"
    for file in _cache_files(tmp_path):
        file.write_bytes(pickle.dumps(_Planted(marker)))
    kb = load_knowledge(include_user=False)
    assert not marker.exists()
    assert "shape.linear_in_features" in kb.by_id
    assert json.loads(_cache_files(tmp_path)[0].read_text())["format"]


def test_the_cache_gives_back_what_the_yaml_gave(tmp_path):
    built = load_knowledge(include_user=False, use_cache=False)
    load_knowledge(include_user=False)
    cached = load_knowledge(include_user=False)
    assert cached.entries == built.entries
    assert any(h.fix and h.fix.rewrites for e in cached.entries for h in e.hypotheses)
    assert any(p.inside for e in cached.entries for p in e.patterns)


def test_the_cache_directory_and_files_are_private(tmp_path):
    load_knowledge(include_user=False)
    directory = tmp_path / "cache" / "torchdoctor"
    assert stat.S_IMODE(directory.stat().st_mode) == 0o700
    for file in _cache_files(tmp_path):
        assert stat.S_IMODE(file.stat().st_mode) == 0o600


@pytest.mark.parametrize("damage", ["truncated", "not json", "wrong types", "unknown probe",
                                    "writable by others"])
def test_a_corrupt_or_foreign_cache_reads_as_absent(tmp_path, damage):
    expected = load_knowledge(include_user=False, use_cache=False)
    load_knowledge(include_user=False)
    [file] = [f for f in _cache_files(tmp_path) if f.name.startswith("knowledge-")]
    text = file.read_text()
    if damage == "truncated":
        file.write_text(text[: len(text) // 2])
    elif damage == "not json":
        file.write_bytes(b"\x80\x04garbage")
    elif damage == "wrong types":
        stored = json.loads(text)
        stored["kb"]["entries"][0]["line"] = "seven"
        file.write_text(json.dumps(stored))
    elif damage == "unknown probe":
        stored = json.loads(text)
        probed = next(h for e in stored["kb"]["entries"] for h in e["hypotheses"] if h["probe"])
        probed["probe"] = "os.system"
        file.write_text(json.dumps(stored))
    else:
        stored = json.loads(text)
        stored["kb"]["entries"][0]["title"] = "Planted by someone else"
        file.write_text(json.dumps(stored))
        file.chmod(0o666)
    kb = load_knowledge(include_user=False)
    assert [e.id for e in kb.entries] == [e.id for e in expected.entries]
    assert [e.title for e in kb.entries] == [e.title for e in expected.entries]
    probes = {h.probe for e in kb.entries for h in e.hypotheses}
    assert "os.system" not in probes


def test_the_shipped_knowledge_base_is_valid():
    directory = shipped_dir()
    errors = check_dir(directory)
    assert not errors, "\n".join(str(e) for e in errors)
    kb = load_knowledge(include_user=False, use_cache=False)
    assert len(kb) == sum(1 for _ in kb.entries)
    for entry in kb.entries:
        assert entry.file.startswith(str(directory))


def test_loading_imports_neither_torch_nor_textual():
    code = (
        "import sys; from torchdoctor import knowledge;"
        f"knowledge.shipped_dir = lambda: __import__('pathlib').Path({str(GOOD)!r});"
        "knowledge.load_knowledge(include_user=False, use_cache=False);"
        "print(sorted(m for m in ('torch', 'textual') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=Path(__file__).parent.parent, check=True)
    assert out.stdout.strip() == "[]"


def torchdoctor(*args: str, env_home: Path) -> subprocess.CompletedProcess:
    env = {**__import__("os").environ, "XDG_CONFIG_HOME": str(env_home / "config"),
           "XDG_CACHE_HOME": str(env_home / "cache")}
    env.pop("TORCHDOCTOR_KB", None)
    return subprocess.run([sys.executable, "-m", "torchdoctor", *args], check=False,
                          capture_output=True,
                          text=True, cwd=Path(__file__).parent.parent, env=env)


def test_kb_check_command(tmp_path):
    ok = torchdoctor("kb", "check", str(GOOD), env_home=tmp_path)
    assert (ok.returncode, ok.stdout.strip()) == (0, "3 entries in 2 files: OK")
    bad = torchdoctor("kb", "check", str(FIXTURES / "kb_bad" / "probe"), env_home=tmp_path)
    assert bad.returncode == 1
    assert "probe/shape.yaml:10: entry shape.probe: hypothesis 'unknown_probe' names unknown " \
           "probe 'tracee'" in bad.stdout
    assert bad.stdout.strip().endswith("4 problem(s) in 1 file(s)")
    missing = torchdoctor("kb", "check", str(tmp_path / "absent"), env_home=tmp_path)
    assert missing.returncode == 2 and "no such knowledge directory" in missing.stderr
    assert "Traceback" not in missing.stderr


def test_kb_check_without_dirs_checks_shipped_and_user_dirs(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(knowledge, "shipped_dir", lambda: GOOD)
    status, out, _ = kb_command(capsys, "kb", "check")
    assert (status, out.strip()) == (0, "3 entries in 2 files: OK")
    config_kb = tmp_path / "config" / "torchdoctor" / "knowledge"
    config_kb.mkdir(parents=True)
    (config_kb / "shape.yaml").write_text("entries: [3]\n")
    status, out, _ = kb_command(capsys, "kb", "check")
    assert status == 1 and "knowledge/shape.yaml:1: an entry must be a mapping" in out
    status, _, err = kb_command(capsys, "--kb", str(tmp_path / "absent"), "kb", "check")
    assert status == 2 and "absent: no such knowledge directory" in err


def kb_command(capsys, *args: str) -> tuple[int, str, str]:
    from torchdoctor.cli import main

    status = main(list(args))
    out, err = capsys.readouterr()
    return status, out, err


def test_kb_list_and_show_commands(monkeypatch, capsys):
    import json

    monkeypatch.setattr(knowledge, "shipped_dir", lambda: GOOD)
    status, out, _ = kb_command(capsys, "kb", "list", "--category", "training")
    assert status == 0
    assert out.splitlines()[0] == "training (1)"
    assert "training.loss_constant" in out and "(1 hypothesis)" in out
    _, out, _ = kb_command(capsys, "kb", "list", "--json")
    entries = json.loads(out)["entries"]
    mine = next(e for e in entries if e["id"] == "training.loss_constant")
    assert (mine["hypotheses"], mine["symptoms"], mine["category"]) == (1, 2, "training")
    status, out, _ = kb_command(capsys, "kb", "show", "training.loss_constant")
    assert status == 0
    assert "## The loss does not move" in out and "optimizer.step()" in out
    _, out, _ = kb_command(capsys, "kb", "show", "training.loss_constant", "--json")
    assert json.loads(out)["hypotheses"][0]["confirm"] == [{"fact": "changed_count", "eq": 0}]
    status, _, err = kb_command(capsys, "kb", "show", "training.loss_constnt")
    assert status == 2 and "did you mean training.loss_constant" in err
    status, _, err = kb_command(capsys, "kb", "list", "--category", "gpu")
    assert status == 2 and "unknown category 'gpu'" in err


def test_kb_list_marks_entries_from_user_dirs(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(knowledge, "shipped_dir", lambda: GOOD)
    user = tmp_path / "mine"
    user.mkdir()
    (user / "shape.yaml").write_text(_user_entry("Mine", "shape.my_own"))
    for args in (("--kb", str(user), "kb", "list"), ("kb", "list", "--kb", str(user))):
        status, out, _ = kb_command(capsys, *args)
        assert status == 0
        line = next(row for row in out.splitlines() if "shape.my_own" in row)
        assert line.endswith("mine/shape.yaml:2]")
    monkeypatch.setattr(knowledge, "shipped_dir", lambda: FIXTURES / "kb_bad" / "probe")
    status, _, err = kb_command(capsys, "kb", "list")
    assert status == 1 and "the knowledge base is invalid (4 problems)" in err


RELATED = """\
entries:
  - id: training.first
    title: First
    category: training
    symptoms: ['first']
    hypotheses:
      - id: symptom
        statement: A symptom.
        why: w
        explained_by: [{first}]
        fix: {{summary: f}}
  - id: training.second
    title: Second
    category: training
    symptoms: ['second']
    hypotheses:
      - id: cause
        statement: A cause.
        why: w
        explained_by: [{second}]
        excludes: [{excludes}]
        fix: {{summary: f}}
"""


def _related(tmp_path, first="training.second", second="training.first/other_hyp_absent",
             excludes="training.first/symptom"):
    (tmp_path / "training.yaml").write_text(RELATED.format(first=first, second=second,
                                                           excludes=excludes))
    return [e.message for e in check_dir(tmp_path)]


def test_explained_by_and_excludes_must_name_existing_causes(tmp_path):
    messages = _related(tmp_path)
    assert any("'explained_by' names 'training.first/other_hyp_absent', which no "
               "knowledge-base entry holds" in m for m in messages), messages
    assert _related(tmp_path, second="training.first/symptom") != []  # a circle, see below
    assert _related(tmp_path, first="training.second/cause", second="numerics.nan_loss") == []


def test_explained_by_may_not_go_round_in_a_circle(tmp_path):
    messages = _related(tmp_path, second="training.first")
    assert sum("goes round in a circle" in m for m in messages) == 2, messages


def test_a_cause_named_in_another_form_is_refused_with_its_line(tmp_path):
    messages = _related(tmp_path, first="'not an id'")
    assert any("'explained_by' names 'not an id', which is not 'category.slug'" in m
               for m in messages), messages
