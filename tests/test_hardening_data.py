"""A session folder is data from anyone: the report never runs it, never leaves it, redacts
every secret, survives malformed events, is journaled from the first second, and is
written by one process at a time.

Each test builds a real session with the real journal, crafts what an attacker or a
crash would leave behind, and drives the real commands.
"""

from __future__ import annotations

import base64
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import torchdoctor
from torchdoctor.cli import main as cli_main
from torchdoctor.journal import JOURNAL_NAME, find_session, list_sessions, read_events
from torchdoctor.redact import Redactor
from torchdoctor.report import build_report, render_markdown
from torchdoctor.session import Session

ROOT_OF_CODE = str(Path(torchdoctor.__file__).resolve().parent.parent)
KEY_ERROR = {"type": "KeyError", "message": "'labels'"}
RAISE_KEY_ERROR = "batch = {}\nbatch['labels']\n"
T = "2026-01-02T03:04:05.000+00:00"


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def pending_session(root: Path, source: str, files: dict[str, str] | None = None,
                    level: str = "op") -> Path:
    """A session killed after the repro probe wrote its sources and before they were verified."""
    session = Session.start(root, kind="run", target=None)
    session.record_diagnosis({"error": KEY_ERROR, "matches": []})
    session.record_probe({"probe": "repro", "status": "pass", "summary": "sources",
                          "facts": {"levels": [{"level": level, "source": source,
                                                "what": "a dict lookup",
                                                "files": files or {}}]}})
    session.close()
    return session.journal.directory


def crafted_session(root: Path, name: str, events: list[dict]) -> Path:
    directory = root / name
    directory.mkdir(parents=True)
    with open(directory / JOURNAL_NAME, "w", encoding="utf-8") as f:
        f.writelines(json.dumps(event) + "\n" for event in events)
    return directory


def doctor_env(sessions: Path) -> dict[str, str]:
    path = os.pathsep.join(p for p in (ROOT_OF_CODE, os.environ.get("PYTHONPATH")) if p)
    return {**os.environ, "PYTHONPATH": path, "TORCHDOCTOR_SESSIONS": str(sessions)}


def doctor(*args: str, sessions: Path, **options) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "torchdoctor", *args],
                            env=doctor_env(sessions), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, **options)


