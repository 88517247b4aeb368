"""The verified minimal repro: write each candidate, run it fresh, keep the first that fails alike.

Candidates come smallest first: the sources the patient's ``repro`` probe wrote
from the live failure (failing module, failing op, whole model with the
recorded batch), then the user's script itself, copied and then run in place.
Each is run as ``python repro.py`` in a fresh process with a timeout, its
stderr parsed with ``parse_traceback``, and compared with the original error:
the same exception type and the same message signature (digits blanked, since
sizes that come from random inputs may differ), and every number of the
original message that comes from the module's configuration must be there
exactly. A candidate that was not seen to fail that way is never presented:
the result then says "no verified repro" and why.

Torch-free: the doctor only writes files and starts processes.
"""

from __future__ import annotations

import base64
import binascii
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from torchdoctor import process_groups
from torchdoctor.parse import parse_traceback
from torchdoctor.parsing.signature import message_signature
from torchdoctor.session_folder.lock import session_lock
from torchdoctor.session_folder.paths import inside, is_plain_name, read_bytes, write_bytes

REPRO_NAME = "repro.py"
LEVELS = ("module", "op", "model", "script")


def _seconds_from_environment(name: str, default: float) -> float:
    """A positive number of seconds from the environment; ``default`` when unset or not one."""
    try:
        value = float(os.environ.get(name, ""))
    except ValueError:
        return default
    return value if value > 0 else default


# Each candidate's budget; ``TORCHDOCTOR_REPRO_TIMEOUT`` sets it for run, report and the app.
DEFAULT_TIMEOUT = _seconds_from_environment("TORCHDOCTOR_REPRO_TIMEOUT", 60.0)
_INT = re.compile(r"(?<![\d.])\d+(?![\d.])")


@dataclass
class Candidate:
    level: str
    source: str
    what: str
    files: dict[str, bytes] = field(default_factory=dict)
    expect: dict[str, str] | None = None  # the error it must raise, when not the original
    config_numbers: list[int] = field(default_factory=list)
    argv: list[str] = field(default_factory=list)
    cwd: str | None = None
    refused: str = ""  # why it is never run: it would write outside the session


@dataclass
class Attempt:
    level: str
    reproduced: bool
    seconds: float
    got: dict[str, str] | None
    why: str = ""


@dataclass
class ReproResult:
    verified: bool
    level: str | None = None
    what: str = ""
    path: str | None = None
    files: list[str] = field(default_factory=list)
    lines: int = 0
    seconds: float = 0.0
    command: str = ""
    error: dict[str, str] | None = None
    expected: dict[str, str] | None = None
    attempts: list[dict[str, Any]] = field(default_factory=list)
    reason: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def candidates_from_probe(probe_result: dict | None) -> list[Candidate]:
    """The ``repro`` probe's levels as candidates (an error result gives none).

    The levels may come from a journal anyone could have written: a level
    with an unknown name, a file name that is not one plain name, or data
    that does not decode is kept as a refused candidate, never written.
    """
    if not probe_result:
        return []
    levels = (probe_result.get("facts") or {}).get("levels") or []
    return [_candidate(level) for level in (levels if isinstance(levels, list) else [])]


def _candidate(level: Any) -> Candidate:
    if not isinstance(level, dict) or not isinstance(level.get("source"), str):
        return Candidate("?", "", "", refused="a level without source text")
    name = level.get("level")
    if name not in LEVELS:
        return Candidate(str(name)[:40], "", "", refused=f"unknown level {str(name)[:40]!r}")
    files: dict[str, bytes] = {}
    raw_files = level.get("files") or {}
    for file_name, data in (raw_files.items() if isinstance(raw_files, dict) else ()):
        if not is_plain_name(file_name) or file_name == REPRO_NAME:
            return Candidate(name, "", "", refused=f"file name {str(file_name)[:80]!r} is not"
                             " one plain name inside the session")
        try:
            files[file_name] = base64.b64decode(data, validate=True)
        except (binascii.Error, TypeError, ValueError):
            return Candidate(name, "", "", refused=f"{file_name}: not base64 data")
    expect = level.get("expect")
    if not (isinstance(expect, dict) and all(isinstance(v, str) for v in expect.values())):
        expect = None
    numbers = level.get("config_numbers") or []
    numbers = [n for n in (numbers if isinstance(numbers, list) else [])
               if isinstance(n, int) and not isinstance(n, bool)]
    what = level.get("what") if isinstance(level.get("what"), str) else ""
    return Candidate(name, level["source"], what, files, expect, numbers)


