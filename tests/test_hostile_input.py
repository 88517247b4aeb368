"""Bounded time and memory on any input: pastes, files and knowledge bases built to hurt.

Each case was seen to hang, crash or raise before (see docs/reliability.md). The time
bounds are on CPU time, which other processes on a busy machine do not inflate, and are
far above what a linear pass needs: they fail on a quadratic or exponential one.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from torchdoctor.knowledge import check_dir, load_knowledge
from torchdoctor.match import diagnose
from torchdoctor.parse import parse_traceback

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "fixtures" / "examples" / "linear_mismatch.txt"
CPU_BOUND = 2.0
TRACEBACK = ('Traceback (most recent call last):\n  File "train.py", line 12, in <module>\n'
             "    loss.backward()\nRuntimeError: {}\n")


@pytest.fixture(autouse=True)
def isolated_dirs(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("TORCHDOCTOR_KB", raising=False)


@pytest.fixture(scope="module")
def kb():
    return load_knowledge(include_user=False, use_cache=False)


def torchdoctor(*args: str, stdin: bytes | None = None, env: dict | None = None, **options):
    return subprocess.run([sys.executable, "-m", "torchdoctor", *args], cwd=ROOT, input=stdin,
                          capture_output=True, timeout=60, check=False,
                          env={**os.environ, **(env or {})}, **options)


def cpu_seconds(work) -> tuple[float, object]:
    start = time.process_time()
    result = work()
    return time.process_time() - start, result


HOSTILE = {
    "64 KB of one letter in a message": TRACEBACK.format("a" * 65_536),
    "64 KB of one letter alone": "a" * 65_536,
    "64 KB of one letter on an error line": "RuntimeError: " + "a" * 65_536,
    "20,000 digits in a message": TRACEBACK.format("1" * 20_000),
    "20,000 digits alone": "1" * 20_000,
    "20,000 digits as a file name": TRACEBACK.replace("train.py", "1" * 20_000).format("x"),
    "a 5 MB single line": "x y" * (5 * 2**20 // 3),
    "a 5 MB line after a traceback": TRACEBACK.format("bad") + "ab " * (5 * 2**20 // 3),
    "a 64 KB line before a kernel assertion": "a" * 65_536 + " Assertion `t >= 0` failed.",
    "many 'Expected' in one line": "Expected " * 7_000,
    "6,000 backtick-quoted spans in one line": "Assertion `" * 6_000,
    "6,000 repr openings in one line": "ValueError(" * 6_000,
    "20,000 digits before a progress bar": TRACEBACK.replace("train.py", "1" * 20_000 + "%|"),
    "a 4,400-digit IPython line number": "----> " + "9" * 4_400 + " x = 1\n",
    # a cut message's trailing marks are stripped, never matched by a pattern that backtracks
    "30,000 dots after a cut message": "RuntimeError: CUDA out of memor" + "." * 30_000 + "x",
    # every facet of a description read at once, in two scripts
    "64 KB of symptom words": ("the loss is stuck and GPU memory keeps growing after each epoch "
                               "with 4 workers, 显存一直增长，训练卡住。") * 800,
}


@pytest.mark.parametrize("name", list(HOSTILE))
def test_diagnose_is_linear_on_hostile_text(name, kb):
    elapsed, diagnosis = cpu_seconds(lambda: diagnose(HOSTILE[name], kb))
    assert elapsed < CPU_BOUND, f"{name}: {elapsed:.1f} s of CPU"
    assert diagnosis.input in ("traceback", "symptom")


def test_the_message_around_a_long_run_is_still_read(kb):
    parsed = parse_traceback(TRACEBACK.format("a" * 65_536))
    assert parsed.type == "RuntimeError" and parsed.message.startswith("aaa")


def test_a_4400_digit_line_number_is_no_line_number():
    paste = ('Traceback (most recent call last):\n  File "a.py", line ' + "9" * 4_400
             + ", in step\n    x = f()\nValueError: bad value\n")
    parsed = parse_traceback(paste)
    assert (parsed.type, parsed.message) == ("ValueError", "bad value")
    assert parsed.frames[0].file == "a.py" and parsed.frames[0].line is None


def test_a_catastrophic_user_pattern_runs_in_linear_time(tmp_path):
    (tmp_path / "shape.yaml").write_text(
        "entries:\n  - id: shape.nested\n    title: Nested quantifiers\n    category: shape\n"
        "    patterns:\n      - regex: '(a+)+$'\n"
        "    example: |\n      raise RuntimeError('a')\n"
        "    hypotheses:\n      - {id: h, statement: s, why: w, fix: {summary: f}}\n")
    kb = load_knowledge([tmp_path], include_user=False, use_cache=False)
    assert "shape.nested" in kb.by_id
    elapsed, diagnosis = cpu_seconds(lambda: diagnose("RuntimeError: " + "a" * 40 + "!", kb))
    assert elapsed < CPU_BOUND
    assert "shape.nested" not in [m.entry.id for m in diagnosis.matches]
    assert diagnose("RuntimeError: " + "a" * 40, kb).matches[0].entry.id == "shape.nested"


def test_a_lookahead_in_a_user_file_is_reported_and_skipped(tmp_path, capsys):
    (tmp_path / "shape.yaml").write_text(
        "entries:\n  - id: shape.ahead\n    title: Lookahead\n    category: shape\n"
        "    patterns:\n      - regex: 'size (?!0)\\d+'\n"
        "    example: |\n      raise RuntimeError('size 3')\n"
        "    hypotheses:\n      - {id: h, statement: s, why: w, fix: {summary: f}}\n")
    [problem] = check_dir(tmp_path)
    assert (Path(problem.file).name, problem.line) == ("shape.yaml", 6)
    assert "does not compile under RE2" in problem.message
    kb = load_knowledge([tmp_path], include_user=False, use_cache=False)
    assert "shape.ahead" not in kb.by_id
    assert "shape.yaml:6" in capsys.readouterr().err


def test_an_inside_lookahead_is_reported_with_its_line_and_the_pattern_skipped(tmp_path):
    (tmp_path / "shape.yaml").write_text(
        "entries:\n  - id: shape.framed\n    title: Framed\n    category: shape\n"
        "    patterns:\n      - regex: 'size \\d+'\n        inside: 'bmm(?!x)'\n"
        "    example: |\n      raise RuntimeError('size 3')\n"
        "    hypotheses:\n      - {id: h, statement: s, why: w, fix: {summary: f}}\n")
    problems = check_dir(tmp_path)
    assert any((Path(p.file).name, p.line) == ("shape.yaml", 7)
               and "inside" in p.message and "RE2" in p.message for p in problems), problems


def test_every_shipped_regex_compiles_under_re2(kb):
    import re2

    options = re2.Options()
    options.log_errors = False
    regexes = [p.regex for e in kb.entries for p in e.patterns + e.symptoms]
    regexes += [p.unless for e in kb.entries for p in e.patterns if p.unless]
    regexes += [p.inside for e in kb.entries for p in e.patterns if p.inside]
    assert len(regexes) > 100
    for regex in regexes:
        re2.compile(regex, options)


def test_unless_vetoes_only_what_it_names(kb):
    killed = "RuntimeError: DataLoader worker (pid 4721) is killed by signal: {}. "
    assert diagnose(killed.format("Killed"), kb).matches[0].entry.id == "dataloader.worker_killed"
    bus = [m.entry.id for m in diagnose(killed.format("Bus error"), kb).matches]
    assert "dataloader.worker_killed" not in bus and bus[0] == "dataloader.worker_bus_error_shm"


# --- terminal control sequences ---------------------------------------------------

OSC8_PASTE = (
    "Traceback (most recent call last):\n"
    '  File "\x1b]8;;file:///home/ada/train.py\x1b\\train.py\x1b]8;;\x1b\\", line 19, in forward\n'
    "    x = F.relu(self.fc1(x))\n"
    "\x1b[31mRuntimeError\x1b[0m: mat1 and mat2 shapes cannot be multiplied (64x57600 and "
    "9216x128)\x07\n"
)
CONTROLS = [
    ("osc52 clipboard, ST", "\x1b]52;c;ZWNobyBoaQ==\x1b\\"),
    ("osc title, BEL", "\x1b]0;owned\x07"),
    ("dcs", "\x1bP+q544e\x1b\\"),
    ("apc", "\x1b_hidden\x1b\\"),
    ("pm", "\x1b^private\x1b\\"),
    ("c1 csi", "\x9b2J"),
    ("c1 osc", "\x9d0;owned\x9c"),
    ("cursor up", "\x1b[2A"),
    ("charset", "\x1b(B"),
    ("lone esc", "\x1b"),
    ("backspaces", "\x08\x08\x08"),
]


def test_a_pasted_hyperlink_does_not_swallow_the_traceback():
    parsed = parse_traceback(OSC8_PASTE)
    assert parsed.type == "RuntimeError"
    assert parsed.message.startswith("mat1 and mat2 shapes cannot be multiplied")
    assert parsed.frames[0].file == "train.py" and parsed.frames[0].line == 19


@pytest.mark.parametrize(("name", "sequence"), CONTROLS, ids=[c[0] for c in CONTROLS])
def test_control_sequences_are_removed_before_parsing(name, sequence, kb):
    paste = TRACEBACK.format(f"mat1 and mat2 shapes cannot{sequence} be multiplied (2x3 and 4x5)")
    diagnosis = diagnose(paste, kb)
    assert diagnosis.error.message == "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)"
    assert diagnosis.matches[0].entry.id == "shape.linear_in_features"
    dumped = json.dumps(diagnosis.to_dict(), ensure_ascii=False) + diagnosis.text
    assert not any(ord(c) < 32 and c not in "\n\t\r" or 0x7F <= ord(c) <= 0x9F for c in dumped)


def test_an_unterminated_control_string_costs_one_line_at_most():
    parsed = parse_traceback("\x1b]8;;http://example.com\n" + TRACEBACK.format("bad value"))
    assert (parsed.type, parsed.message) == ("RuntimeError", "bad value")


def test_nothing_from_the_paste_acts_on_the_terminal():
    result = torchdoctor("diagnose", "-", stdin=OSC8_PASTE.encode()
                         + "\x1b]52;c;ZWNobyBoaQ==\x1b\\\x9d0;x\x9c\n".encode())
    out = result.stdout.decode()
    assert result.returncode == 0, result.stderr
    assert "mat1 and mat2 shapes cannot be multiplied" in out
    for control in ("\x1b", "\x07", "\x9b", "\x9c", "\x9d"):
        assert control not in out


# --- input caps -------------------------------------------------------------------


def test_dev_zero_stops_with_a_clear_message():
    result = torchdoctor("diagnose", "/dev/zero")
    err = result.stderr.decode()
    assert result.returncode == 2
    assert "only NUL bytes" in err and "stopped reading /dev/zero after 64 MiB" in err
    assert "Traceback" not in err


def test_closed_standard_input_is_a_clear_error():
    for args in (["diagnose", "-"], ["diagnose"]):
        result = torchdoctor(*args, preexec_fn=lambda: os.close(0))
        err = result.stderr.decode()
        assert result.returncode == 2, err
        assert "Traceback" not in err and "AttributeError" not in err
        assert "standard input is closed" in err or "nothing to diagnose" in err


def test_a_traceback_padded_with_nul_bytes_is_read():
    result = torchdoctor("diagnose", "-", "--json", stdin=FIXTURE.read_bytes() + b"\0" * 100_000)
    assert result.returncode == 0, result.stderr
    shape = json.loads(result.stdout)
    assert shape["matches"][0]["entry"] == "shape.linear_in_features"
    assert any("NUL bytes" in note for note in shape["notes"])


def test_a_log_larger_than_the_cap_keeps_its_tail_and_says_so(tmp_path):
    log = tmp_path / "train.log"
    line = b"2024-01-01 12:00:00 step 1 loss 0.5 " + b"." * 60 + b"\n"
    log.write_bytes(line * (9 * 2**20 // len(line)) + FIXTURE.read_bytes())
    result = torchdoctor("diagnose", str(log), "--json")
    assert result.returncode == 0, result.stderr
    shape = json.loads(result.stdout)
    assert shape["matches"][0]["entry"] == "shape.linear_in_features"
    assert any("only its last 8 MiB were read" in note for note in shape["notes"])


# --- hostile YAML -----------------------------------------------------------------

HOSTILE_YAML = {
    "brackets": "entries:\n  - id: shape.deep\n    title: " + "[" * 100_000 + "]" * 100_000 + "\n",
    "block sequences": "entries:\n  " + "- " * 100_000 + "x\n",
    "billion laughs": "entries:\n  - id: shape.laughs\n    l0: &l0 [lol, lol, lol, lol, lol]\n"
    + "".join(f"    l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 9) + "]\n" for i in range(1, 10)),
}


@pytest.mark.parametrize("name", list(HOSTILE_YAML))
def test_kb_check_refuses_hostile_yaml_with_file_and_line(name, tmp_path):
    (tmp_path / "shape.yaml").write_text(HOSTILE_YAML[name])
    result = torchdoctor("kb", "check", str(tmp_path))
    out = result.stdout.decode()
    assert result.returncode == 1, (result.returncode, result.stderr[-500:])
    assert "shape.yaml:" in out and "YAML refused" in out


@pytest.mark.parametrize("name", list(HOSTILE_YAML))
def test_a_hostile_user_knowledge_folder_is_skipped(name, tmp_path):
    (tmp_path / "shape.yaml").write_text(HOSTILE_YAML[name])
    result = torchdoctor("diagnose", str(FIXTURE), env={"TORCHDOCTOR_KB": str(tmp_path)})
    err = result.stderr.decode()
    assert result.returncode == 0, err[-500:]
    assert "YAML refused" in err and "left out of the knowledge base" in err
    assert "mat1 and mat2" in result.stdout.decode()
