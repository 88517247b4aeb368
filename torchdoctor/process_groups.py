"""Child processes that end with the doctor: each in its own group, ended as a group.

A patient or a repro runs the user's code, and that code may start processes
of its own (a DataLoader's workers, a launcher, a log shipper). Ending only
the direct child leaves those running, reparented to init. So every child
torchdoctor starts leads a new session (and so a process group of its own),
is remembered while it may have a group, and is ended with its whole group:
when it is done with, when it runs out of time, and when the doctor itself
is stopped (Ctrl-C, SIGTERM, SIGHUP, or the interpreter exiting).

The patient also watches for the doctor's death from its side (see
``torchdoctor.patient.__main__``), which covers SIGKILL of the doctor.
"""

from __future__ import annotations

import atexit
import os
import signal
import subprocess
import tempfile
import threading
from collections.abc import Sequence
from typing import Any

OUTPUT_TAIL_BYTES = 1 << 20
_live: dict[int, subprocess.Popen] = {}
_live_lock = threading.Lock()
STOP_SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP")
                     if hasattr(signal, name))


class Stopped(KeyboardInterrupt):
    """The doctor was asked to stop by a signal; unwinds like Ctrl-C."""

    def __init__(self, signum: int) -> None:
        self.signum = signum
        super().__init__(signal.Signals(signum).name)


def spawn(argv: Sequence[str], **popen_kwargs: Any) -> subprocess.Popen:
    """``Popen`` as the leader of a new process group, ended by :func:`end_all` if not before."""
    popen_kwargs["start_new_session"] = True
    process = subprocess.Popen(list(argv), **popen_kwargs)
    with _live_lock:
        _live[process.pid] = process
    return process


def end_group(process: subprocess.Popen, wait: float = 5.0) -> None:
    """Kill the child's whole group (itself and whatever it started) and reap the child.

    The group outlives its leader while any member lives, so this is right
    even after the child itself has exited.
    """
    _kill_group(process.pid)
    try:
        process.wait(wait)
    except subprocess.TimeoutExpired:
        pass
    with _live_lock:
        _live.pop(process.pid, None)


def run_bounded(argv: Sequence[str], timeout: float | None,
                **popen_kwargs: Any) -> subprocess.CompletedProcess:
    """Like ``subprocess.run(capture_output=True, text=True)``, in a group ended afterwards.

    The output goes to files, not pipes: a helper the child started may hold
    pipes open long after the child is done, and the child's exit is what
    counts. Raises ``subprocess.TimeoutExpired`` (after ending the group)
    when the child runs past ``timeout``; a helper it left is ended either way.
    """
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        process = spawn(argv, stdout=out, stderr=err, **popen_kwargs)
        try:
            process.wait(timeout)
        finally:
            end_group(process)
        texts = []
        for stream in (out, err):  # the tail is where a traceback is
            stream.seek(max(0, stream.seek(0, os.SEEK_END) - OUTPUT_TAIL_BYTES))
            texts.append(stream.read().decode("utf-8", "replace"))
    return subprocess.CompletedProcess(process.args, process.returncode, *texts)


def end_all() -> None:
    """Kill every group torchdoctor started that may still have members."""
    with _live_lock:
        pids = list(_live)
    for pid in pids:
        _kill_group(pid)


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def stop_like_ctrl_c() -> None:
    """Treat SIGTERM and SIGHUP as Ctrl-C: end the children's groups, then unwind cleanly.

    Only the main thread may install handlers; elsewhere this does nothing.
    """
    if threading.current_thread() is not threading.main_thread():
        return
    for signum in STOP_SIGNALS:
        signal.signal(signum, _on_stop)


def _on_stop(signum: int, frame: Any) -> None:
    end_all()
    raise Stopped(signum)


atexit.register(end_all)
