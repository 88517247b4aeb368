"""The README's promises, tried as a new user would: its harness example works with `check`."""

import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()


def _harness_example() -> str:
    section = README.split("## The harness convention", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, flags=re.DOTALL)
    assert blocks, "the README's harness section has no python example"
    return blocks[0]


def test_the_readme_harness_example_passes_the_checkup(tmp_path):
    (tmp_path / "harness.py").write_text(_harness_example())
    name = re.search(r"^def (\w+)\(\):", _harness_example(), flags=re.MULTILINE).group(1)
    done = subprocess.run(
        [sys.executable, "-m", "torchdoctor", "check", f"harness.py:{name}", "--json",
         "--only", "census,grad_flow,weights_update,loop_order"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    findings = json.loads(done.stdout)["findings"]
    assert {f["probe"] for f in findings} == {"census", "grad_flow", "weights_update",
                                              "loop_order"}
    assert all(f["status"] in ("pass", "warn") for f in findings), findings


def test_the_readme_names_commands_that_exist():
    from torchdoctor.cli import COMMANDS

    shell = "".join(re.findall(r"```(?:sh|console)\n(.*?)```", README, flags=re.DOTALL))
    named = set(re.findall(r"^(?:\$ |pbpaste \| )?torchdoctor (\w+)", shell, flags=re.MULTILINE))
    assert named and named <= set(COMMANDS), named - set(COMMANDS)
