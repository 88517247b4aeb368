"""The doctor's handle on a patient process. Imports no torch.

The patient is ``python -m torchdoctor.patient`` with a dedicated pipe pair
for messages; its stdout and stderr are drained by threads (so a script that
prints megabytes cannot block) and handed back per request, bounded. Every
request but the user's own script has a time limit, and a limit that fires
says which one it was; a patient that dies or hangs is reported with how it
ended and what it last wrote, and the doctor carries on.
"""

from __future__ import annotations

import os
import re
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from torchdoctor import process_groups, wire
from torchdoctor.probes_manifest import PROBES

if TYPE_CHECKING:
    from typing_extensions import Self

CAPTURE_LIMIT = 64 * 1024
STDERR_TAIL_LINES = 20
# None: no limit. The user's script runs as long as ``python SCRIPT`` would
# (training can take hours) unless they set one; everything of ours is bounded.
DEFAULT_TIMEOUTS: dict[str, float | None] = {
    "hello": 120.0, "load_harness": 300.0, "run_script": None, "probe": 120.0,
    "shutdown": 5.0}
# The setting that changes each limit, named in the message when it fires.
LIMIT_NAMES = {"hello": "the start-up limit",
               "load_harness": "the harness-loading limit; set it with check --timeout",
               "run_script": "the script's limit, set with run --timeout",
               "rerun": "the limit on a rerun of the script; set it with run --probe-timeout",
               "probe": "the probe's limit; set it with run --probe-timeout or check --timeout",
               "shutdown": "the shutdown limit"}
# A rerun of the script (in a fresh patient, for a probe) gets this much more
# than twice what the first run took, when no budget is set.
RERUN_SLACK_SECONDS = 120.0
_MARK = re.compile(rb"\x00\x1etorchdoctor-mark:(\d+)\x1e\x00")
_MARK_PREFIX = b"\x00\x1etorchdoctor-mark:"
_PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class PatientError(Exception):
    """Anything that went wrong on the patient's side of a request."""

    # What the target printed during the request that failed, when it was
    # the patient that failed: kept for the user (the last lines before a
    # crash are often the clue), with how many bytes were cut before them.
    stdout: str = ""
    stderr: str = ""
    output_dropped: dict[str, int] | None = None


class PatientDied(PatientError):
    def __init__(self, doing: str, returncode: int | None, stderr_tail: str) -> None:
        self.doing = doing
        self.returncode = returncode
        self.signal = _signal_name(returncode)
        self.stderr_tail = stderr_tail
        how = (f"killed by {self.signal}" if self.signal
               else f"exited with code {returncode}" if returncode is not None
               else "closed its channel")
        text = f"the patient died while {doing}: {how}"
        if stderr_tail.strip():
            text += "\n--- last lines of its stderr ---\n" + stderr_tail.rstrip()
        super().__init__(text)


class PatientTimeout(PatientError):
    def __init__(self, doing: str, seconds: float, stderr_tail: str, limit: str = "") -> None:
        self.doing = doing
        self.seconds = seconds
        self.stderr_tail = stderr_tail
        self.limit = limit
        text = f"the patient did not finish {doing} within {seconds:g} s and was stopped"
        if limit:
            text += f" ({limit})"
        if stderr_tail.strip():
            text += "\n--- last lines of its stderr ---\n" + stderr_tail.rstrip()
        super().__init__(text)


class PatientRequestError(PatientError):
    """An error reply: the patient is alive, the request failed.

    ``user`` is true when the exception is the user's own (their script or
    harness raised while importing or building), not torchdoctor's.
    """

    def __init__(self, op: str, error: Mapping[str, Any], user: bool) -> None:
        self.op = op
        self.type = str(error.get("type", "Error"))
        self.message = str(error.get("message", ""))
        self.traceback = str(error.get("traceback") or "")
        self.user = user
        super().__init__(f"{self.type}: {self.message}")


def _signal_name(returncode: int | None) -> str | None:
    if returncode is None or returncode >= 0:
        return None
    try:
        return signal.Signals(-returncode).name
    except ValueError:
        return f"signal {-returncode}"


def _split_partial_mark(data: bytes) -> tuple[bytes, bytes]:
    """Hold back a mark cut in two by a read, so it is recognised whole next time."""
    full = list(_MARK.finditer(data))
    after = full[-1].end() if full else 0
    start = data.rfind(b"\x00", after)
    if start < 0 or len(data) - start > len(_MARK_PREFIX) + 24:
        return data, b""
    piece = data[start:]
    if _MARK_PREFIX.startswith(piece) or (
            piece.startswith(_MARK_PREFIX)
            and re.fullmatch(rb"\d*\x1e?", piece[len(_MARK_PREFIX):])):
        return data[:start], piece
    return data, b""


