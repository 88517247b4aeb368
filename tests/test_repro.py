"""The verified minimal repro, end to end on the zoo's real crashing programs.

For each program: run it in a real patient, journal the run with ``record_run``
(which asks the live patient for repro sources and verifies them in fresh
processes), write the report with the real CLI, then run the repro beside
the report on its own, as a person would, and check it fails the same way.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from torchdoctor.cli import main as cli_main
from torchdoctor.journal import read_events
from torchdoctor.parse import parse_traceback
from torchdoctor.patient.client import PatientClient
from torchdoctor.recording import record_run
from torchdoctor.repro import Candidate, build_repro, same_failure, verify_pending
from torchdoctor.session import Session

ZOO = Path(__file__).parent / "zoo" / "errors"
PROGRAMS = sorted(p.stem for p in ZOO.glob("*.py"))
# Programs whose bug needs a GPU to show (they run clean on a CPU-only machine).
NEEDS_CUDA = {"device_mismatch"}
# The level each program should reproduce at: the smallest that can carry its cause.
EXPECTED_LEVEL = {
    "flatten_linear": "module", "embedding_index": "module", "one_based_labels": "module",
    "float_labels": "module", "wrong_channels": "module", "view_permute": "op",
    "inplace_saved": "model", "backward_twice": "script", "nan_log": "op",
    "huge_lr": "script",
}


def run_and_record(script: Path, root: Path) -> tuple[dict, Session]:
    with PatientClient.start() as client:
        report = client.run_script(str(script))
        if script.stem in NEEDS_CUDA and not client.cuda_available:
            pytest.skip(f"{script.name} fails only with CUDA, and there is none here")
        assert report["exited"] == "raised", f"{script.name} stopped raising: {report['exited']}"
        error = parse_traceback(report["traceback"]).to_dict()
        outcome = {"target": str(script), "argv": [], "exited": "raised", "exit_code": 1,
                   "error": error, "matches": [], "findings": [],
                   "traceback": report["traceback"]}
        session = record_run(outcome, client, root=root)
    return report["error"], session


@pytest.mark.slow
@pytest.mark.parametrize("program", PROGRAMS)
def test_run_then_report_gives_a_repro_that_fails_the_same_way_on_its_own(program, tmp_path):
    original, session = run_and_record(ZOO / f"{program}.py", tmp_path / "sessions")
    events, _ = read_events(session.journal.path)
    repro = [e for e in events if e["type"] == "repro"][-1]
    assert repro["verified"], repro["reason"]
    assert repro["level"] == EXPECTED_LEVEL.get(program, repro["level"])
    assert repro["lines"] > 0 and repro["seconds"] < 30

    out = tmp_path / "handed-on"
    assert cli_main(["report", session.id, "--root", str(tmp_path / "sessions"),
                     "-o", str(out / "report.md")]) == 0
    markdown = (out / "report.md").read_text()
    assert "## Minimal repro" in markdown and f"level: **{repro['level']}**" in markdown
    assert (out / "repro.py").read_text() in markdown

    # The person's own check: `python repro.py` beside the report, nothing else.
    done = subprocess.run([sys.executable, "repro.py"], cwd=out, capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode != 0
    got = parse_traceback(done.stderr)
    expected = repro["expected"]
    assert same_failure(expected, {"type": got.type, "message": got.message})
    if repro["level"] != "op" or expected["type"] != "AssertionError":
        assert got.type == original["type"]


def test_a_candidate_that_does_not_fail_alike_is_never_presented(tmp_path):
    error = {"type": "RuntimeError", "message": "mat1 and mat2 shapes cannot be multiplied"
             " (8x57600 and 9216x128)"}
    clean = Candidate("module", "print('fine')\n", "runs clean")
    other = Candidate("op", "raise ValueError('something else')\n", "another error")
    result = build_repro(tmp_path, error, [clean, other], timeout=30)
    assert not result.verified and result.path is None
    assert "ran clean" in result.reason and "ValueError" in result.reason
    assert not (tmp_path / "repro.py").exists()


def test_the_first_candidate_seen_to_fail_alike_wins_and_is_measured(tmp_path):
    error = {"type": "IndexError", "message": "Target 10 is out of bounds."}
    wrong = Candidate("module", "raise IndexError('Target 3 is out of bounds.')\n", "m",
                      config_numbers=[10])
    right = Candidate("model", "x = 1\nraise IndexError('Target 10 is out of bounds.')\n", "w")
    result = build_repro(tmp_path, error, [wrong, right], timeout=30)
    assert result.verified and result.level == "model"
    assert result.lines == 2 and result.seconds > 0
    assert (tmp_path / "repro.py").read_text() == right.source
    assert [a["reproduced"] for a in result.attempts] == [False, True]


def test_signatures_allow_random_sizes_but_not_configuration_numbers():
    want = {"type": "RuntimeError",
            "message": "mat1 and mat2 shapes cannot be multiplied (8x57600 and 9216x128)"}
    random_batch = {"type": "RuntimeError",
                    "message": "mat1 and mat2 shapes cannot be multiplied (4x57600 and 9216x128)"}
    other_config = {"type": "RuntimeError",
                    "message": "mat1 and mat2 shapes cannot be multiplied (8x57600 and 512x128)"}
    assert same_failure(want, random_batch, [9216, 128])
    assert not same_failure(want, other_config, [9216, 128])
    assert same_failure(want, other_config, [])
    assert not same_failure(want, {"type": "ValueError", "message": want["message"]})
    assert not same_failure(want, None)


def test_sources_recorded_before_a_kill_are_verified_once_by_report(tmp_path):
    session = Session.start(tmp_path, kind="run", target=None)
    session.record_diagnosis({"error": {"type": "KeyError", "message": "'labels'"},
                              "matches": []})
    source = "batch = {}\nbatch['labels']\n"
    session.record_probe({"probe": "repro", "status": "pass", "summary": "sources",
                          "facts": {"levels": [{"level": "op", "source": source,
                                                "what": "a dict lookup", "files": {}}]}})
    session.close()  # killed here, before verification
    directory = session.journal.directory
    assert verify_pending(directory)
    assert not verify_pending(directory)  # cached in the journal from now on
    repro = [e for e in read_events(directory / "journal.jsonl")[0] if e["type"] == "repro"]
    assert len(repro) == 1 and repro[0]["verified"] and repro[0]["level"] == "op"
