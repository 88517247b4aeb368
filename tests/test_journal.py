import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from torchdoctor.journal import Journal, find_session, list_sessions, read_events
from torchdoctor.session import Session

DIAGNOSIS = {
    "error": {"type": "RuntimeError", "message": "mat1 and mat2 shapes cannot be multiplied"},
    "matches": [{
        "entry": "shape.linear_in_features", "title": "Linear gets the wrong features",
        "hypotheses": [
            {"id": "flatten_size", "statement": "57600 features reach a Linear built for 9216",
             "probe": {"name": "trace", "params": {}}, "fix": {"summary": "resize"}},
            {"id": "typo", "statement": "in_features typo", "probe": None},
        ],
    }],
}


def test_events_are_on_disk_as_soon_as_they_happen(tmp_path):
    journal = Journal.create(tmp_path)
    journal.append("note", text="first")
    # Read by another handle before close: the event is already in the file.
    events, warnings = read_events(journal.path)
    assert [e["text"] for e in events] == ["first"] and warnings == []
    assert events[0]["v"] == 1 and events[0]["seq"] == 0


def test_torn_last_line_is_skipped_with_a_warning(tmp_path):
    journal = Journal.create(tmp_path)
    journal.append("note", text="kept")
    journal.close()
    with open(journal.path, "a") as f:
        f.write('{"v": 1, "seq": 1, "type": "no')
    events, warnings = read_events(journal.path)
    assert [e["text"] for e in events] == ["kept"]
    assert len(warnings) == 1 and "torn" in warnings[0]


def test_session_replays_to_the_same_state(tmp_path):
    session = Session.start(tmp_path, target="train.py")
    session.record_input("RuntimeError: ...", source="paste")
    session.record_diagnosis(DIAGNOSIS)
    key = "shape.linear_in_features/flatten_size"
    session.record_probe({"probe": "trace", "status": "fail", "summary": "features.3 emits 57600",
                          "hypothesis": key, "verdict": "confirmed", "facts": {}})
    session.set_state("shape.linear_in_features/typo", "rejected", "in_features is computed")
    user = session.add_hypothesis("the dataset resizes to 240 px")
    session.goto("test")
    session.close()

    resumed, warnings = Session.resume(session.journal.directory)
    assert warnings == []
    state = resumed.state
    assert state.phase == "test" and state.target == "train.py"
    assert state.hypotheses[key].state == "confirmed"
    assert state.hypotheses[key].evidence[0]["summary"] == "features.3 emits 57600"
    assert state.hypotheses["shape.linear_in_features/typo"].reason == "in_features is computed"
    assert state.hypotheses[user].statement == "the dataset resizes to 240 px"
    # Appending after resume continues the sequence.
    resumed.note("after resume")
    events, _ = read_events(resumed.journal.path)
    assert [e["seq"] for e in events] == list(range(len(events)))


def test_sessions_are_listed_and_found_by_prefix(tmp_path):
    first = Session.start(tmp_path)
    first.record_diagnosis(DIAGNOSIS)
    time.sleep(1.1)  # ids sort by the second they were made
    second = Session.start(tmp_path)
    infos = list_sessions(tmp_path)
    assert [i.id for i in infos] == [second.id, first.id]
    assert infos[1].title.startswith("RuntimeError: mat1")
    assert find_session(first.id[:-2] + first.id[-2:], tmp_path) == first.journal.directory
    assert find_session("", tmp_path) == second.journal.directory
    with pytest.raises(LookupError, match="no session"):
        find_session("nope", tmp_path)


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL")
def test_sigkill_mid_session_loses_at_most_the_event_in_flight(tmp_path):
    writer = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {os.getcwd()!r})
        from torchdoctor.journal import Journal
        j = Journal.create({str(tmp_path)!r})
        print(j.path, flush=True)
        i = 0
        while True:
            j.append("note", text="x" * 2000, i=i)
            i += 1
    """)
    proc = subprocess.Popen([sys.executable, "-c", writer], stdout=subprocess.PIPE, text=True)
    path = proc.stdout.readline().strip()
    time.sleep(0.5)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    events, warnings = read_events(path)
    assert len(events) > 10
    assert [e["i"] for e in events] == list(range(len(events)))
    assert len(warnings) <= 1
    # And the session can be continued.
    journal, _, _ = Journal.reopen(os.path.dirname(path))
    journal.append("note", text="resumed")
    journal.close()
    final, _ = read_events(path)
    assert final[-1]["text"] == "resumed"
    with open(path) as f:
        assert json.loads(f.read().splitlines()[-1])["seq"] == final[-1]["seq"]