class _StreamTap:
    """Drains one of the patient's output pipes in a thread.

    Keeps what arrived since the last request (bounded to its last bytes) and
    the overall tail for post-mortems, and notices the marks the patient
    writes at the end of each request.
    """

    def __init__(self, stream: Any) -> None:
        self._stream = stream
        self._cond = threading.Condition()
        self._capture = bytearray()
        self._dropped = 0
        self._tail = bytearray()
        self._last_mark = -1
        self.eof = False
        self._thread = threading.Thread(target=self._drain, daemon=True)
        self._thread.start()

    def _drain(self) -> None:
        fd = self._stream.fileno()
        carry = b""
        while True:
            try:
                chunk = os.read(fd, 1 << 16)
            except OSError:
                chunk = b""
            if not chunk:
                break
            data, carry = _split_partial_mark(carry + chunk)
            self._take_in(data)
        self._take_in(carry)
        with self._cond:
            self.eof = True
            self._cond.notify_all()

    def _take_in(self, data: bytes) -> None:
        marks = [int(m.group(1)) for m in _MARK.finditer(data)]
        text = _MARK.sub(b"", data)
        with self._cond:
            self._capture += text
            if len(self._capture) > CAPTURE_LIMIT:
                excess = len(self._capture) - CAPTURE_LIMIT
                del self._capture[:excess]
                self._dropped += excess
            self._tail = (self._tail + text)[-CAPTURE_LIMIT:]
            if marks:
                self._last_mark = max(self._last_mark, *marks)
            self._cond.notify_all()

    def take(self, mark: int | None, wait: float) -> tuple[str, int]:
        """What arrived since the last take; waits (briefly) for the request's mark."""
        deadline = time.monotonic() + wait
        with self._cond:
            while mark is not None and self._last_mark < mark and not self.eof:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._cond.wait(left)
            text = self._capture.decode("utf-8", "replace")
            dropped = self._dropped
            self._capture = bytearray()
            self._dropped = 0
            return text, dropped

    def tail(self, lines: int = STDERR_TAIL_LINES) -> str:
        with self._cond:
            text = self._tail.decode("utf-8", "replace")
        return "\n".join(text.splitlines()[-lines:])

    def wait_eof(self, seconds: float) -> None:
        self._thread.join(seconds)


