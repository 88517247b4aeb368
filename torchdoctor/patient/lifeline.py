"""The patient ends with its doctor, whatever it is doing when the doctor goes.

A doctor stopped cleanly ends the patient's process group itself. One killed
outright (SIGKILL, a crash, the OOM killer) cannot, and a patient busy in the
user's training loop would never notice by reading its next request. So the
request channel is read by a thread that watches it the whole time: end of
file on it (the doctor's end closes when the doctor dies), or the patient
being reparented, ends the patient's whole group, the user's own
subprocesses included. On Linux the kernel is also asked to signal the
patient when its parent dies (``PR_SET_PDEATHSIG``), which reaches a patient
whose watching thread cannot run.
"""

from __future__ import annotations

import ctypes
import os
import queue
import select
import signal
import sys
import threading
from typing import Any

from torchdoctor import wire

_PR_SET_PDEATHSIG = 1
_POLL_SECONDS = 1.0


class Lifeline:
    """Hands requests to the main thread; ends the patient when the doctor is gone."""

    def __init__(self, fd_in: int) -> None:
        self.parent = os.getppid()
        self._reader = wire.LineReader(fd_in)
        self._lines: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
        _ask_kernel_for_parent_death(self.parent)
        threading.Thread(target=self._watch, name="torchdoctor-lifeline", daemon=True).start()

    def read_line(self) -> bytes | None:
        """The next request line; None once the channel has ended."""
        return self._lines.get()

    def _watch(self) -> None:
        try:
            while True:
                ready, _, _ = select.select([self._reader.fd], [], [], _POLL_SECONDS)
                if ready:
                    if not self._reader.fill():
                        break
                    while (line := self._reader.pop_line()) is not None:
                        self._lines.put(line)
                elif os.getppid() != self.parent:
                    break
        except (OSError, ValueError, wire.ProtocolError):
            pass
        self._lines.put(None)
        end_own_group()


def end_own_group() -> None:
    """Kill the patient's group (itself and all the user's code started); never returns."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    if os.getpgrp() == os.getpid():
        os.killpg(0, signal.SIGKILL)
    os._exit(1)


def _ask_kernel_for_parent_death(parent: int) -> None:
    """On Linux, a signal when the parent dies, handled by ending the group.

    The kernel sends it when the *thread* that started the patient ends, and
    the app starts patients from worker threads; so the handler ends the
    patient only when the parent process is really gone (reparented).
    """
    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        signum = signal.SIGRTMIN + 3
        signal.signal(signum, _on_parent_death(parent))
        # Restart the system calls it lands in: it also comes when a thread of a
        # living doctor ends, and torch's own threads must not see EINTR for it.
        signal.siginterrupt(signum, False)
        libc.prctl(_PR_SET_PDEATHSIG, int(signum), 0, 0, 0)
    except (OSError, AttributeError, ValueError):
        return
    if os.getppid() != parent:  # the parent died before the request took effect
        end_own_group()


def _on_parent_death(parent: int) -> Any:
    def handler(signum: int, frame: Any) -> None:
        if os.getppid() != parent:
            end_own_group()

    return handler
