"""``torchdoctor diagnose`` as a user runs it: real processes, real exit codes."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from torchdoctor.commands import diagnose as diagnose_command
from torchdoctor.render import FIVE_PHASES

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "fixtures" / "examples" / "linear_mismatch.txt"


def torchdoctor(*args: str, stdin: bytes | None = None, env: dict | None = None):
    environment = {**os.environ, **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "torchdoctor", *args], cwd=ROOT, input=stdin,
        capture_output=True, timeout=60, env=environment, check=False,
    )


def text_of(result) -> str:
    return result.stdout.decode("utf-8")


def test_the_readme_example_explains_the_linear_mismatch():
    result = torchdoctor("diagnose", str(FIXTURE))
    out = text_of(result)
    assert result.returncode == 0, result.stderr
    assert "RuntimeError" in out and "mat1 and mat2 shapes cannot be multiplied" in out
    assert "train.py:19 in forward" in out
    assert "x = F.relu(self.fc1(x))" in out
    assert "phase: forward" in out
    assert "57600 = 64 × 30 × 30" in out
    assert "\x1b[" not in out, "no colour codes when stdout is not a terminal"
    assert "Traceback" not in result.stderr.decode()


def test_json_has_the_documented_shape_and_honours_top():
    result = torchdoctor("diagnose", str(FIXTURE), "--json", "--top", "1")
    assert result.returncode == 0, result.stderr
    shape = json.loads(result.stdout)
    assert shape["error"]["type"] == "RuntimeError"
    assert shape["error"]["user_frame"]["function"] == "forward"
    assert len(shape["matches"]) == 1
    best = shape["matches"][0]
    assert best["category"] == "shape"
    assert best["fields"]["features"] == "57600"
    assert best["hypotheses"] and {"id", "statement", "probe", "fix"} <= set(best["hypotheses"][0])


def test_reads_standard_input_with_a_dash():
    result = torchdoctor("diagnose", "-", "--json", stdin=FIXTURE.read_bytes())
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["matches"][0]["fields"]["in_features"] == "9216"


def test_nothing_matched_exits_1_and_offers_the_five_phases():
    result = torchdoctor("diagnose", "-", stdin=b"ZorbleError: the frobnicator is sad\n")
    out = text_of(result)
    assert result.returncode == 1
    assert "Nothing matched" in out
    for name, _step in FIVE_PHASES:
        assert name in out
    as_json = torchdoctor("diagnose", "-", "--json", stdin=b"ZorbleError: sad\n")
    assert as_json.returncode == 1
    assert json.loads(as_json.stdout)["matches"] == []


@pytest.mark.parametrize(
    ("args", "stdin", "says"),
    [
        (["diagnose", "-"], b"", "empty"),
        (["diagnose", "-"], b"  \n\t\n", "empty"),
        (["diagnose", "no/such/file.txt"], None, "no such file"),
        (["diagnose", "tests"], None, "is a directory"),
        (["diagnose", "-"], bytes(range(256)) * 40, "binary"),
        (["diagnose", "-", "--top", "0"], b"x", "--top"),
    ],
    ids=["empty", "blank", "missing", "directory", "binary", "top0"],
)
def test_bad_input_exits_2_with_one_clear_line(args, stdin, says):
    result = torchdoctor(*args, stdin=stdin)
    err = result.stderr.decode()
    assert result.returncode == 2
    assert says in err
    assert "Traceback" not in err


def test_non_utf8_input_is_decoded_with_a_note():
    paste = FIXTURE.read_bytes().replace(b"mnist_demo", b"mnist_d\xe9mo")
    result = torchdoctor("diagnose", "-", "--json", stdin=paste)
    assert result.returncode == 0
    shape = json.loads(result.stdout)
    assert any("not valid UTF-8" in note for note in shape["notes"])
    assert shape["matches"][0]["fields"]["features"] == "57600"


def test_utf16_paste_from_windows_is_read():
    paste = FIXTURE.read_text().encode("utf-16")
    result = torchdoctor("diagnose", "-", "--json", stdin=paste)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["error"]["type"] == "RuntimeError"


def test_prose_symptom_on_the_command_line():
    result = torchdoctor("diagnose", "-", stdin=b"loss stays at 2.30 with 10 classes\n")
    out = text_of(result)
    assert "No traceback found" in out
    assert "loss = 2.30" in out


def test_a_large_log_with_the_error_at_the_end():
    noise = b"".join(b"2024-01-01 12:00:%02d step %d loss 0.5\n" % (i % 60, i)
                     for i in range(200_000))
    result = torchdoctor("diagnose", "-", "--json", stdin=noise + FIXTURE.read_bytes())
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["matches"][0]["fields"]["features"] == "57600"


def test_a_broken_user_knowledge_dir_is_reported_not_fatal(tmp_path):
    (tmp_path / "shape.yaml").write_text("entries:\n  - id: shape.broken\n    title: [unclosed\n")
    result = torchdoctor("--kb", str(tmp_path), "diagnose", str(FIXTURE))
    err = result.stderr.decode()
    assert result.returncode == 0
    assert "shape.yaml" in err
    assert "Traceback" not in err


def test_no_file_on_a_terminal_explains_how_to_paste(monkeypatch, capsys):
    class Terminal:
        def isatty(self):
            return True

    monkeypatch.setattr(sys, "stdin", Terminal())
    args = type("Args", (), {"file": None, "json": False, "top": 3, "kb": []})()
    assert diagnose_command.run(args) == 2
    err = capsys.readouterr().err
    assert "pbpaste | torchdoctor diagnose -" in err


def test_a_confident_match_is_worded_probably_and_a_weaker_one_a_guess():
    confident = text_of(torchdoctor("diagnose", str(FIXTURE)))
    assert "What it probably is" in confident and "1. probably: " in confident
    guess = torchdoctor("diagnose", "-", stdin=b"loss stays at 2.30 with 10 classes\n")
    assert guess.returncode == 0, guess.stderr
    out = text_of(guess)
    assert "a guess" in out and "What it probably is" not in out


UNRECOGNISED_CHECKPOINT = b"""Traceback (most recent call last):
  File "train.py", line 9, in <module>
    model.load_state_dict(torch.load("model.pth"))