class PatientClient:
    """One patient process. Use :meth:`start`; close it (or use ``with``) when done."""

    def __init__(self, process: subprocess.Popen, send_fd: int, recv_fd: int,
                 env_overrides: dict[str, str | None], cwd: str | None,
                 budget: float | None = None) -> None:
        self.process = process
        self._send_fd = send_fd
        self._reader = wire.LineReader(recv_fd)
        self._stdout = _StreamTap(process.stdout)
        self._stderr = _StreamTap(process.stderr)
        self.env_overrides = env_overrides
        self.cwd = cwd
        self.budget = budget  # seconds for each probe and rerun; None: each its own default
        self.info: dict[str, Any] = {}
        self.target: dict[str, Any] | None = None
        self._next_id = 1
        self._closed = False
        self._lock = threading.Lock()

    # ------------------------------------------------------------ lifecycle

    @classmethod
    def start(cls, env: Mapping[str, str | None] | None = None, cwd: str | None = None,
              timeout: float | None = None, budget: float | None = None) -> PatientClient:
        """Start a patient and wait for its ``hello``.

        ``env`` overrides the inherited environment (``None`` removes a
        variable): ``TORCHDOCTOR_SEED``, ``CUDA_LAUNCH_BLOCKING``,
        ``CUDA_VISIBLE_DEVICES``, ``TORCHDOCTOR_DEVICE=cpu``. ``budget``
        bounds each probe and each rerun of the target (and is passed on to
        the fresh patients made from this one).
        """
        client = cls.spawn(env, cwd, budget)
        client.wait_ready(timeout)
        return client

    @classmethod
    def spawn(cls, env: Mapping[str, str | None] | None = None, cwd: str | None = None,
              budget: float | None = None) -> PatientClient:
        """Start a patient without waiting for it; :meth:`wait_ready` before the first request.

        The patient spends its first second or more importing torch; a caller
        with work of its own (opening a session, loading the knowledge base)
        does it in that time instead of before it.
        """
        overrides = dict(env or {})
        full_env = dict(os.environ)
        for key, value in overrides.items():
            if value is None:
                full_env.pop(key, None)
            else:
                full_env[key] = str(value)
        paths = [p for p in full_env.get("PYTHONPATH", "").split(os.pathsep) if p]
        if _PACKAGE_ROOT not in paths:
            full_env["PYTHONPATH"] = os.pathsep.join([_PACKAGE_ROOT, *paths])
        to_patient, send_fd = os.pipe()
        recv_fd, from_patient = os.pipe()
        try:
            process = process_groups.spawn(
                [sys.executable, "-m", "torchdoctor.patient",
                 "--fd-in", str(to_patient), "--fd-out", str(from_patient)],
                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                pass_fds=(to_patient, from_patient), close_fds=True, env=full_env, cwd=cwd,
            )
        except BaseException:
            for fd in (to_patient, send_fd, recv_fd, from_patient):
                os.close(fd)
            raise
        os.close(to_patient)
        os.close(from_patient)
        return cls(process, send_fd, recv_fd, overrides, cwd, budget)

    def wait_ready(self, timeout: float | None = None) -> dict[str, Any]:
        """Wait for the ``hello`` of a spawned patient (torch imported, loop serving).

        A patient that dies or hangs on its way up is closed, and the error raised.
        """
        try:
            self.info = self.request("hello", timeout=timeout)
        except BaseException:
            self.close()
            raise
        return self.info

    @property
    def alive(self) -> bool:
        return not self._closed and self.process.poll() is None

    @property
    def cuda_available(self) -> bool:
        return bool(self.info.get("cuda_available"))

    def close(self) -> None:
        """Ask the patient to leave, kill it if it will not, and reap what it forked."""
        if self._closed:
            return
        if self.process.poll() is None:
            try:
                self.request("shutdown")
            except PatientError:
                pass
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                pass
        self._kill_group()
        self._closed = True
        for fd in (self._send_fd, self._reader.fd):
            try:
                os.close(fd)
            except OSError:
                pass
        self._stdout.wait_eof(1.0)
        self._stderr.wait_eof(1.0)
        for stream in (self.process.stdout, self.process.stderr):
            try:
                stream.close()
            except OSError:
                pass

    def _kill_group(self) -> None:
        process_groups.end_group(self.process)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def fresh(self, env: Mapping[str, str | None] | None = None) -> PatientClient:
        """A new patient with this one's settings plus ``env``, the same target loaded."""
        merged = {**self.env_overrides, **dict(env or {})}
        other = PatientClient.start(merged, self.cwd, budget=self.budget)
        try:
            other._load(self.target)
        except BaseException:
            other.close()
            raise
        return other

    def restart(self) -> dict[str, Any] | None:
        """Replace a dead (or poisoned) patient with a fresh one on the same target.

        Returns the reply of reloading the target, or None when there was none.
        """
        self.close()
        other = PatientClient.start(self.env_overrides, self.cwd, budget=self.budget)
        target = self.target
        self.__dict__.update(other.__dict__)
        return self._load(target)

    def _load(self, target: dict[str, Any] | None) -> dict[str, Any] | None:
        if target is None:
            return None
        if target["kind"] == "harness":
            return self.load_harness(target["spec"], timeout=self.budget)
        first_run = float(target.get("seconds") or 0.0)
        seconds = self.budget or (2 * first_run + RERUN_SLACK_SECONDS)
        return self.run_script(target["path"], target["argv"], target.get("cwd"),
                               timeout=seconds, limit=LIMIT_NAMES["rerun"])

    # ------------------------------------------------------------ requests

    def hello(self) -> dict[str, Any]:
        self.info = self.request("hello")
        return self.info

    def load_harness(self, spec: str, timeout: float | None = None) -> dict[str, Any]:
        reply = self.request("load_harness", timeout=timeout, spec=spec)
        self.target = {"kind": "harness", "spec": spec}
        return reply

    def run_script(self, path: str, argv: list[str] | tuple[str, ...] = (),
                   cwd: str | None = None, timeout: float | None = None,
                   limit: str | None = None) -> dict[str, Any]:
        """Run a script as ``__main__``; the reply says how it ended and what was found.

        With no ``timeout`` the script runs as long as it runs, as it would
        under ``python``; ``limit`` names the setting a timeout came from.
        """
        path = os.path.abspath(path)
        self.target = {"kind": "script", "path": path, "argv": list(argv), "cwd": cwd,
                       "seconds": None}
        started = time.monotonic()
        reply = self.request("run_script", timeout=timeout, limit=limit, path=path,
                             argv=list(argv), cwd=cwd)
        self.target["seconds"] = time.monotonic() - started  # a rerun's budget is based on it
        return reply

    def probe(self, name: str, params: Mapping[str, Any] | None = None,
              timeout: float | None = None) -> dict[str, Any]:
        """Run one probe; returns its result (``status``, ``summary``, ``facts``, ...)."""
        params = dict(params or {})
        reply = self.request("probe", timeout=timeout or self.budget
                             or probe_timeout(name, params), name=name, params=params)
        result = reply["result"]
        result["stdout"], result["stderr"] = reply.get("stdout", ""), reply.get("stderr", "")
        return result

    def request(self, op: str, timeout: float | None = None, limit: str | None = None,
                **fields: Any) -> dict[str, Any]:
        """Send one request and wait for its reply; raises on an error reply or a dead patient.

        The reply carries ``stdout`` and ``stderr``: what the patient printed
        during the request, the last ``CAPTURE_LIMIT`` bytes of each.
        ``timeout`` None takes the op's default (which for a script is none).
        """
        seconds = timeout if timeout is not None else DEFAULT_TIMEOUTS.get(op, 120.0)
        limit = limit or LIMIT_NAMES.get(op, "")
        doing = _doing(op, fields)
        with self._lock:
            if self._closed:
                raise PatientDied(doing, self.process.returncode, self._stderr.tail())
            msg_id = self._next_id
            self._next_id += 1
            try:
                wire.write_all(self._send_fd, wire.encode(wire.request(msg_id, op, **fields)))
            except (BrokenPipeError, OSError):
                raise self._with_output(self._died(doing)) from None
            try:
                reply = self._wait_reply(msg_id, doing, seconds, limit)
            except PatientError as failure:
                raise self._with_output(failure) from None
        wait = 2.0 if self.process.poll() is None else 0.5
        reply["stdout"], out_dropped = self._stdout.take(msg_id, wait)
        reply["stderr"], err_dropped = self._stderr.take(msg_id, wait)
        if out_dropped or err_dropped:
            reply["output_dropped"] = {"stdout": out_dropped, "stderr": err_dropped}
        if not reply.get("ok"):
            raise PatientRequestError(op, reply.get("error") or {}, bool(reply.get("user")))
        return reply

    def _with_output(self, failure: PatientError) -> PatientError:
        """Attach what the target printed before the patient died or was stopped."""
        failure.stdout, out_dropped = self._stdout.take(None, 0)
        failure.stderr, err_dropped = self._stderr.take(None, 0)
        if out_dropped or err_dropped:
            failure.output_dropped = {"stdout": out_dropped, "stderr": err_dropped}
        return failure

    def _wait_reply(self, msg_id: int, doing: str, seconds: float | None,
                    limit: str) -> dict[str, Any]:
        deadline = time.monotonic() + seconds if seconds is not None else float("inf")
        while True:
            line = self._reader.pop_line()
            if line is not None:
                try:
                    reply = wire.decode(line)
                except wire.ProtocolError:
                    continue
                if reply.get("id") == msg_id or reply.get("id") is None:
                    return reply
                continue
            left = deadline - time.monotonic()
            if left <= 0:
                raise self._timed_out(doing, seconds, limit)
            ready, _, _ = select.select([self._reader.fd], [], [], min(left, 0.25))
            if ready:
                if not self._reader.fill():
                    raise self._died(doing)
            elif self.process.poll() is not None:
                ready, _, _ = select.select([self._reader.fd], [], [], 0)
                if not ready or not self._reader.fill():
                    raise self._died(doing)

    def _died(self, doing: str) -> PatientDied:
        try:
            self.process.wait(5)
        except subprocess.TimeoutExpired:
            pass
        self._kill_group()
        self._stdout.wait_eof(2.0)
        self._stderr.wait_eof(2.0)
        self._closed = True
        return PatientDied(doing, self.process.returncode, self._stderr.tail())

    def _timed_out(self, doing: str, seconds: float, limit: str) -> PatientTimeout:
        self._kill_group()
        self._stdout.wait_eof(2.0)
        self._stderr.wait_eof(2.0)
        self._closed = True
        return PatientTimeout(doing, seconds, self._stderr.tail(), limit)


def probe_timeout(name: str, params: Mapping[str, Any]) -> float:
    """A probe's own time bound (a ``seconds`` or ``timeout`` parameter) plus slack."""
    spec = PROBES.get(name)
    bound = 0.0
    for key in ("seconds", "timeout"):
        value = params.get(key)
        if value is None and spec is not None and spec.param(key) is not None:
            value = spec.param(key).default
        if isinstance(value, (int, float)):
            bound = max(bound, float(value))
    return max(DEFAULT_TIMEOUTS["probe"], bound * 2 + 30.0)


def _doing(op: str, fields: Mapping[str, Any]) -> str:
    if op == "probe":
        return f"running the {fields.get('name')} probe"
    if op == "run_script":
        return f"running {os.path.basename(str(fields.get('path')))}"
    if op == "load_harness":
        return f"loading the harness {fields.get('spec')}"
    if op == "hello":
        return "starting up"
    return op