def script_candidates(script: str, argv: list[str] | None = None,
                      cwd: str | None = None) -> list[Candidate]:
    """The widest levels: the user's script copied beside the report, then run where it lives."""
    path = Path(script)
    if not path.is_file():
        return []
    argv = list(argv or [])
    copied = Candidate("script", path.read_text(encoding="utf-8", errors="replace"),
                       f"the script {path.name} itself, copied", argv=argv)
    runner = (
        '"""Runs the original script in place, as `python SCRIPT ARGS` did."""\n'
        "import os\nimport runpy\nimport sys\n\n"
        f"SCRIPT = {str(path.resolve())!r}\n"
        f"sys.argv = [SCRIPT, *{argv!r}]\n"
        "sys.path.insert(0, os.path.dirname(SCRIPT))\n"
        f"os.chdir({str(Path(cwd or path.parent).resolve())!r})\n"
        'runpy.run_path(SCRIPT, run_name="__main__")\n'
    )
    in_place = Candidate("script", runner, f"the script {path.name} run in place")
    return [copied, in_place]


def same_failure(expected: dict[str, str], got: dict[str, str] | None,
                 config_numbers: list[int] | tuple[int, ...] = ()) -> bool:
    """Same type, same message signature, and the configuration's numbers exactly."""
    if not got:
        return False
    if _short(expected.get("type")) != _short(got.get("type")):
        return False
    want, have = expected.get("message") or "", got.get("message") or ""
    if message_signature(None, want) != message_signature(None, have):
        return False
    needed = {int(n) for n in _INT.findall(want)} & {int(n) for n in config_numbers}
    return needed <= {int(n) for n in _INT.findall(have)}


def _short(name: str | None) -> str:
    return (name or "").rsplit(".", 1)[-1]


def run_candidate(candidate: Candidate, directory: Path, expected: dict[str, str],
                  timeout: float = DEFAULT_TIMEOUT) -> Attempt:
    """Write the candidate into ``directory`` and run it in a fresh interpreter.

    It runs in a process group of its own that is ended afterwards, so what
    the repro starts (and a hung repro itself) never outlives the check.
    """
    directory.mkdir(parents=True, exist_ok=True)
    (directory / REPRO_NAME).write_text(candidate.source, encoding="utf-8")
    for name, data in candidate.files.items():
        (directory / name).write_bytes(data)
    want = candidate.expect or expected
    started = time.perf_counter()
    try:
        done = process_groups.run_bounded([sys.executable, REPRO_NAME, *candidate.argv],
                                          timeout, cwd=directory, stdin=subprocess.DEVNULL,
                                          env=_fresh_env())
    except subprocess.TimeoutExpired:
        return Attempt(candidate.level, False, round(time.perf_counter() - started, 3), None,
                       f"did not finish within {timeout:g} s (the repro verification limit)")
    seconds = round(time.perf_counter() - started, 3)
    if done.returncode == 0:
        return Attempt(candidate.level, False, seconds, None, "ran clean")
    parsed = parse_traceback(done.stderr)
    got = ({"type": parsed.type or "", "message": parsed.message} if parsed is not None
           else None)
    if got is None:
        tail = done.stderr.strip().splitlines()[-1:] or [f"exit code {done.returncode}"]
        return Attempt(candidate.level, False, seconds, None, f"failed without a traceback:"
                       f" {tail[0][:200]}")
    if same_failure(want, got, candidate.config_numbers):
        return Attempt(candidate.level, True, seconds, got)
    return Attempt(candidate.level, False, seconds, got, f"raised a different error:"
                   f" {got['type']}: {_first_line(got['message'])}")


def _fresh_env() -> dict[str, str]:
    """The user's environment, less what torchdoctor set for its own patient."""
    return {k: v for k, v in os.environ.items() if not k.startswith("TORCHDOCTOR_")}


def build_repro(session_dir: str | os.PathLike, error: dict[str, str],
                candidates: list[Candidate], timeout: float = DEFAULT_TIMEOUT) -> ReproResult:
    """Try the candidates in order; the first seen to fail alike becomes ``<session>/repro.py``."""
    session_dir = Path(session_dir)
    expected = {"type": error.get("type") or "", "message": error.get("message") or ""}
    attempts: list[Attempt] = []
    for number, candidate in enumerate(candidates):
        if candidate.refused:
            attempts.append(Attempt(candidate.level, False, 0.0, None,
                                    f"refused: {candidate.refused}"))
            continue
        inside(session_dir, "repro").mkdir(exist_ok=True)
        directory = inside(session_dir, "repro", f"{number}-{candidate.level}")
        if directory.exists():
            shutil.rmtree(directory)
        attempt = run_candidate(candidate, directory, expected, timeout)
        attempts.append(attempt)
        if attempt.reproduced:
            return _promote(session_dir, directory, candidate, attempt, expected, attempts)
    if not candidates:
        reason = "nothing to build a repro from (no live failure and no script)"
    else:
        reason = "no candidate failed the same way: " + "; ".join(
            f"{a.level}: {a.why}" for a in attempts)
    return ReproResult(False, expected=expected, reason=reason,
                       attempts=[asdict(a) for a in attempts])


