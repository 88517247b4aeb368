"""Proving a patch: the unpatched and the patched copy side by side, and where the copy runs."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from torchdoctor.fixes.causes import Target
from torchdoctor.fixes.verification import EXTRA_STEPS, judge_script, run_side_by_side
from torchdoctor.fixes.workspace import Workspace
from torchdoctor.investigation.walk import Target as AppTarget
from torchdoctor.tui.patch_step import _fix_target

TRAINS = textwrap.dedent('''\
    import time

    import torch

    w = torch.zeros(3, requires_grad=True)
    opt = torch.optim.SGD([w], lr=0.1)
    for step in range(50):
        time.sleep(0.2)  # a step of real training takes a while
        if step == FAIL_AT:
            raise RuntimeError("mat1 and mat2 shapes cannot be multiplied (4x3 and 5x2)")
        (w - 1).pow(2).sum().backward()
        opt.step()
''')


def test_a_relative_target_is_where_its_run_started_not_where_fix_runs(tmp_path):
    (tmp_path / "train.py").write_text("print('hi')\n")
    target = Target("script", "train.py", [], str(tmp_path))
    assert target.file == tmp_path / "train.py"
    assert target.root == tmp_path.resolve()
    harness = Target("harness", "h.py:make", [], str(tmp_path))
    assert harness.file == tmp_path / "h.py"


@pytest.mark.slow
def test_the_patched_copy_stops_at_the_step_after_the_unpatched_failure(tmp_path):
    for name, fail_at in (("before", 3), ("after", -1)):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "train.py").write_text(TRAINS.replace("FAIL_AT", str(fail_at)))
    before, after = run_side_by_side(
        (tmp_path / "before" / "train.py", tmp_path / "before"),
        (tmp_path / "after" / "train.py", tmp_path / "after"), [], timeout=300)
    assert before.ended == "raised" and before.steps == 3
    # 50 steps would be an exit; the patched copy is told to stop one step past the failure.
    assert after.ended == "steps_reached" and after.steps >= 3 + EXTRA_STEPS
    assert after.steps < 50
    verdict = judge_script(before, after)
    assert verdict.verified, verdict.detail


@pytest.mark.slow
def test_a_patch_that_fails_the_same_way_is_not_verified(tmp_path):
    for name in ("before", "after"):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "train.py").write_text(TRAINS.replace("FAIL_AT", "2"))
    before, after = run_side_by_side(
        (tmp_path / "before" / "train.py", tmp_path / "before"),
        (tmp_path / "after" / "train.py", tmp_path / "after"), [], timeout=300)
    verdict = judge_script(before, after)
    assert verdict.verdict == "same_error" and after.steps == 2
    assert Path(after.error["frame"]["file"]).name == "train.py"


def test_the_scratch_copy_leaves_installed_environments_out_whatever_their_name(tmp_path):
    (tmp_path / "train.py").write_text("print('hi')\n")
    (tmp_path / "data.csv").write_text("1,2\n")
    for env, marker in (("myenv", "pyvenv.cfg"), ("conda-env", "conda-meta")):
        library = tmp_path / env / "lib" / "site-packages" / "somelib"
        library.mkdir(parents=True)
        (library / "__init__.py").write_text("x = 1\n")
        marker_path = tmp_path / env / marker
        marker_path.mkdir() if marker == "conda-meta" else marker_path.write_text("home = /usr\n")
    with Workspace(tmp_path) as space:
        copied = sorted(p.relative_to(space.copy).as_posix() for p in space.copy.rglob("*"))
    assert copied == ["data.csv", "train.py"]


def test_the_app_verifies_in_the_folder_its_patients_ran_the_script_in(tmp_path, monkeypatch):
    project = tmp_path / "project"
    project.mkdir()
    (project / "train.py").write_text("print('hi')\n")
    monkeypatch.chdir(tmp_path)  # the app opened one folder up, as from a home directory
    target = _fix_target(AppTarget(script=str(project / "train.py")))
    assert target is not None and target.root == project.resolve()
