"""The report from a journal: its sections, JSON, redaction, torn journals, and the commands."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time

import pytest

from torchdoctor.cli import main as cli_main
from torchdoctor.journal import read_events
from torchdoctor.redact import Redactor
from torchdoctor.report import build_report, render_markdown
from torchdoctor.session import Session

HOME = os.path.expanduser("~")
SCRIPT = os.path.join(HOME, "work", "cifar", "train.py")
MESSAGE = "mat1 and mat2 shapes cannot be multiplied (8x57600 and 9216x128)"
KEY = "shape.linear_in_features/flatten_size"
DIAGNOSIS = {
    "error": {"type": "RuntimeError", "message": MESSAGE, "phase": "forward",
              "user_frame": {"file": SCRIPT, "line": 30, "function": "forward",
                             "code": "x = self.classifier(x)"}},
    "matches": [{"entry": "shape.linear_in_features", "title": "Linear gets the wrong features",
                 "hypotheses": [
                     {"id": "flatten_size", "statement": "57600 features reach a Linear built"
                      " for 9216", "probe": {"name": "trace", "params": {}},
                      "fix": {"summary": "Set in_features=57600", "before": "nn.Linear(9216, 128)",
                              "after": "nn.Linear(57600, 128)"}},
                     {"id": "batch_folded", "statement": "the batch was flattened away",
                      "probe": {"name": "trace", "params": {}}},
                 ]}],
}
TRACEBACK = (f'Traceback (most recent call last):\n  File "{SCRIPT}", line 30, in forward\n'
             f"    x = self.classifier(x)\nRuntimeError: {MESSAGE}\n")


def recorded_session(root, repro_source: str | None = "import torch\n") -> Session:
    session = Session.start(root, kind="run", target=SCRIPT)
    session.record_input(TRACEBACK, source="script")
    session.goto("gather")
    session.record_diagnosis(DIAGNOSIS)
    session.record_probe({"probe": "env", "status": "pass", "summary": "torch 2.x on cpu",
                          "facts": {"torch": "2.13.0", "python": "3.11.7", "os": "Linux",
                                    "cuda": None, "cudnn": None, "cuda_available": False,
                                    "devices": [{"name": "cpu"}],
                                    "env_vars": ["OMP_NUM_THREADS"]}})
    session.goto("test")
    session.record_probe({"probe": "trace", "status": "fail", "hypothesis": KEY,
                          "verdict": "confirmed", "summary": "features.3 emits 64 × 30 × 30",
                          "location": {"module": "classifier.0", "op": "F.linear",
                                       "file": SCRIPT, "line": 30}, "facts": {}})
    session.set_state("shape.linear_in_features/batch_folded", "rejected", "batch dim is 8")
    session.note(f"checked on {socket.gethostname()} as seen in {HOME}/notes.txt")
    session.goto("fix")
    session.record_fix("Set in_features=57600", KEY)
    if repro_source is not None:
        path = session.journal.directory / "repro.py"
        path.write_text(repro_source)
        session.record_repro(verified=True, level="module", what="Linear", path=str(path),
                             files=[], lines=1, seconds=1.25, command="python repro.py",
                             error={"type": "RuntimeError", "message": MESSAGE},
                             expected={"type": "RuntimeError", "message": MESSAGE},
                             attempts=[], reason="")
    session.close()
    return session


def test_markdown_has_every_section_a_maintainer_needs(tmp_path):
    session = recorded_session(tmp_path)
    markdown = render_markdown(build_report(session.journal.directory))
    for heading in ("## Summary", "## Environment", "## Error", "## Timeline",
                    "## Hypothesis log", "## Fix and verification", "## Minimal repro"):
        assert heading in markdown
    summary = markdown.split("## Summary")[1].split("##")[0]
    assert "RuntimeError" in summary and "57600 features reach a Linear" in summary
    assert "classifier.0" in summary and "Set in_features=57600" in summary
    assert "<details><summary>Traceback</summary>" in markdown and TRACEBACK.strip() in markdown
    assert "| 57600 features reach a Linear built for 9216 | trace | **confirmed** |" in markdown
    assert "| the batch was flattened away | trace | rejected | batch dim is 8 |" in markdown
    assert "### Gather" in markdown and "### Test" in markdown and "### Fix & verify" in markdown
    assert "| PyTorch | 2.13.0 |" in markdown
    assert "```python\nimport torch\n```" in markdown and "size: 1 lines" in markdown
    assert "nn.Linear(57600, 128)" in markdown


def test_json_export_carries_the_same_content(tmp_path):
    session = recorded_session(tmp_path)
    assert cli_main(["report", "--root", str(tmp_path), "--json"]) == 0
    data = json.loads((session.journal.directory / "report.json").read_text())
    assert data["error"]["type"] == "RuntimeError" and data["repro"]["verified"]
    assert [h["verdict"] for h in data["hypotheses"]] == ["confirmed", "rejected"]
    assert data["summary"] == build_report(session.journal.directory)["summary"]
    assert [p["phase"] for p in data["timeline"]] == ["reproduce", "gather", "test", "fix"]


def test_unverified_repro_says_so_and_shows_no_script(tmp_path):
    session = Session.start(tmp_path, kind="run", target="train.py")
    session.record_diagnosis(DIAGNOSIS)
    session.record_repro(verified=False, reason="no candidate failed the same way: module:"
                         " ran clean", attempts=[])
    session.close()
    markdown = render_markdown(build_report(session.journal.directory))
    repro = markdown.split("## Minimal repro")[1]
    assert "**No verified repro.**" in repro and "ran clean" in repro and "```" not in repro
    assert "No environment was recorded" in markdown


def test_redact_leaves_no_home_user_or_host(tmp_path):
    session = recorded_session(tmp_path)
    extra = Session.resume(session.journal.directory)[0]
    extra.note("copied from /home/alice/data and /Users/bob/x and C:\\Users\\carol\\y")
    extra.close()
    assert cli_main(["report", "--root", str(tmp_path), "--redact", "-o",
                     str(tmp_path / "out.md")]) == 0
    text = (tmp_path / "out.md").read_text()
    for leak in (HOME + "/", "/home/alice", "/Users/bob", "carol"):
        assert leak not in text
    assert not re.search(rf"(?<![\w-]){re.escape(socket.gethostname())}(?![\w-])", text)
    assert "~/work/cifar/train.py" in text and "/home/<user>/data" in text
    assert "OMP_NUM_THREADS" not in text  # variables' names and values stay out


def test_redactor_handles_each_form_of_home():
    redactor = Redactor(home="/home/dana", user="dana", host="lab-gpu-7")
    text = redactor.text("/home/dana/a.py, /home/eve/b.py, C:\\Users\\fay\\c.py,"
                         " dana@lab-gpu-7, /Users/gus/d")
    assert text == ("~/a.py, /home/<user>/b.py, C:\\Users\\<user>\\c.py, <user>@<host>,"
                    " /Users/<user>/d")


def test_a_journal_killed_mid_write_still_renders_and_resumes(tmp_path):
    session = recorded_session(tmp_path, repro_source=None)
    path = session.journal.path
    with open(path, "a", encoding="utf-8") as f:
        f.write('{"v": 1, "seq": 99, "type": "probe", "summ')  # the event in flight
    report = build_report(session.journal.directory)
    assert report["error"]["type"] == "RuntimeError" and len(report["warnings"]) == 1
    assert "## Journal warnings" in render_markdown(report)
    resumed, warnings = Session.resume(session.journal.directory)
    assert len(warnings) == 1
    resumed.note("continued after the crash")
    resumed.close()
    events, _ = read_events(path)
    assert events[-1]["text"] == "continued after the crash"
    assert build_report(session.journal.directory)["notes"][-1] == "continued after the crash"


def test_report_command_writes_beside_the_session_and_copies_the_repro(tmp_path, capsys):
    session = recorded_session(tmp_path)
    assert cli_main(["report", session.id[:15], "--root", str(tmp_path)]) == 0
    written = capsys.readouterr().out.strip()
    assert written == str(session.journal.directory / "report.md")
    elsewhere = tmp_path / "issue" / "report.md"
    assert cli_main(["report", "--root", str(tmp_path), "-o", str(elsewhere)]) == 0
    assert (elsewhere.parent / "repro.py").read_text() == "import torch\n"


def test_report_and_sessions_commands_explain_bad_input(tmp_path, capsys):
    assert cli_main(["report", "--root", str(tmp_path)]) == 2
    assert "no sessions recorded" in capsys.readouterr().err
    assert cli_main(["report", "nope", "--root", str(tmp_path)]) == 2
    assert cli_main(["sessions", "--root", str(tmp_path)]) == 0
    assert "no sessions recorded" in capsys.readouterr().out


def test_a_description_only_read_like_entries_is_reported_as_resemblance(tmp_path):
    from torchdoctor.knowledge import load_knowledge
    from torchdoctor.match import diagnose

    text = "my loss won't budge at all, it sits there epoch after epoch"
    diagnosis = diagnose(text, load_knowledge(include_user=False, use_cache=False, report=False))
    assert diagnosis.matches and {m.kind for m in diagnosis.matches} == {"reads_like"}
    session = Session.start(tmp_path, kind="diagnose")
    session.record_input(text, source="symptom")
    session.goto("gather")
    session.record_diagnosis(diagnosis.to_dict())
    markdown = render_markdown(build_report(session.journal.directory))
    session.close()
    best = diagnosis.matches[0]
    assert f"reads most like the reports of {best.entry.title}" in markdown
    assert f"{len(diagnosis.matches)} read like the description: {best.entry.id}" in markdown
    assert "knowledge-base matches" not in markdown


def test_sessions_lists_newest_first(tmp_path, capsys):
    older = recorded_session(tmp_path)
    time.sleep(1.1)
    newer = Session.start(tmp_path, kind="diagnose")
    newer.record_input("loss is stuck", source="symptom")
    newer.close()
    assert cli_main(["sessions", "--root", str(tmp_path), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["id"] for r in rows] == [newer.id, older.id]
    assert rows[0]["title"] == "loss is stuck" and rows[1]["title"].startswith("RuntimeError")
    assert cli_main(["sessions", "--root", str(tmp_path)]) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[0].startswith("ID") and newer.id in table[1] and older.id in table[2]


@pytest.mark.skipif(sys.platform == "win32", reason="subprocess import check")
def test_writing_a_report_never_imports_torch(tmp_path):
    session = recorded_session(tmp_path)
    code = ("import sys; from torchdoctor.cli import main; "
            f"assert main(['report', '--root', {str(tmp_path)!r}]) == 0; "
            "assert 'torch' not in sys.modules, 'torch was imported'")
    done = subprocess.run([sys.executable, "-c", code], cwd=os.getcwd(), capture_output=True,
                          text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert (session.journal.directory / "report.md").is_file()