def _promote(session_dir: Path, directory: Path, candidate: Candidate, attempt: Attempt,
             expected: dict[str, str], attempts: list[Attempt]) -> ReproResult:
    for name in [REPRO_NAME, *candidate.files]:
        write_bytes(inside(session_dir, name), read_bytes(directory, name))
    command = " ".join(["python", REPRO_NAME, *candidate.argv])
    return ReproResult(
        True, level=candidate.level, what=candidate.what, path=str(session_dir / REPRO_NAME),
        files=sorted(candidate.files), lines=len(candidate.source.splitlines()),
        seconds=attempt.seconds, command=command, error=attempt.got,
        expected=candidate.expect or expected, attempts=[asdict(a) for a in attempts])


def _first_line(text: str) -> str:
    lines = (text or "").strip().splitlines()
    return lines[0][:200] if lines else ""


def record_repro_from_patient(session: Any, client: Any, error: dict[str, str],
                              script: str | None, argv: list[str] | None = None,
                              timeout: float = DEFAULT_TIMEOUT) -> ReproResult:
    """Ask the live patient for the environment and the repro sources, verify, and journal it all.

    Environment variables' values never reach the journal: only their names.
    """
    from torchdoctor.patient.client import PatientError

    probe_result = None
    for name in ("env", "repro"):
        try:
            answer = client.probe(name)
        except PatientError as problem:
            session.note(f"the {name} probe could not run: {problem}")
            continue
        answer.pop("stdout", None)
        answer.pop("stderr", None)
        facts = answer.get("facts") or {}
        if isinstance(facts.get("env_vars"), dict):
            facts["env_vars"] = sorted(facts["env_vars"])
        session.record_probe({"probe": name, **answer})
        if name == "repro":
            probe_result = answer
    candidates = candidates_from_probe(probe_result)
    if script:
        candidates += script_candidates(script, argv, getattr(client, "cwd", None))
    result = build_repro(session.journal.directory, error, candidates, timeout)
    session.record_repro(**result.to_dict())
    return result


@dataclass
class PendingRepro:
    """Repro sources a session recorded but never ran: what ``report --rerun`` would run.

    Built from the journal alone, reading no other file: the user's script is
    only named here, and read when the person asks for the rerun.
    """

    directory: Path
    error: dict[str, str]
    candidates: list[Candidate]
    script: str | None = None
    argv: list[str] = field(default_factory=list)
    cwd: str | None = None

    def describe(self) -> list[str]:
        """One line per process the rerun would start, as the person would type it."""
        lines = []
        for number, candidate in enumerate(self.candidates):
            if candidate.refused:
                lines.append(f"{candidate.level}: not run ({candidate.refused})")
                continue
            lines.append(f"{candidate.level}: python {REPRO_NAME}  (in"
                         f" {self.directory / 'repro' / f'{number}-{candidate.level}'},"
                         f" {len(candidate.source.splitlines())} lines from the journal)")
        if self.script:
            command = " ".join(["python", self.script, *self.argv])
            lines.append(f"script: a copy of {self.script}, then {command}  (in"
                         f" {self.cwd or os.path.dirname(self.script)})")
        return lines

    def all_candidates(self) -> list[Candidate]:
        return self.candidates + (script_candidates(self.script, self.argv, self.cwd)
                                  if self.script else [])


def pending_repro(session_dir: str | os.PathLike) -> PendingRepro | None:
    """The session's unverified repro sources, when it recorded some and no verdict yet."""
    from torchdoctor.journal import JOURNAL_NAME, read_events

    directory = Path(session_dir)
    events, _ = read_events(inside(directory, JOURNAL_NAME))
    if any(e["type"] == "repro" for e in events):
        return None
    probe = next((e for e in reversed(events)
                  if e["type"] == "probe" and e.get("probe") == "repro"), None)
    error = next((e.get("error") for e in reversed(events) if e["type"] == "parse"), None)
    if probe is None or not error:
        return None
    start = next((e for e in events if e["type"] == "session"), {})
    script = start.get("target")
    if not (isinstance(script, str) and script.endswith(".py")):
        script = None
    return PendingRepro(directory, error, candidates_from_probe(probe), script,
                        list(start.get("argv") or []), start.get("cwd"))


def verify_pending(session_dir: str | os.PathLike, timeout: float = DEFAULT_TIMEOUT,
                   announce: Any = None) -> bool:
    """Run and verify a session's recorded repro sources; True when it ran.

    A session killed between the ``repro`` probe and its verification still has
    the sources in its journal. Running them runs code from the journal, so
    only a person's explicit request calls this (``report --rerun``, or a
    confirm in the app); ``announce(line)`` is told each command first. The
    session's lock is held from the check to the journaled verdict, so two
    callers never run it twice.
    """
    from torchdoctor.session import Session

    with session_lock(session_dir):
        pending = pending_repro(session_dir)
        if pending is None:
            return False
        for line in pending.describe():
            if announce is not None:
                announce(line)
        candidates = pending.all_candidates()
        session, _ = Session.resume(session_dir)
        try:
            result = build_repro(session_dir, pending.error, candidates, timeout)
            session.record_repro(**result.to_dict())
        finally:
            session.close()
    return True
