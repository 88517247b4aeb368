"""The patient process and its client: protocol, capture, environment, failures.

Every test talks to a real patient (a real ``python -m torchdoctor.patient``
with real torch); one patient is shared per module where the test allows.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from types import SimpleNamespace

import pytest

from torchdoctor import wire
from torchdoctor.investigation.hypotheses import test_hypotheses
from torchdoctor.investigation.probing import factory_for, merge_runs
from torchdoctor.patient.client import (
    CAPTURE_LIMIT,
    PatientClient,
    PatientDied,
    PatientRequestError,
    PatientTimeout,
    _split_partial_mark,
    probe_timeout,
)

TESTS = Path(__file__).parent
FAULTS = TESTS / "zoo" / "faults"
TEST_PROBES = {"PYTHONPATH": str(TESTS), "TORCHDOCTOR_EXTRA_PROBES": "patient_test_probes"}


@pytest.fixture(scope="module")
def patient():
    client = PatientClient.start(TEST_PROBES)
    yield client
    client.close()


def test_hello_reports_versions(patient):
    import torch

    assert patient.info["torch"] == torch.__version__
    assert patient.info["cuda_available"] == torch.cuda.is_available()
    assert patient.info["python"] == ".".join(map(str, sys.version_info[:3]))
    assert patient.info["pid"] == patient.process.pid


def test_unknown_op_is_an_error_reply_and_the_patient_carries_on(patient):
    with pytest.raises(PatientRequestError) as caught:
        patient.request("transmogrify")
    assert caught.value.type == "UnknownOp"
    assert "transmogrify" in caught.value.message
    assert patient.request("hello", extra_field="ignored")["ok"] is True


def test_env_probe_answers_without_a_target(patient):
    result = patient.probe("env")
    assert result["status"] == "pass"
    assert result["probe"] == "env"
    assert result["facts"]["torch"] == patient.info["torch"]
    assert result["seconds"] >= 0


def test_probe_output_is_captured_per_request(patient):
    result = patient.probe("test_echo", {"answer": 42})
    assert result["facts"]["params"] == {"answer": 42}
    assert result["stdout"] == "echo says hello on stdout\n"
    assert result["stderr"] == "echo says hello on stderr\n"
    again = patient.probe("test_echo")
    assert again["stdout"] == "echo says hello on stdout\n"


def test_a_probe_that_raises_is_an_error_result(patient):
    result = patient.probe("test_raises")
    assert result["status"] == "error"
    assert "ZeroDivisionError" in result["summary"]
    assert "divides by zero" in result["error"]["traceback"]


def test_unknown_probe_names_the_known_ones(patient):
    with pytest.raises(PatientRequestError) as caught:
        patient.probe("no_such_probe")
    assert caught.value.type == "UnknownProbe"
    assert "env" in caught.value.message


def test_probe_needing_a_model_without_a_target(patient):
    fresh = PatientClient.start()
    try:
        with pytest.raises(PatientRequestError) as caught:
            fresh.probe("census")
        assert caught.value.type == "NoTarget"
    finally:
        fresh.close()


def test_harness_target_reaches_probes(patient):
    reply = patient.load_harness(f"{FAULTS / 'harness_good.py'}:make")
    assert reply["found"]["model"].startswith("Sequential")
    assert reply["found"]["optimizer"] == "SGD (lr=0.1)"
    assert patient.probe("test_echo")["facts"]["model"] == "Sequential"


def test_script_output_is_captured_and_bounded(patient):
    reply = patient.run_script(str(FAULTS / "prints_megabytes.py"))
    assert reply["exited"] == "raised"
    assert len(reply["stdout"].encode()) <= CAPTURE_LIMIT
    assert reply["stdout"].endswith("last line of stdout\n")
    assert reply["output_dropped"]["stdout"] > 8_000_000
    assert "torchdoctor-mark" not in reply["stdout"] + reply["stderr"]


def test_probe_timeout_kills_and_restart_brings_the_target_back():
    client = PatientClient.start(TEST_PROBES)
    try:
        client.load_harness(f"{FAULTS / 'harness_good.py'}:make")
        with pytest.raises(PatientTimeout) as caught:
            client.probe("test_sleeps", timeout=1.0)
        assert "test_sleeps probe" in str(caught.value)
        assert not client.alive
        reply = client.restart()
        assert client.alive
        assert reply["found"]["model"].startswith("Sequential")
        assert client.probe("test_echo")["facts"]["model"] == "Sequential"
    finally:
        client.close()


def test_a_spawned_patient_is_waited_for_only_when_asked():
    """``spawn`` returns while the patient still imports torch; ``wait_ready`` gets its hello."""
    client = PatientClient.spawn()
    try:
        assert client.info == {}
        assert client.wait_ready()["pid"] == client.process.pid
        assert client.run_script(str(FAULTS / "clean_exit.py"))["exited"] == "clean"
    finally:
        client.close()


def test_a_patient_that_dies_on_its_way_up_is_closed_and_said():
    client = PatientClient.spawn({"TORCHDOCTOR_SEED": "not a number"})
    with pytest.raises(PatientDied) as caught:
        client.wait_ready()
    assert "while starting up" in str(caught.value)
    assert "invalid literal for int()" in caught.value.stderr_tail
    assert not client.alive


def test_fresh_patient_environment_seed_and_cpu_fallback():
    env = {"TORCHDOCTOR_SEED": "7", "TORCHDOCTOR_DEVICE": "cpu", "CUDA_VISIBLE_DEVICES": ""}
    with PatientClient.start(env) as client:
        assert client.info["device"] == "cpu"
        assert client.info["cuda_available"] is False
        reply = client.run_script(str(FAULTS / "cuda_script.py"))
        import torch

        torch.manual_seed(7)
        assert f"draw {torch.rand(3).tolist()}" in reply["stdout"]
        assert "devices cpu cpu cpu" in reply["stdout"]
        # The device-side assert a GPU would give is the plain IndexError on the CPU.
        assert reply["exited"] == "raised"
        assert reply["error"]["type"] == "IndexError"
        assert reply["error"]["message"] == "index out of range in self"
        with client.fresh({"TORCHDOCTOR_DEVICE": None}) as other:
            assert other.info["device"] is None
            assert other.target["path"].endswith("cuda_script.py")


def test_doctor_side_client_imports_no_torch():
    code = textwrap.dedent("""
        import sys
        from torchdoctor.patient.client import PatientClient
        import torchdoctor.investigation.hypotheses, torchdoctor.investigation.walk
        with PatientClient.start() as client:
            client.probe("env")
        assert "torch" not in sys.modules, "the doctor imported torch"
        print("clean")
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=TESTS.parent, timeout=120, check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "clean"


