"""The symptom path: a sentence in, the right entries and the checks that test them out.

`torchdoctor diagnose -` on prose must rank the symptom entry that explains
it, read its numbers, and name the `torchdoctor check` command whose checks
confirm or reject each shown hypothesis. The last test closes the loop: the
named check, run on a harness with that bug, confirms one of those hypotheses.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from torchdoctor.investigation.checkup import CHECK_ORDER

ROOT = Path(__file__).resolve().parent.parent


def diagnose(text: str, *options: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "torchdoctor", "diagnose", "-", *options],
                          input=text, cwd=ROOT, capture_output=True, text=True, timeout=60,
                          check=False)


def diagnose_json(text: str) -> dict:
    result = diagnose(text, "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


# sentence, entries one of which must rank first, checks its hypotheses must name
SYMPTOMS = [
    ("loss stays at 2.30 with 10 classes", {"training.loss_constant"},
     {"weights_update", "loss_at_init"}),
    ("NaN after epoch 6", {"training.lr_too_high", "numerics.nan_loss"}, {"nonfinite_steps"}),
    ("GPU memory keeps growing", {"memory.growing"}, {"memory_growth"}),
    ("my dataloader hangs with num_workers=4", {"dataloader.hang"}, {"dataloader"}),
    ("accuracy stuck at 10%", {"training.loss_constant"}, {"weights_update"}),
    ("model not learning", {"training.loss_constant"}, {"weights_update"}),
    ("gradients explode", {"numerics.exploding_gradients"}, {"grad_flow"}),
]


@pytest.mark.parametrize(("text", "entries", "probes"), SYMPTOMS, ids=[s[0] for s in SYMPTOMS])
def test_prose_ranks_the_symptom_entry_and_names_its_checks(text, entries, probes):
    shape = diagnose_json(text)
    assert shape["input"] == "symptom"
    best = shape["matches"][0]
    assert best["entry"] in entries
    tested = {h["probe"]["name"] for h in best["hypotheses"] if h["probe"]}
    assert probes <= tested
    named = [check["probe"] for check in shape["checks"]]
    assert probes <= set(named)
    assert named == [p for p in CHECK_ORDER if p in named]  # cheapest first
    assert shape["check_command"] == f"torchdoctor check HARNESS --only {','.join(named)}"
    for check in shape["checks"]:
        assert check["command"] == f"torchdoctor check HARNESS --only {check['probe']}"
        for hypothesis in check["hypotheses"]:
            entry_id, hyp_id = hypothesis.split("/")
            match = next(m for m in shape["matches"] if m["entry"] == entry_id)
            hyp = next(h for h in match["hypotheses"] if h["id"] == hyp_id)
            assert hyp["probe"]["name"] == check["probe"]
    assert "harness convention" in shape["harness_help"]


def test_the_numbers_of_a_stuck_loss_are_read_and_explained():
    shape = diagnose_json("my loss stays at 2.30 with 10 classes, whatever I try")
    assert shape["symptom_fields"] == {"loss": "2.30", "classes": "10"}
    best = shape["matches"][0]
    assert "not learning at all" in best["facts"][0]
    assert float(best["fields"]["ln_classes"]) == pytest.approx(2.303, abs=1e-3)
    statements = " ".join(h["statement"] for h in best["hypotheses"])
    assert "2.30" in statements and "2.303" in statements


def test_text_output_prints_the_runnable_check_command():
    result = diagnose("loss stays at 2.30 with 10 classes")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "numbers read: loss = 2.30, classes = 10" in out
    assert "not learning at all" in out
    command = next(line.strip() for line in out.splitlines()
                   if line.strip().startswith("torchdoctor check HARNESS --only "))
    named = command.rsplit(" ", 1)[1].split(",")
    assert {"weights_update", "loss_at_init"} <= set(named)
    assert "The harness convention" in out
    assert "test it: torchdoctor check HARNESS --only weights_update" in out


def test_a_traceback_names_no_harness_checks_section():
    paste = ("Traceback (most recent call last):\n  File \"train.py\", line 3, in <module>\n"
             "RuntimeError: mat1 and mat2 shapes cannot be multiplied (64x57600 and 9216x128)\n")
    result = diagnose(paste)
    assert result.returncode == 0, result.stderr
    assert "Test these hypotheses on your model" not in result.stdout


def test_unmatched_prose_names_no_checks():
    result = diagnose("the weather is lovely today", "--json")
    assert result.returncode == 1
    shape = json.loads(result.stdout)
    assert shape["checks"] == [] and shape["check_command"] is None


def test_the_named_check_confirms_a_named_hypothesis_on_the_bug():
    """Close the loop: the command diagnose names, run on a harness with that bug."""
    shape = diagnose_json("loss stays at 2.30 with 10 classes")
    command = shape["check_command"].split()
    target = "tests/zoo/silent/missing_step.py:harness"
    argv = [sys.executable, "-m", "torchdoctor", *command[1:]]
    argv[argv.index("HARNESS")] = target
    result = subprocess.run([*argv, "--json"], cwd=ROOT, capture_output=True, text=True,
                            timeout=120, check=False)
    assert result.returncode == 1, result.stderr
    named = {h for check in shape["checks"] for h in check["hypotheses"]}
    confirmed = {f["hypothesis"] for f in json.loads(result.stdout)["findings"]
                 if f["verdict"] == "confirmed"}
    assert "training.loss_constant/step_not_called" in confirmed & named
