"""How the command line hands over to the app, or does not: flags after the script, pipes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parent.parent


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """``torchdoctor run ...`` with stdout a pipe, as in a script or CI log."""
    return subprocess.run([sys.executable, "-m", "torchdoctor", "run", *args],
                          capture_output=True, text=True, cwd=cwd, timeout=180, check=False,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})


def script(tmp_path: Path) -> Path:
    path = tmp_path / "show_argv.py"
    path.write_text("import sys\nprint('argv:', sys.argv[1:])\n")
    return path


def test_own_flags_after_the_script_go_to_it_and_are_named_in_one_line(tmp_path):
    # Piped: the app must not open (the run would hang on it) and text comes out.
    done = run(str(script(tmp_path)), "--no-tui", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "argv: ['--no-tui', '--json']" in done.stdout  # as python -m pdb would pass them
    notes = [line for line in done.stderr.splitlines() if "--no-tui --json" in line]
    assert len(notes) == 1 and "put them first" in notes[0]
    assert not done.stdout.lstrip().startswith("{")  # --json was the script's, not ours


def test_a_double_dash_ends_torchdoctors_options(tmp_path):
    done = run("--json", "--", str(script(tmp_path)), "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    outcome = json.loads(done.stdout)
    assert outcome["argv"] == ["--json"] and outcome["exited"] == "clean"
    assert "put them first" in done.stderr  # --json after the script is still the script's