KeyError: 'state_dict' not found in checkpoint
"""


def test_an_unrecognised_error_shows_similar_entries_and_the_question_not_a_dead_end():
    result = torchdoctor("diagnose", "-", stdin=UNRECOGNISED_CHECKPOINT)
    out = text_of(result)
    assert result.returncode == 1, "nothing was recognised"
    assert "Nothing matched" not in out
    assert "1. similar, not recognised: " in out and "To tell them apart:" in out
    shape = json.loads(torchdoctor("diagnose", "-", "--json", "--top", "2",
                                   stdin=UNRECOGNISED_CHECKPOINT).stdout)
    assert shape["kind"] == "similar" and shape["matches"] == []
    assert len(shape["similar"]) == 2
    assert {m["kind"] for m in shape["similar"]} == {"similar"}
    assert {m["category"] for m in shape["similar"]} == {"state_dict"}
    assert shape["question"]


def test_an_error_from_another_library_is_named_with_its_frame():
    paste = (b'Traceback (most recent call last):\n  File "train.py", line 40, in <module>\n'
             b'    for x, y in loader:\n  File "/home/me/data.py", line 22, in __getitem__\n'
             b'    img = open(self.root + name, "rb")\n'
             b"FileNotFoundError: [Errno 2] No such file or directory: 'imagesfoo_1.png'\n")
    out = text_of(torchdoctor("diagnose", "-", stdin=paste))
    assert "Not a torch error: a file or folder path that does not exist" in out
    assert "raised at /home/me/data.py:22 in __getitem__" in out


def test_the_test_it_hint_names_the_script_the_traceback_ran():
    paste = (
        "Traceback (most recent call last):\n"
        '  File "/home/me/gan/train_gan.py", line 88, in <module>\n    main()\n'
        '  File "/home/me/gan/models.py", line 30, in forward\n    x = self.fc(x)\n'
        "RuntimeError: mat1 and mat2 shapes cannot be multiplied (64x57600 and 9216x128)\n")
    hints = [line for line in text_of(torchdoctor("diagnose", "-", stdin=paste.encode()))
             .splitlines() if "test it:" in line]
    assert hints and all("torchdoctor run train_gan.py" in line for line in hints
                         if "torchdoctor run" in line)
    assert not any("train.py" in line for line in hints)
