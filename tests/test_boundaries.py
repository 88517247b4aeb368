"""The doctor never imports torch: it must start fast and outlive the patient.

Each check runs in a fresh interpreter, because this test process itself
imports torch elsewhere in the suite.
"""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "fixtures" / "examples" / "linear_mismatch.txt"


def run_python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, timeout=60, check=False)


def test_importing_the_doctor_modules_leaves_torch_out():
    result = run_python(
        "import sys\n"
        "import torchdoctor, torchdoctor.cli, torchdoctor.match, torchdoctor.facts\n"
        "import torchdoctor.symptoms, torchdoctor.render, torchdoctor.knowledge\n"
        "import torchdoctor.commands.diagnose\n"
        "torchdoctor.cli.build_parser()\n"
        "print(sorted(m for m in sys.modules if m == 'torch' or m.startswith('torch.')))\n"
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_every_doctor_module_imports_without_torch():
    result = run_python(
        "import importlib, pathlib, sys\n"
        "root = pathlib.Path('torchdoctor')\n"
        "names = sorted('.'.join(p.with_suffix('').parts).removesuffix('.__init__')\n"
        "               for p in root.rglob('*.py')\n"
        "               if 'patient' not in p.parts and p.name != '__main__.py')\n"
        "for name in names:\n"
        "    importlib.import_module(name)\n"
        "    assert 'torch' not in sys.modules, f'{name} imports torch'\n"
        "print(len(names))\n"
    )
    assert result.returncode == 0, result.stderr
    assert int(result.stdout) > 5


def test_running_diagnose_leaves_torch_out():
    result = run_python(
        "import contextlib, io, sys\n"
        "from torchdoctor.cli import main\n"
        "for extra in ([], ['--json']):\n"
        "    with contextlib.redirect_stdout(io.StringIO()):\n"
        f"        status = main(['diagnose', {str(FIXTURE)!r}, *extra])\n"
        "    assert status == 0, status\n"
        "print('torch' in sys.modules)\n"
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"
