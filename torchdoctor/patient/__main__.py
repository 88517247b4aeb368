"""Entry point: ``python -m torchdoctor.patient --fd-in N --fd-out M``.

The doctor starts it as the leader of its own process group, and ends the
group; the patient ends the group itself when the doctor dies (``lifeline``).

The channel fds are made non-inheritable and closed in forked children, so
a subprocess or ``os.fork()`` in the user's script cannot hold the channel
open after the patient dies (the doctor detects death by end of file).
"""

from __future__ import annotations

import argparse
import os
import random
import sys


def _seed(value: str) -> None:
    import torch

    seed = int(value)
    random.seed(seed)
    torch.manual_seed(seed)
    try:
        import numpy
    except ImportError:
        return
    numpy.random.seed(seed % 2**32)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m torchdoctor.patient")
    parser.add_argument("--fd-in", type=int, required=True)
    parser.add_argument("--fd-out", type=int, required=True)
    args = parser.parse_args(argv)
    for fd in (args.fd_in, args.fd_out):
        os.set_inheritable(fd, False)

    def close_channel_in_child() -> None:
        for fd in (args.fd_in, args.fd_out):
            try:
                os.close(fd)
            except OSError:
                pass

    os.register_at_fork(after_in_child=close_channel_in_child)
    sys.stdin = open(os.devnull)  # noqa: SIM115 — the user's input() must not block on us

    import torch  # noqa: F401 — pay the import once, before the first request

    from torchdoctor.patient import devices
    from torchdoctor.patient.worker import Worker

    devices.apply_from_environment()
    if os.environ.get("TORCHDOCTOR_SEED"):
        _seed(os.environ["TORCHDOCTOR_SEED"])
    Worker(args.fd_in, args.fd_out).serve()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)  # the user's threads (loaders, timers) must not keep a finished patient alive


if __name__ == "__main__":
    raise SystemExit(main())
