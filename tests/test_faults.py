"""Bad targets and misbehaving scripts: each gets a clear report, and the doctor lives on.

The scripts are under ``tests/zoo/faults/``; each test checks the report
and then that a patient (the same one, or a fresh one when it died) still
works.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from torchdoctor.patient.client import (
    PatientClient,
    PatientDied,
    PatientRequestError,
    PatientTimeout,
)

FAULTS = Path(__file__).parent / "zoo" / "faults"


@pytest.fixture(scope="module")
def patient():
    client = PatientClient.start()
    yield client
    client.close()


def still_works(client: PatientClient) -> None:
    reply = client.run_script(str(FAULTS / "clean_exit.py"))
    assert reply["exited"] == "clean"
    assert "out torch.Size([1, 2])" in reply["stdout"]


def test_script_not_found(patient):
    with pytest.raises(PatientRequestError) as caught:
        patient.run_script(str(FAULTS / "no_such_script.py"))
    assert caught.value.type == "TargetError"
    assert "script not found" in caught.value.message
    still_works(patient)


def test_syntax_error_is_the_users(patient):
    reply = patient.run_script(str(FAULTS / "syntax_error.py"))
    assert reply["exited"] == "raised"
    assert reply["error"]["type"] == "SyntaxError"
    assert 'syntax_error.py", line 3' in reply["traceback"]
    assert "torchdoctor" not in reply["traceback"]
    assert "runpy" not in reply["traceback"]
    still_works(patient)


def test_failed_import_is_the_users(patient):
    reply = patient.run_script(str(FAULTS / "import_error.py"))
    assert reply["error"]["type"] == "ModuleNotFoundError"
    assert reply["traceback"].count("File ") == 1
    assert "import_error.py" in reply["traceback"]


def test_sys_exit_is_an_exit_code_not_a_crash(patient):
    reply = patient.run_script(str(FAULTS / "exits_three.py"))
    assert (reply["exited"], reply["exit_code"]) == ("sys.exit", 3)
    assert reply["traceback"] is None
    assert reply["stdout"] == "leaving with 3\n"
    still_works(patient)


def test_os_exit_is_reported_with_its_code():
    client = PatientClient.start()
    try:
        with pytest.raises(PatientDied) as caught:
            client.run_script(str(FAULTS / "os_exit.py"))
        assert caught.value.returncode == 7
        assert "exited with code 7" in str(caught.value)
        assert not client.alive
    finally:
        client.close()
    with PatientClient.start() as fresh:
        still_works(fresh)


def test_segfault_is_reported_with_the_signal_and_stderr():
    client = PatientClient.start()
    try:
        with pytest.raises(PatientDied) as caught:
            client.run_script(str(FAULTS / "segfault.py"))
        assert caught.value.signal == "SIGSEGV"
        assert "killed by SIGSEGV" in str(caught.value)
        assert "reading address zero" in caught.value.stderr_tail
    finally:
        client.close()
    with PatientClient.start() as fresh:
        still_works(fresh)


def test_a_script_that_sleeps_forever_times_out():
    client = PatientClient.start()
    try:
        started = time.monotonic()
        with pytest.raises(PatientTimeout) as caught:
            client.run_script(str(FAULTS / "sleeps_forever.py"), timeout=2.0)
        assert time.monotonic() - started < 10
        assert "sleeps_forever.py within 2 s" in str(caught.value)
        assert "going to sleep" in caught.value.stderr_tail
        assert client.process.poll() is not None
    finally:
        client.close()


def test_a_forked_child_that_lingers_does_not_hang_the_doctor():
    client = PatientClient.start()
    reply = client.run_script(str(FAULTS / "forks.py"))
    assert reply["exited"] == "raised"
    assert reply["error"]["message"] == "the parent failed while its child lingers"
    child = int(reply["stdout"].split("parent forked")[1].split()[0])
    still_works(client)
    started = time.monotonic()
    client.close()
    assert time.monotonic() - started < 10
    assert not running(child)


def running(pid: int) -> bool:
    """Alive and not a zombie (an orphan's reaper may be slow to collect it)."""
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as stat:
                if stat.read().rsplit(")", 1)[1].split()[0] in ("Z", "X"):
                    return False
        except FileNotFoundError:
            return False
        time.sleep(0.05)
    return True


@pytest.mark.parametrize(("spec", "expected"), [
    ("harness_missing_keys.py:make", "harness returned no 'loss_fn'"),
    ("harness_missing_keys.py:model_not_called",
     "'model' is a class, expected torch.nn.Module — did you forget to instantiate it?"),
    ("harness_missing_keys.py:not_a_dict", "returned a list; expected a dict"),
    ("harness_missing_keys.py:no_such_function", "has no 'no_such_function'"),
    ("no_such_file.py:make", "harness file not found"),
    ("not a spec", "a harness is FILE.py:NAME or package.module:NAME"),
])
def test_malformed_harness_is_named(patient, spec, expected):
    target = str(FAULTS / spec) if spec.endswith(("make", "called", "dict", "function")) else spec
    with pytest.raises(PatientRequestError) as caught:
        patient.load_harness(target)
    assert caught.value.type == "TargetError"
    assert expected in caught.value.message
    assert caught.value.user is False


def test_harness_that_raises_reports_the_users_exception(patient):
    with pytest.raises(PatientRequestError) as caught:
        patient.load_harness(f"{FAULTS / 'harness_raises.py'}:make")
    error = caught.value
    assert error.user is True
    assert error.type == "RuntimeError"
    assert "Error(s) in loading state_dict for Linear" in error.message
    assert 'harness_raises.py", line 7, in make' in error.traceback
    assert "torchdoctor" not in error.traceback
    still_works(patient)