def wait_for(path: Path, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while not path.exists():
        assert time.monotonic() < deadline, f"{path.name} never appeared"
        time.sleep(0.05)


# ------------------------------------------------------------------ 1. report is data-only


def test_report_runs_no_recorded_code_unless_rerun_is_asked(tmp_path, capsys):
    marker = tmp_path / "ran"
    source = f"open({str(marker)!r}, 'a').write('x')\n" + RAISE_KEY_ERROR
    root = tmp_path / "sessions"
    directory = pending_session(root, source)

    assert cli_main(["report", "--root", str(root)]) == 0
    err = capsys.readouterr().err
    assert not marker.exists()
    assert f"torchdoctor report {directory.name} --rerun" in err
    assert "python repro.py" in err  # what --rerun would run, shown before it is asked for
    markdown = (directory / "report.md").read_text()
    assert "--rerun" in markdown.split("## Minimal repro")[1]
    assert not [e for e in read_events(directory / JOURNAL_NAME)[0] if e["type"] == "repro"]

    assert cli_main(["report", directory.name, "--root", str(root), "--rerun"]) == 0
    assert marker.read_text() == "x"
    assert "python repro.py" in capsys.readouterr().err  # shown as it runs
    assert "Verified" in (directory / "report.md").read_text()


def test_file_names_from_the_journal_never_reach_outside_the_session(tmp_path):
    root = tmp_path / "sessions"
    outside = tmp_path / "absolute.txt"
    directory = pending_session(root, RAISE_KEY_ERROR, files={
        "../../../../escaped.txt": b64("x"), str(outside): b64("y")})
    traversal_level = pending_session(root, RAISE_KEY_ERROR, level="../../../../level")

    for session in (directory, traversal_level):
        assert cli_main(["report", session.name, "--root", str(root), "--rerun"]) == 0
    assert not list(tmp_path.rglob("escaped.txt")) and not outside.exists()
    assert not list(tmp_path.rglob("level")) and not (tmp_path / "repro.py").exists()
    for session in (directory, traversal_level):
        repro = build_report(session)["repro"]
        assert not repro["verified"] and "refused" in repro["reason"]


def test_a_path_in_the_journal_is_never_read_or_copied(tmp_path):
    root = tmp_path / "sessions"
    secret = tmp_path / "id_rsa"
    secret.write_text("-----BEGIN OPENSSH PRIVATE KEY-----\nprivate\n")
    session = Session.start(root, kind="run")
    session.record_diagnosis({"error": KEY_ERROR, "matches": []})
    session.record_repro(verified=True, level="module", what="x", path=str(secret),
                         files=["../../id_rsa", str(secret)], lines=1, seconds=0.1,
                         command="python repro.py", error=KEY_ERROR, expected=KEY_ERROR,
                         attempts=[], reason="")
    session.close()
    out = tmp_path / "out" / "deeper"
    assert cli_main(["report", session.id, "--root", str(root), "-o",
                     str(out / "report.md")]) == 0
    for written in (tmp_path / "out").rglob("*.*"):
        assert "PRIVATE KEY" not in written.read_text(), written
    assert sorted(p.name for p in out.iterdir()) == ["report.md"]
    assert not (tmp_path / "out" / "id_rsa").exists()


def test_symlinks_in_a_session_are_refused_never_followed(tmp_path, capsys):
    root = tmp_path / "sessions"
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    directory = pending_session(root, RAISE_KEY_ERROR)
    (directory / "report.md").symlink_to(victim)
    assert cli_main(["report", directory.name, "--root", str(root)]) == 2
    assert "symbolic link" in capsys.readouterr().err and victim.read_text() == "keep me"

    (directory / "report.md").unlink()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (directory / "repro").symlink_to(elsewhere)
    assert cli_main(["report", directory.name, "--root", str(root), "--rerun"]) == 2
    assert "symbolic link" in capsys.readouterr().err and not any(elsewhere.iterdir())

    other = pending_session(root, RAISE_KEY_ERROR)
    (other / JOURNAL_NAME).rename(tmp_path / "foreign.jsonl")
    (other / JOURNAL_NAME).symlink_to(tmp_path / "foreign.jsonl")
    assert cli_main(["report", other.name, "--root", str(root), "-o", "-"]) == 2
    assert "symbolic link" in capsys.readouterr().err


def test_the_latest_session_is_the_last_one_this_user_started(tmp_path, monkeypatch):
    root = tmp_path / "sessions"
    mine = Session.start(root, kind="diagnose")
    mine.close()
    start = {"v": 1, "seq": 0, "type": "session", "kind": "run", "target": "evil.py"}
    crafted_session(root, "99999999-999999-ffff", [{**start, "t": "2020-01-01T00:00:00+00:00"}])
    crafted_session(root, "99999999-999999-eeee", [{**start, "t": "2999-01-01T00:00:00+00:00"}])
    assert find_session("", root) == mine.journal.directory

    uid = os.geteuid()
    monkeypatch.setattr(os, "geteuid", lambda: uid + 1)
    with pytest.raises(LookupError, match="none was started by you"):
        find_session("", root)


# ------------------------------------------------------------------ 3. --redact

SECRETS = {
    "hf": "hf_aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zQ",
    "aws": "AKIAIOSFODNN7EXAMPLE",
    "email": "dana.lee@example.org",
    "ghp": "ghp_1a2B3c4D5e6F7g8H9i0J1k2L3m4N5o6P7q8R",
    "github_pat": "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCD",
    "openai": "sk-proj-Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0Fe",
    "jwt": "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0"
           ".dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    "aws_secret": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "hex": "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
}


def secret_session(root: Path) -> Session:
    message = (f"401 Client Error for https://huggingface.co with token {SECRETS['hf']}"
               f" (AWS key {SECRETS['aws']}); ask {SECRETS['email']}")
    error = {"type": "OSError", "message": message}
    session = Session.start(root, kind="run", target="train.py",
                            argv=["--token", SECRETS["ghp"], "--pat", SECRETS["github_pat"]])
    session.record_input(f"Traceback (most recent call last):\nOSError: {message}\n",
                         source="script")
    session.record_diagnosis({"error": error, "matches": []})
    directory = session.journal.directory
    (directory / "repro.py").write_text(f"API_KEY = {SECRETS['openai']!r}\n"
                                        f"SESSION = {SECRETS['jwt']!r}\nraise OSError()\n")
    (directory / "config.json").write_text(json.dumps({"secret": SECRETS["aws_secret"],
                                                       "digest": SECRETS["hex"]}))
    (directory / "inputs.bin").write_bytes(b"\x80\x03PK\x00" + SECRETS["hf"].encode() + b"\xff")
    session.record_repro(verified=True, level="script", what="the script", path="repro.py",
                         files=["config.json", "inputs.bin"], lines=3, seconds=0.2,
                         command=f"python repro.py --token {SECRETS['ghp']}", error=error,
                         expected=error, attempts=[], reason="")
    session.close()
    return session


def test_redact_removes_every_common_secret_from_every_exported_file(tmp_path, capsys):
    root = tmp_path / "sessions"
    session = secret_session(root)
    out = tmp_path / "issue"
    assert cli_main(["report", session.id, "--root", str(root), "--redact", "-o",
                     str(out / "report.md")]) == 0
    assert cli_main(["report", session.id, "--root", str(root), "--redact", "--json", "-o",
                     str(out / "report.json")]) == 0
    summary = capsys.readouterr().err.strip().splitlines()[-1]
    exported = sorted(p.name for p in out.iterdir())
    assert exported == ["config.json", "report.json", "report.md", "repro.py"]
    for path in out.iterdir():
        data = path.read_bytes()
        for kind, secret in SECRETS.items():
            assert secret.encode() not in data, f"{kind} left in {path.name}"
    assert "<hf-token>" in (out / "report.md").read_text()
    assert "<api-key>" in (out / "repro.py").read_text()
    assert json.loads((out / "report.json").read_text())["session"]["argv"][1] == "<github-token>"
    for count in ("1 Hugging Face token", "1 AWS access key", "1 email address",
                  "2 GitHub tokens", "1 API key", "1 JSON web token", "withheld 1 binary file"):
        assert count in summary, summary

    # Without -o, the redacted copy goes to its own folder: the session's own files stay whole.
    assert cli_main(["report", session.id, "--root", str(root), "--redact"]) == 0
    written = Path(capsys.readouterr().out.strip())
    assert written == session.journal.directory / "redacted" / "report.md"
    assert SECRETS["openai"] not in (written.parent / "repro.py").read_text()
    assert SECRETS["openai"] in (session.journal.directory / "repro.py").read_text()


@pytest.mark.parametrize("kind", sorted(SECRETS))
def test_each_kind_of_secret_is_redacted_in_any_context(kind):
    redactor = Redactor(home="/home/erin", user="erin", host="lab-gpu-7")
    for text in (SECRETS[kind], f"key={SECRETS[kind]};", f"'{SECRETS[kind]}'",
                 f"Authorization: Bearer {SECRETS[kind]}\n"):
        assert SECRETS[kind] not in redactor.text(text)


def test_redaction_keeps_what_torch_prints():
    redactor = Redactor(home="/home/dana", user="dana", host="lab-gpu-7")
    kept = [
        "mat1 and mat2 shapes cannot be multiplied (8x57600 and 9216x128)",
        "CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 7.79 GiB total capacity)",
        '/usr/lib/python3.11/site-packages/torch/nn/modules/module.py", line 1553',
        "Expected all tensors to be on the same device, but found cuda:0 and cpu!",
        "torch._C._nn.cross_entropy_loss(input, target, weight, _Reduction.get_enum(r))",
        ("RuntimeError: one of the variables needed for gradient computation has been modified"
         " by an inplace operation: [torch.FloatTensor [64, 3, 3, 3]] is at version 2"),
        "FileNotFoundError: runs/Projects/MyModel2/checkpoints/run_2024_01/epoch=3-step=1200",
        "wandb: MyVeryLongExperimentName_Version2_Final_Final",
        "ConvolutionBackward0 DivBackward0 NativeBatchNormBackward0 AddmmBackward0",
        "torch==2.13.0 sklearn scikit-learn task-runner",
    ]
    for text in kept:
        assert redactor.text(text) == text
    assert redactor.summary() == "nothing to redact"


# ------------------------------------------------------------------ 9. journaled from the start


SLEEPER = """
import os
import time


def started():
    with open({marker!r}, "w") as f:
        f.write(str(os.getpid()))
    print("first output", flush=True)
    time.sleep(120)


def make():
    started()


if __name__ == "__main__":
    started()
"""


@pytest.mark.slow
@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL")
@pytest.mark.parametrize("command", ["run", "check"])
def test_a_doctor_killed_mid_run_leaves_its_session_journaled(command, tmp_path):
    marker = tmp_path / "started"
    script = tmp_path / "sleeper.py"
    script.write_text(SLEEPER.format(marker=str(marker)))
    target = str(script) if command == "run" else f"{script}:make"
    sessions = tmp_path / "sessions"
    args = ["run", "--no-tui", target] if command == "run" else ["check", target]
    proc = doctor(*args, sessions=sessions)
    try:
        wait_for(marker, 120)
        time.sleep(0.2)
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
    finally:
        proc.kill()
        proc.communicate()
        if marker.exists():  # the patient lives on its own after the doctor's SIGKILL
            try:
                os.kill(int(marker.read_text()), signal.SIGKILL)
            except (ProcessLookupError, ValueError):
                pass
    infos = list_sessions(sessions)
    assert len(infos) == 1, infos
    events, warnings = read_events(infos[0].directory / JOURNAL_NAME)
    assert warnings == []
    assert events[0]["type"] == "session" and events[0]["kind"] == command
    assert events[0]["target"] == target


# ------------------------------------------------------------------ 10. malformed events

BAD_EVENTS = {
    "a string version": {"v": "2", "seq": 1, "t": T, "type": "note", "text": "x"},
    "no time": {"v": 1, "seq": 1, "type": "note", "text": "x"},
    "no sequence number": {"v": 1, "t": T, "type": "note", "text": "x"},
    "a string for the error": {"v": 1, "seq": 1, "t": T, "type": "parse", "error": "boom"},
    "a string for the matches": {"v": 1, "seq": 1, "t": T, "type": "matches", "matches": "m"},
    "a number for a message": {"v": 1, "seq": 1, "t": T, "type": "parse",
                               "error": {"type": "E", "message": 7}},
    "an unknown phase": {"v": 1, "seq": 1, "t": T, "type": "phase", "phase": "nowhere"},
    "a list for the facts": {"v": 1, "seq": 1, "t": T, "type": "probe", "probe": "env",
                             "status": "pass", "summary": "s", "facts": [1]},
    "a boolean sequence": {"v": 1, "seq": True, "t": T, "type": "note", "text": "x"},
}


def test_sessions_lists_every_session_and_counts_the_bad_events(tmp_path, capsys):
    root = tmp_path / "sessions"
    good = Session.start(root, kind="diagnose")
    good.record_input("loss is stuck", source="symptom")
    good.close()
    start = {"v": 1, "seq": 0, "t": T, "type": "session", "kind": "run", "target": "t.py"}
    crafted = [crafted_session(root, f"20260102-03040{n}-bad{n}", [start, event]).name
               for n, event in enumerate(BAD_EVENTS.values())]

    assert cli_main(["sessions", "--root", str(root)]) == 0
    out, err = capsys.readouterr()
    assert good.id in out and all(name in out for name in crafted)
    assert f"skipped {len(BAD_EVENTS)} malformed events in {len(BAD_EVENTS)} sessions" in err
    assert cli_main(["sessions", "--root", str(root), "--json"]) == 0
    rows = {row["id"]: row for row in json.loads(capsys.readouterr().out)}
    assert all(rows[name]["skipped"] == 1 and rows[name]["events"] == 1 for name in crafted)
    assert rows[good.id]["skipped"] == 0

    for name, reason in zip(crafted, BAD_EVENTS, strict=True):
        report = build_report(root / name)
        assert len(report["warnings"]) == 1, reason
        assert "## Journal warnings" in render_markdown(report)
        Session.resume(root / name)[0].close()


def test_no_field_of_any_event_can_break_the_report_or_the_replay(tmp_path):
    """Every top-level field of every kind of event, given each wrong type in turn."""
    from tests.test_report import recorded_session

    session = recorded_session(tmp_path / "sessions")
    path = session.journal.path
    events, _ = read_events(path)
    seen: set[str] = set()
    for index, event in enumerate(events):
        if event["type"] in seen:
            continue
        seen.add(event["type"])
        for field in [k for k in event if k != "type"]:
            for wrong in ("x", 7.5, True, ["x"], {"x": 1}, None):
                mutated = [*events[:index], {**event, field: wrong}, *events[index + 1:]]
                path.write_text("".join(json.dumps(e) + "\n" for e in mutated))
                render_markdown(build_report(path.parent))
                Session.resume(path.parent)[0].close()
                list_sessions(path.parent.parent)


# ------------------------------------------------------------------ 11. one writer at a time


def test_a_session_open_for_writing_turns_a_second_writer_away(tmp_path):
    root = tmp_path / "sessions"
    session = Session.start(root, kind="app")
    try:
        busy = doctor("report", session.id, sessions=root)
        _, err = busy.communicate(timeout=60)
        assert busy.returncode == 2
        assert f"in use by another torchdoctor process (pid {os.getpid()}" in err
        assert not (session.journal.directory / "report.md").exists()
    finally:
        session.close()
    free = doctor("report", session.id, sessions=root)
    free.communicate(timeout=60)
    assert free.returncode == 0 and (session.journal.directory / "report.md").is_file()


@pytest.mark.slow
def test_two_reports_on_one_pending_session_verify_it_once(tmp_path):
    root = tmp_path / "sessions"
    runs = tmp_path / "runs"
    source = (f"import time\nopen({str(runs)!r}, 'a').write('run\\n')\ntime.sleep(8)\n"
              + RAISE_KEY_ERROR)
    directory = pending_session(root, source)
    first = doctor("report", directory.name, "--rerun", sessions=root)
    try:
        wait_for(runs, 60)
        second = doctor("report", directory.name, "--rerun", sessions=root)
        _, err = second.communicate(timeout=60)
    finally:
        first.communicate(timeout=120)
    assert first.returncode == 0
    assert second.returncode == 2 and "in use by another torchdoctor process" in err
    assert runs.read_text() == "run\n"
    repros = [e for e in read_events(directory / JOURNAL_NAME)[0] if e["type"] == "repro"]
    assert len(repros) == 1 and repros[0]["verified"]
