"""Values blanked by hand in a pasted message: the wording still names its entry.

People keep torch's wording and type a placeholder where a pid, a size or a key
was ("(pid XXX)", "(pid ...)", "module.xxx", "[N, C]", "<n>"). The matcher reads
such a message once more with a value in each blank, and drops what a pattern
captured from a blank: no value torch printed is invented.
"""

from __future__ import annotations

import pytest

from torchdoctor.knowledge import load_knowledge
from torchdoctor.match import diagnose
from torchdoctor.parsing.placeholders import filled

KB = load_knowledge(include_user=False, use_cache=False, report=False)


@pytest.mark.parametrize("message, expected", [
    ("DataLoader worker (pid XXX) is killed by signal: Killed",
     "DataLoader worker (pid 2) is killed by signal: Killed"),
    ("DataLoader worker (pid ...) is killed by signal: Bus error",
     "DataLoader worker (pid 2) is killed by signal: Bus error"),
    ("DataLoader worker (pid …) exited unexpectedly", "DataLoader worker (pid 2) exited unexpectedly"),
    ('Unexpected key(s) in state_dict: "module.XXX"', 'Unexpected key(s) in state_dict: "module.2"'),
    ("Expected input batch_size (<n>) to match target batch_size (<n>).",
     "Expected input batch_size (2) to match target batch_size (2)."),
    ("expected input[N, C, H, W] to have 3 channels", "expected input[2, 2, 2, 2] to have 3 channels"),
])
def test_each_blank_holds_a_value(message, expected):
    blanks = filled(message)
    assert blanks is not None
    assert blanks.text == expected


@pytest.mark.parametrize("message", [
    "DataLoader worker (pid 4242) is killed by signal: Killed",
    "Expected input batch_size (64) to match target batch_size (32).",
    "got torch.Size([2, 3]) and torch.Size([3, 4])",
    "size mismatch ... and then it stopped",   # an ellipsis that cut the text, no blank
])
def test_a_message_with_its_values_has_no_blank(message):
    assert filled(message) is None


def test_the_blanks_are_where_the_values_went():
    blanks = filled("worker (pid XXX) and (pid ...)")
    assert blanks is not None
    assert [blanks.text[start:end] for start, end in blanks.spans] == ["2", "2"]
    assert blanks.covers(*blanks.spans[1])
    assert not blanks.covers(0, 6)


@pytest.mark.parametrize("paste", [
    "RuntimeError: DataLoader worker (pid XXX) is killed by signal: Killed.",
    "ERROR - RuntimeError: DataLoader worker (pid ...) is killed by signal: Killed",
])
def test_a_blanked_pid_is_still_the_killed_worker(paste):
    top = diagnose(paste, KB).to_dict()["matches"][0]
    assert top["entry"] == "dataloader.worker_killed"
    assert top["confident"]
    # The signal was printed; the pid was not.
    assert top["fields"].get("signal") == "Killed"
    assert "pid" not in top["fields"]


def test_a_blanked_size_is_no_size_the_diagnosis_reports():
    paste = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate XXX MiB "
             "(GPU 0; 7.79 GiB total capacity; 5.61 GiB already allocated; 21.00 MiB free; "
             "5.80 GiB reserved in total by PyTorch)")
    top = diagnose(paste, KB).to_dict()["matches"][0]
    assert top["entry"] == "memory.cuda_oom"
    assert "requested" not in top["fields"] and "requested_bytes" not in top["fields"]
    assert top["fields"]["total"] == "7.79 GiB"


@pytest.mark.parametrize("paste", [
    'Loading my checkpoint complains about Unexpected key(s) "module.XXX" for every layer.',
    "Every key in the saved weights has 'module.' prefixed to it, so loading on one GPU fails.",
])
def test_a_prefix_retold_without_the_message_is_the_module_prefix(paste):
    assert diagnose(paste, KB).to_dict()["matches"][0]["entry"] == "state_dict.module_prefix"
