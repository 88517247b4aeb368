"""No process of torchdoctor's or of the user's outlives the doctor.

Each test marks the processes it starts with a unique environment variable
(inherited by the patient, the user's script and anything that script
starts) and then polls ``/proc`` for processes still carrying it, with a
bounded wait: the test passes as soon as none is left, and fails if some
are still there when the wait runs out.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from torchdoctor.repro import Candidate, run_candidate

ROOT = Path(__file__).resolve().parents[1]
FAULTS = ROOT / "tests" / "zoo" / "faults"
TAG = "ORPHAN_CHECK_TAG"

pytestmark = pytest.mark.skipif(not Path("/proc/self/environ").exists(),
                                reason="finds processes through /proc")


def tagged(tag: str) -> list[int]:
    """Pids of the live (not zombie) processes whose environment carries the tag."""
    needle = f"{TAG}={tag}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            environ = Path(f"/proc/{entry}/environ").read_bytes()
            state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if needle in environ.split(b"\0") and state != "Z":
            found.append(int(entry))
    return found


def wait_for(condition, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.1)
    return condition()


def settle(tag: str, seconds: float = 15.0) -> list[int]:
    """The tagged processes left after waiting up to ``seconds`` for them to go."""
    wait_for(lambda: not tagged(tag), seconds)
    left = tagged(tag)
    for pid in left:  # never leave them behind for the next test
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return left


@pytest.fixture
def tag(monkeypatch):
    value = uuid.uuid4().hex
    monkeypatch.setenv(TAG, value)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        [str(ROOT), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]))
    return value


def doctor(*argv: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "torchdoctor", *argv], cwd=ROOT,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)


def helper_running(tag: str) -> bool:
    """The user's own helper process (``python -c "...sleep(600)"``) has started."""
    for pid in tagged(tag):
        try:
            if b"sleep(600)" in Path(f"/proc/{pid}/cmdline").read_bytes():
                return True
        except OSError:
            continue
    return False


@pytest.mark.slow
def test_run_ends_what_the_script_started(tag):
    done = subprocess.run([sys.executable, "-m", "torchdoctor", "run", "--no-tui", "--json",
                           str(FAULTS / "spawns_and_fails.py")], check=False, cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert "the script failed while its helper runs on" in done.stdout
    assert settle(tag) == []


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGKILL])
def test_stopping_run_ends_the_patient_and_its_children(tag, signum):
    process = doctor("run", "--no-tui", "--no-session", str(FAULTS / "spawns_and_hangs.py"))
    try:
        assert wait_for(lambda: helper_running(tag), 120), "the script never started"
        process.send_signal(signum)
        process.wait(30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert settle(tag) == []
    if signum != signal.SIGKILL:
        assert process.returncode == 128 + signum
        assert f"stopped by {signal.Signals(signum).name}" in process.stderr.read().decode()


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGKILL])
def test_stopping_check_ends_the_patient_and_its_children(tag, signum):
    process = doctor("check", f"{FAULTS / 'harness_spawns_and_hangs.py'}:make")
    try:
        assert wait_for(lambda: helper_running(tag), 120), "the harness never started"
        process.send_signal(signum)
        process.wait(30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert settle(tag) == []


def test_repro_verification_ends_the_whole_group_on_timeout(tag, tmp_path):
    source = ("import subprocess, sys, time\n"
              "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\n"
              "time.sleep(600)\n")
    attempt = run_candidate(Candidate("script", source, "a repro that hangs"), tmp_path,
                            {"type": "RuntimeError", "message": "x"}, timeout=3)
    assert not attempt.reproduced
    assert "did not finish within 3 s" in attempt.why
    assert settle(tag) == []


def test_repro_verification_ends_what_a_failing_repro_left(tag, tmp_path):
    source = ("import subprocess, sys\n"
              "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\n"
              "raise RuntimeError('the repro failed')\n")
    attempt = run_candidate(Candidate("script", source, "a repro that leaves a helper"),
                            tmp_path, {"type": "RuntimeError", "message": "the repro failed"},
                            timeout=60)
    assert attempt.reproduced
    assert settle(tag) == []


def start_app(script: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, str(ROOT / "tests" / "app_headless.py"),
                             str(script)], cwd=ROOT, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


@pytest.mark.slow
def test_quitting_the_app_ends_its_patients_and_their_children(tag):
    app = start_app(FAULTS / "spawns_and_hangs.py")
    try:
        assert wait_for(lambda: helper_running(tag), 120), "the app never ran the script"
        app.communicate(b"quit\n", timeout=60)
    finally:
        if app.poll() is None:
            app.kill()
            app.wait()
    assert settle(tag) == []


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGKILL])
def test_stopping_the_app_ends_its_patients_and_their_children(tag, signum):
    app = start_app(FAULTS / "spawns_and_hangs.py")
    try:
        assert wait_for(lambda: helper_running(tag), 120), "the app never ran the script"
        app.send_signal(signum)
        app.wait(30)
    finally:
        if app.poll() is None:
            app.kill()
            app.wait()
    assert settle(tag) == []

