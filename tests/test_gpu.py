"""The real CUDA failures: a device-side assert, a CUDA OOM, a device mismatch.

These need a GPU and skip cleanly without one (CI has none). On a GPU
machine they prove the CPU fallback and the diagnosis on the real messages;
with TORCHDOCTOR_SAVE_GPU_FIXTURES=DIR they also keep those messages there,
to be committed under tests/fixtures/pastes/ as text fixtures for CPU runs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")]

SCRIPTS = {
    "device_side_assert": """
        import torch
        import torch.nn.functional as F
        logits = torch.randn(8, 10, device="cuda", requires_grad=True)
        labels = torch.arange(1, 9, device="cuda") + 2   # 1-based-ish labels past 9
        loss = F.cross_entropy(logits, labels)
        loss.backward()
        torch.cuda.synchronize()
    """,
    "cuda_oom": """
        import torch
        free, total = torch.cuda.mem_get_info()
        blocks = [torch.empty(int(free * 0.6), dtype=torch.uint8, device="cuda")]
        blocks.append(torch.empty(int(free * 0.6), dtype=torch.uint8, device="cuda"))
    """,
    "device_mismatch": """
        import torch
        from torch import nn
        model = nn.Linear(16, 4).cuda()
        x = torch.randn(2, 16)                 # left on the CPU
        model(x)
    """,
}
EXPECTED_ENTRY = {
    "device_side_assert": {"index.device_side_assert", "index.nll_target_assert"},
    "cuda_oom": {"memory.cuda_oom"},
    "device_mismatch": {"device.mixed_devices", "device.input_weight_device"},
}


def _run(name: str, tmp_path: Path) -> dict:
    script = tmp_path / f"{name}.py"
    script.write_text(textwrap.dedent(SCRIPTS[name]))
    done = subprocess.run([sys.executable, "-m", "torchdoctor", "run", "--no-tui", "--json",
                           "--no-session", str(script)],
                          capture_output=True, text=True, timeout=600, cwd=tmp_path, check=False)
    outcome = json.loads(done.stdout)
    keep = os.environ.get("TORCHDOCTOR_SAVE_GPU_FIXTURES")
    if keep and outcome.get("error"):
        Path(keep).mkdir(parents=True, exist_ok=True)
        from torchdoctor.recording import traceback_text

        # The kernel's assertion lines reach stderr; the traceback comes from the patient.
        Path(keep, f"real_cuda_{name}.txt").write_text(
            (outcome.get("stderr") or "") + traceback_text(outcome["error"]) + "\n")
    return outcome


@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_real_cuda_failure_is_matched_to_its_entry(name, tmp_path):
    outcome = _run(name, tmp_path)
    assert outcome["error"], outcome
    assert outcome["matches"][0]["entry"] in EXPECTED_ENTRY[name], outcome["matches"][:2]


def test_cpu_fallback_turns_the_device_side_assert_into_the_real_error(tmp_path):
    outcome = _run("device_side_assert", tmp_path)
    fallback = [f for f in outcome["findings"] if f["probe"] == "cpu_fallback"]
    assert fallback, outcome["findings"]
    facts = fallback[0]["facts"]
    assert facts["reproduced_on_cpu"] is True
    assert "out of bounds" in facts["cpu_error_message"]
    assert any(f["verdict"] == "confirmed" for f in fallback)