def test_wire_round_trip_and_version_check():
    line = wire.encode(wire.request(3, "probe", name="env", params={}))
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert wire.decode(line[:-1]) == {"v": 1, "id": 3, "op": "probe", "name": "env",
                                      "params": {}}
    with pytest.raises(wire.ProtocolError):
        wire.decode(b'{"v": 2, "id": 1, "op": "hello"}')
    with pytest.raises(wire.ProtocolError):
        wire.decode(b"print('not json')")


def test_a_mark_split_across_reads_is_held_back():
    mark = b"\x00\x1etorchdoctor-mark:12\x1e\x00"
    for cut in range(1, len(mark)):
        head, carry = _split_partial_mark(b"user text" + mark[:cut])
        assert head == b"user text" and carry == mark[:cut]
    assert _split_partial_mark(b"a\x00b") == (b"a\x00b", b"")


def test_probe_timeouts_follow_the_manifest():
    assert probe_timeout("overfit_batch", {}) >= 2 * 20.0
    assert probe_timeout("overfit_batch", {"seconds": 100}) >= 200
    assert probe_timeout("env", {}) > 0


def test_patient_marks_its_channel_uninheritable():
    """A child the user's code spawns must not hold the channel open."""
    code = "import os; print(sorted(int(f) for f in os.listdir('/proc/self/fd')))"
    with PatientClient.start() as client:
        script = Path(os.environ.get("TMPDIR", "/tmp")) / f"spawn_{os.getpid()}.py"
        script.write_text(
            "import subprocess, sys\n"
            f"print(subprocess.run([sys.executable, '-c', {code!r}], capture_output=True,"
            " text=True, close_fds=False).stdout)\n")
        try:
            reply = client.run_script(str(script))
        finally:
            script.unlink()
    child_fds = json.loads(reply["stdout"].strip().splitlines()[-1])
    assert max(child_fds) <= 3


