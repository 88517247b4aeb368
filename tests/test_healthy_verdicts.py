"""A healthy program confirms nothing, on every path that draws verdicts.

The app (driven with Pilot), ``torchdoctor run`` and ``torchdoctor check``
all judge through the one engine; each is walked here on a program with no
bug, with real patients, and none may confirm a hypothesis. The app's walk
goes through the hypotheses that once were confirmed by checks that passed
(``loss_at_init`` for mismatched labels, the census for a validation gap).
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest

from torchdoctor.investigation.walk import Target, default_client_factory
from torchdoctor.session import Session
from torchdoctor.tui.app import TorchDoctorApp

ROOT = Path(__file__).resolve().parents[1]
HEALTHY = ROOT / "tests" / "zoo" / "silent" / "healthy_mlp.py"
SYMPTOMS = ("the model cannot overfit a single batch and the loss does not decrease; "
            "validation loss much higher than training loss")


@pytest.mark.slow
def test_the_app_confirms_nothing_on_a_healthy_harness(tmp_path):
    asyncio.run(_walk_the_app(tmp_path))


async def _walk_the_app(tmp_path: Path) -> None:
    session = Session.start(tmp_path / "sessions", target=f"{HEALTHY}:harness")
    app = TorchDoctorApp(session, default_client_factory(str(ROOT)),
                         Target(harness=f"{HEALTHY}:harness"))
    async with app.run_test(size=(120, 40)) as pilot:
        app.doctor.diagnose_text(SYMPTOMS, "symptom")
        app.refresh_all()
        hypotheses = app.session.state.hypotheses
        assert {"training.cannot_overfit_batch/labels_inputs_mismatched",
                "training.validation_gap/eval_mode_difference"} <= set(hypotheses)
        await pilot.press("1", "r")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert "reproduce" in app.session.state.completed
        await pilot.press("4")
        tested = []
        for row, key in enumerate(list(hypotheses)):
            app.selected_row = row
            if not hypotheses[key].probe:
                continue
            await pilot.press("r")
            await app.workers.wait_for_complete()
            await pilot.pause()
            tested.append(key)
        states = {key: hypotheses[key].state for key in tested}
        assert len(tested) >= 7 and "proposed" not in states.values(), states
        assert "confirmed" not in states.values(), states
        assert "testing" not in states.values(), states
        # The loss at init only shows a number that healthy and misaligned data share: it
        # decides nothing, and says what it saw.
        labels = hypotheses["training.cannot_overfit_batch/labels_inputs_mismatched"]
        assert labels.state == "inconclusive" and "loss at init" in labels.reason


@pytest.mark.slow
def test_run_confirms_nothing_on_a_healthy_script(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(
        "import importlib.util, sys\n"
        f"spec = importlib.util.spec_from_file_location('healthy', {str(HEALTHY)!r})\n"
        "healthy = importlib.util.module_from_spec(spec)\n"
        "spec.loader.exec_module(healthy)\n"
        "parts = healthy.harness()\n"
        "for _ in range(20):\n"
        "    loss = healthy.train_step(parts['model'], parts['batch'], parts['loss_fn'],"
        " parts['optimizer'])\n"
        "print('final loss', loss)\n")
    proc = subprocess.run([sys.executable, "-m", "torchdoctor", "run", "--json",
                           "--no-session", str(script)], cwd=ROOT, capture_output=True,
                          text=True, timeout=240, check=False)
    assert proc.returncode == 0, proc.stderr
    outcome = json.loads(proc.stdout)
    assert outcome["exited"] == "clean" and outcome["error"] is None
    assert not [f for f in outcome["findings"] if f["verdict"] == "confirmed"]
