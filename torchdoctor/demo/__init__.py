"""The bundled broken example, so a newcomer can walk all five phases without a model.

The script lives under ``patient/`` because it imports torch and only ever
runs inside a patient process; the doctor side just copies it. The demo
always works on a copy in a temporary folder, so applying the fix never
touches the installed package.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent / "patient" / "broken_cnn.py"
HARNESS = "harness"
FIX_SUMMARY = "Size the Linear head for the 64 x 30 x 30 map the conv stack emits on 64 x 64 images."
FIX_BEFORE = "        self.fc1 = nn.Linear(9216, 128)  # sized for 28 x 28 inputs\n"
FIX_AFTER = "        self.fc1 = nn.Linear(64 * 30 * 30, 128)  # 57600: sized for 64 x 64 inputs\n"


@dataclass(frozen=True)
class DemoCopy:
    """Where the demo's working copy lives, and how to name it as a target."""

    directory: Path
    script: Path

    @property
    def harness(self) -> str:
        return f"{self.script}:{HARNESS}"


def prepare(directory: str | Path | None = None) -> DemoCopy:
    """Copy the broken script into ``directory`` (a fresh temporary folder by default)."""
    where = Path(directory) if directory else Path(tempfile.mkdtemp(prefix="torchdoctor-demo-"))
    where.mkdir(parents=True, exist_ok=True)
    script = where / SCRIPT.name
    shutil.copyfile(SCRIPT, script)
    return DemoCopy(where, script)


def apply_fix(script: str | Path) -> bool:
    """Apply the bundled fix to a copy; False when the copy no longer has the broken line."""
    path = Path(script)
    if path.resolve() == SCRIPT:
        raise ValueError("the demo fix is applied to a copy, never to the bundled script")
    source = path.read_text(encoding="utf-8")
    if FIX_BEFORE not in source:
        return False
    path.write_text(source.replace(FIX_BEFORE, FIX_AFTER, 1), encoding="utf-8")
    return True