def _diagnosis(*hypotheses: dict, fields: dict | None = None) -> SimpleNamespace:
    entry = SimpleNamespace(id="test.entry")
    match = SimpleNamespace(entry=entry, hypotheses=list(hypotheses), fields=fields or {})
    return SimpleNamespace(matches=[match])


def test_a_probe_shared_by_hypotheses_runs_once_and_each_gets_a_verdict(patient):
    shared = {"name": "test_counter", "params": {}}
    diagnosis = _diagnosis(
        {"id": "a", "probe": shared, "confirm": [{"fact": "count", "eq": 1}], "reject": []},
        {"id": "b", "probe": shared, "confirm": [{"fact": "count", "gt": 1}],
         "reject": [{"status": "warn"}]},
        {"id": "untestable", "probe": None},
    )
    findings = test_hypotheses(diagnosis, factory_for(patient))
    assert [(f.hypothesis, f.verdict) for f in findings] == [
        ("test.entry/a", "confirmed"), ("test.entry/b", "rejected"),
        ("test.entry/untestable", "untested")]
    assert findings[2].reason.startswith("no probe tests it")
    assert findings[0].facts == {"count": 1}
    assert set(findings[0].to_dict()) == {"probe", "status", "summary", "hypothesis",
                                          "verdict", "location", "facts", "evidence",
                                          "reason", "raised_at", "fix_at"}
    assert findings[0].evidence == {"count": 1}  # the fact its confirm criteria read


def test_fresh_env_probe_runs_in_a_new_patient_on_the_same_target(patient):
    patient.run_script(str(FAULTS / "cuda_script.py"))
    diagnosis = _diagnosis({"id": "cpu", "probe": {"name": "cpu_fallback", "params": {}},
                            "confirm": [{"fact": "reproduced_on_cpu", "eq": True}]})
    (finding,) = test_hypotheses(diagnosis, factory_for(patient))
    runs = finding.facts["runs"]
    expected = 1 if not patient.cuda_available else 2  # the blocking rerun needs CUDA
    assert len(runs) == expected
    assert runs[0]["env"] == {"CUDA_VISIBLE_DEVICES": "", "TORCHDOCTOR_DEVICE": "cpu"}
    assert finding.verdict in ("confirmed", "rejected", "inconclusive")
    assert patient.alive and patient.target["path"].endswith("cuda_script.py")


def test_merging_runs_keeps_the_first_facts_and_the_worst_status():
    merged = merge_runs("p", [
        ({"A": "1"}, {"status": "pass", "summary": "one", "facts": {"x": 1}, "location": None}),
        ({"B": "1"}, {"status": "fail", "summary": "two", "facts": {"x": 2, "y": 3},
                      "location": {"line": 4}}),
    ])
    assert merged["status"] == "fail"
    assert merged["facts"]["x"] == 1 and merged["facts"]["y"] == 3
    assert merged["summary"] == "one; two" and merged["location"] == {"line": 4}
    assert [r["env"] for r in merged["facts"]["runs"]] == [{"A": "1"}, {"B": "1"}]
