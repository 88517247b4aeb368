"""``torchdoctor fix`` end to end: a real failing run, a patch of its own file, a rerun that proves it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ZOO = Path(__file__).parent / "zoo"


def torchdoctor(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "TORCHDOCTOR_SESSIONS": str(cwd / "sessions")}
    root = str(Path(__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    return subprocess.run([sys.executable, "-m", "torchdoctor", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600, check=False)


def project(tmp_path: Path, source: Path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    shutil.copy(source, folder / source.name)
    return folder / source.name


def fix_json(folder: Path, *extra: str) -> tuple[dict, int]:
    done = torchdoctor("fix", "--json", *extra, cwd=folder)
    return json.loads(done.stdout), done.returncode


def test_crash_is_fixed_in_a_copy_and_written_only_when_asked(tmp_path):
    script = project(tmp_path, ZOO / "errors" / "flatten_linear.py")
    original = script.read_text()
    assert torchdoctor("run", "--no-tui", script.name, cwd=script.parent).returncode != 2

    report, status = fix_json(script.parent)
    assert status == 0
    first = report["patches"][0]
    assert (first["entry"], first["hypothesis"]) == ("shape.linear_in_features", "flatten_size")
    assert first["verified"] is True
    assert "-            nn.Linear(9216, 128)," in first["diff"]
    assert "+            nn.Linear(57600, 128)," in first["diff"]
    after = first["verification"]["after"]
    before = first["verification"]["before"]
    assert before["error"]["type"] == "RuntimeError"
    # Past the failure: through an optimizer step the unpatched copy never reached, without
    # an error (it is stopped there, or it ends first when the unpatched copy was slower
    # to fail than the whole patched run).
    assert after["steps"] > before["steps"] and after["error"] is None
    assert script.read_text() == original, "fix without --apply must not touch the user's file"

    report, status = fix_json(script.parent, "--apply")
    assert status == 0 and report["applied"]["written"] is True
    assert Path(report["applied"]["backup"]).read_text() == original
    assert "nn.Linear(57600, 128)" in script.read_text()
    trained = subprocess.run([sys.executable, script.name], cwd=script.parent,
                             capture_output=True, text=True, timeout=300, check=False)
    assert trained.returncode == 0, trained.stderr


@pytest.mark.slow
def test_silent_failure_is_fixed_when_its_check_passes(tmp_path):
    harness = project(tmp_path, ZOO / "silent" / "missing_step.py")
    torchdoctor("check", f"{harness.name}:harness", cwd=harness.parent)
    report, status = fix_json(harness.parent)
    verified = [p for p in report["patches"] if p["verified"]]
    assert status == 0 and verified
    assert verified[0]["hypothesis"] == "step_not_called"
    assert "+    optimizer.step()" in verified[0]["diff"]
    assert verified[0]["verification"]["before"]["ended"] == "fail"
    assert verified[0]["verification"]["after"]["ended"] == "pass"


@pytest.mark.slow
def test_a_patch_that_leaves_the_error_is_not_verified(tmp_path):
    # Labels run 1..4 and the head has 4 outputs; the shifted labels are fine, but this
    # program also indexes a table with the raw label, so the same kind of IndexError stays.
    script = tmp_path / "project" / "labels.py"
    script.parent.mkdir()
    script.write_text(
        "import torch\nfrom torch import nn\n\n"
        "def main():\n"
        "    torch.manual_seed(0)\n"
        "    model = nn.Linear(8, 4)\n"
        "    x, y = torch.randn(16, 8), torch.randint(1, 5, (16,))\n"
        "    weights = torch.ones(4)[y]\n"
        "    loss = nn.CrossEntropyLoss()(model(x), y)\n"
        "    loss.backward()\n\n"
        "main()\n")
    torchdoctor("run", "--no-tui", script.name, cwd=script.parent)
    report, status = fix_json(script.parent)
    assert status == 1
    assert report["patches"] and not any(p["verified"] for p in report["patches"])


def test_fix_without_sessions_is_a_usage_error(tmp_path):
    done = torchdoctor("fix", cwd=tmp_path)
    assert done.returncode == 2 and "no sessions" in done.stderr
