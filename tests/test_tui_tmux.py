"""The real app in a real terminal (tmux), walked through the demo at 80 x 24."""

import importlib.util
import shutil
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


def load_driver():
    path = Path(__file__).with_name("tmux_demo.py")
    spec = importlib.util.spec_from_file_location("tmux_demo", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_the_demo_reaches_a_verified_fix_in_a_small_terminal():
    screens = load_driver().walk(80, 24)
    assert "mat1 and mat2" in screens[0] or "57600" in screens[0]
    assert "fc1" in screens[5]
    assert "✓ verified" in screens[-1]


def test_a_bare_start_diagnoses_a_paste_and_asks_for_a_target_to_test():
    intake, gather, asked = load_driver().bare_start(80, 24)
    assert "…or no traceback: pick a symptom" in intake
    assert "57600 = 64 × 30 × 30" in gather
    assert "needs your code" in asked or "train.py [args]" in asked
