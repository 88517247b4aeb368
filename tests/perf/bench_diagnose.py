"""How fast ``torchdoctor diagnose`` is, against the targets in the issue.

    python tests/perf/bench_diagnose.py

Prints, with the target beside each figure:
- the whole ``torchdoctor diagnose FIXTURE`` process (median of 10; ≤ 0.35 s),
  next to ``python -c "import torch"`` and bare ``python -c pass`` for scale;
- ``match.diagnose`` per traceback over every fixture, shipped KB (≤ 5 ms);
- the same with a synthetic 5,000-entry KB (≤ 50 ms);
- a 10 MB log, end to end as a process (≤ 1 s).
"""

from __future__ import annotations

import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from torchdoctor.knowledge import (
    Entry,
    Hypothesis,
    KnowledgeBase,
    KnowledgeError,
    Pattern,
    load_knowledge,
)
from torchdoctor.match import diagnose

FIXTURES = ROOT / "tests" / "fixtures"
README_EXAMPLE = FIXTURES / "examples" / "linear_mismatch.txt"


def process_seconds(args: list[str], runs: int = 10, stdin: bytes | None = None) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(args, cwd=ROOT, input=stdin, capture_output=True, check=False)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def fixture_texts() -> list[str]:
    return [path.read_text(errors="replace") for path in sorted(FIXTURES.rglob("*.txt"))]


def per_traceback_ms(texts: list[str], kb: KnowledgeBase, repeat: int = 20) -> float:
    diagnose(texts[0], kb)  # build the match index once, as a long-lived app would
    times = []
    for text in texts:
        for _ in range(repeat):
            start = time.perf_counter()
            diagnose(text, kb)
            times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


_WORDS = ("tensor", "shape", "device", "grad", "index", "module", "buffer", "kernel", "stride",
          "batch", "sparse", "quantized", "graph", "hook", "stream", "autocast", "storage")


def synthetic_kb(size: int, shipped: KnowledgeBase) -> KnowledgeBase:
    """The shipped entries plus made-up ones with torch-like wording and named groups."""
    rng = random.Random(0)
    entries = list(shipped.entries)
    for number in range(size - len(entries)):
        words = " ".join(rng.choice(_WORDS) for _ in range(4))
        regex = rf"{words} (?P<a>\d+) does not fit {rng.choice(_WORDS)} (?P<b>\d+) #{number}"
        entries.append(Entry(
            id=f"other.synthetic_{number}", title=f"synthetic {number}", category="other",
            patterns=[Pattern(regex=regex, type=rng.choice(["RuntimeError", "ValueError"]))],
            hypotheses=[Hypothesis(id="h", statement="{a} vs {b}")],
        ))
    return KnowledgeBase(entries)


def row(label: str, figure: str, target: str = "") -> None:
    print(f"{label:52} {figure:>10}  {target}")


def byte_compile_package() -> None:
    """Compile torchdoctor's modules the way ``pip install`` does, so the process is
    timed as users run it: in an environment that forbids writing bytecode
    (PYTHONDONTWRITEBYTECODE) every run would otherwise time Python's compiler on
    the package's source, while torch, as installed, loads compiled code."""
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "torchdoctor")],
                   check=True)


def main() -> None:
    python = sys.executable
    byte_compile_package()
    row("measure", "figure", "target")
    bare = process_seconds([python, "-c", "pass"])
    torch_import = process_seconds([python, "-c", "import torch"], runs=5)
    whole = process_seconds([python, "-m", "torchdoctor", "diagnose", str(README_EXAMPLE)])
    as_json = process_seconds([python, "-m", "torchdoctor", "diagnose", str(README_EXAMPLE),
                               "--json"])
    row("python -c pass (interpreter start)", f"{bare:.3f} s")
    row('python -c "import torch"', f"{torch_import:.3f} s")
    row("torchdoctor diagnose FIXTURE (text)", f"{whole:.3f} s", "<= 0.35 s")
    row("torchdoctor diagnose FIXTURE --json", f"{as_json:.3f} s", "<= 0.35 s")
    row("  ratio to import torch", f"{whole / torch_import:.2f} x")
    row("  beyond the interpreter start", f"{whole - bare:.3f} s")

    try:
        shipped = load_knowledge(include_user=False)
    except KnowledgeError as error:
        raise SystemExit(f"cannot benchmark matching: {error}") from None
    texts = fixture_texts()
    row(f"match per traceback, shipped KB ({len(shipped)} entries, {len(texts)} texts)",
        f"{per_traceback_ms(texts, shipped):.2f} ms", "<= 5 ms")
    big = synthetic_kb(5000, shipped)
    row("match per traceback, synthetic 5,000-entry KB",
        f"{per_traceback_ms(texts, big, repeat=5):.2f} ms", "<= 50 ms")

    noise = b"".join(b"2024-05-01 12:%02d:%02d | epoch 3 | step %7d | loss 0.4312 | lr 1e-3\n"
                     % (i // 60 % 60, i % 60, i) for i in range(150_000))
    log = (noise * (1 + 10 * 2**20 // len(noise)))[: 10 * 2**20] + README_EXAMPLE.read_bytes()
    with tempfile.NamedTemporaryFile(suffix=".log") as handle:
        handle.write(log)
        handle.flush()
        big_log = process_seconds([python, "-m", "torchdoctor", "diagnose", handle.name],
                                  runs=3)
    row(f"10 MB log end to end ({len(log) / 2**20:.1f} MiB)", f"{big_log:.3f} s", "<= 1 s")


if __name__ == "__main__":
    main()
