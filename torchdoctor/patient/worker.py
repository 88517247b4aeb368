"""The patient's request loop: one request in, one reply out, in order.

Every failure inside a request becomes an error reply; only ``shutdown``
or the doctor closing the channel ends the loop (the channel's end, or the
doctor's death, ends the patient even in the middle of a request: see
``lifeline``). Before each reply, a mark
is written to stdout and stderr so the doctor knows which of the user's
output belongs to which request.
"""

from __future__ import annotations

import importlib
import os
import platform
import sys
import time
import traceback
from typing import Any

import torch

from torchdoctor import wire
from torchdoctor.patient import devices, targets
from torchdoctor.patient.context import ProbeContext
from torchdoctor.patient.lifeline import Lifeline
from torchdoctor.patient.recorder.fix_site import with_fix_site
from torchdoctor.probes_manifest import PROBES

# Written to stdout and stderr after each request; the client strips it.
STREAM_MARK = b"\x00\x1etorchdoctor-mark:%d\x1e\x00"


class Worker:
    def __init__(self, fd_in: int, fd_out: int) -> None:
        self.reader = Lifeline(fd_in)
        self.fd_out = fd_out
        self.context: ProbeContext | None = None
        self.target: dict[str, Any] | None = None
        self.pid = os.getpid()

    def serve(self) -> None:
        while True:
            line = self.reader.read_line()
            if line is None:
                return
            try:
                message = wire.decode(line)
            except wire.ProtocolError as exc:
                self.send(wire.error_reply(None, "ProtocolError", str(exc)))
                continue
            reply = self.handle(message)
            self.send(reply)
            if message.get("op") == "shutdown":
                return

    def send(self, reply: dict[str, Any]) -> None:
        if os.getpid() != self.pid:
            # A child the user's script forked came back out of the script; the
            # channel belongs to its parent, so it ends here as it would have
            # at the end of ``python script.py``.
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(0)
        mark = STREAM_MARK % (reply.get("id") or 0)
        for stream, fd in ((sys.stdout, 1), (sys.stderr, 2)):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
            try:
                wire.write_all(fd, mark)
            except OSError:
                pass
        wire.write_all(self.fd_out, wire.encode(reply))

    def handle(self, message: dict[str, Any]) -> dict[str, Any]:
        msg_id, op = message.get("id"), message.get("op")
        handler = getattr(self, f"op_{op}", None) if op in wire.OPS else None
        if handler is None:
            return wire.error_reply(msg_id, "UnknownOp", f"unknown op {op!r}; known: "
                                    f"{', '.join(wire.OPS)}")
        try:
            return wire.ok_reply(msg_id, **handler(message))
        except targets.UserCodeError as exc:
            return wire.error_reply(msg_id, exc.type_name, exc.message, exc.traceback_text,
                                    user=True)
        except targets.TargetError as exc:
            return wire.error_reply(msg_id, "TargetError", str(exc))
        except RequestError as exc:
            return wire.error_reply(msg_id, exc.kind, str(exc))
        except BaseException as exc:  # noqa: BLE001 — a bug in a handler must not end the patient
            return wire.error_reply(msg_id, type(exc).__name__, str(exc),
                                    traceback.format_exc())

    # ------------------------------------------------------------ ops

    def op_hello(self, message: dict[str, Any]) -> dict[str, Any]:
        return {
            "torch": torch.__version__,
            "cuda": torch.version.cuda,
            "cuda_available": torch.cuda.is_available(),
            "python": platform.python_version(),
            "pid": os.getpid(),
            "device": devices.requested_device(),
            "target": self.target,
        }

    def op_load_harness(self, message: dict[str, Any]) -> dict[str, Any]:
        spec = _required(message, "spec", str)
        self.context = None
        self.context = targets.load_harness(spec)
        self.target = {"kind": "harness", "spec": spec}
        return {"target": self.target, "found": targets.describe_context(self.context)}

    def op_run_script(self, message: dict[str, Any]) -> dict[str, Any]:
        path = _required(message, "path", str)
        argv = [str(a) for a in message.get("argv") or []]
        self.context = None
        started = time.perf_counter()
        outcome = targets.run_script(path, argv, message.get("cwd"))
        self.context = outcome.context
        if self.context is not None:
            # What a replay under the recorder reruns, and whether it is worth rerunning whole.
            self.context.extras["script"] = {"path": path, "argv": argv, "cwd": message.get("cwd"),
                                             "seconds": time.perf_counter() - started}
        self.target = {"kind": "script", "path": path, "argv": argv}
        return outcome.report

    def op_probe(self, message: dict[str, Any]) -> dict[str, Any]:
        name = _required(message, "name", str)
        params = message.get("params") or {}
        if not isinstance(params, dict):
            raise RequestError("BadRequest", "'params' must be an object")
        registry = _load_probes()
        if name not in registry:
            raise RequestError("UnknownProbe", f"no probe named {name!r}; known: "
                               f"{', '.join(sorted(registry))}")
        spec = PROBES.get(name)
        needs = spec.needs if spec else "nothing"
        if needs in ("target", "harness") and (self.context is None
                                               or self.context.model is None):
            raise RequestError("NoTarget", f"probe {name!r} needs a model, and no target with"
                               " a model is loaded")
        if needs == "failure" and self.context is None:
            raise RequestError("NoTarget", f"probe {name!r} works from a loaded script or"
                               " harness, and none is loaded")
        if needs == "harness" and self.context.source != "harness":
            raise RequestError("NoTarget", f"probe {name!r} needs a harness target")
        started = time.perf_counter()
        try:
            result = with_fix_site(self.context, dict(registry[name](self.context, **params)))
        except Exception as exc:  # noqa: BLE001 — a failing probe is a finding
            result = {
                "status": "error", "summary": f"the {name} probe raised "
                f"{type(exc).__name__}: {exc}", "facts": {}, "location": None,
                "error": {"type": type(exc).__name__, "message": str(exc),
                          "traceback": traceback.format_exc()},
            }
        result["probe"] = name
        result["seconds"] = round(time.perf_counter() - started, 4)
        return {"result": result}

    def op_shutdown(self, message: dict[str, Any]) -> dict[str, Any]:
        return {"goodbye": True}


class RequestError(Exception):
    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


def _required(message: dict[str, Any], key: str, kind: type) -> Any:
    value = message.get(key)
    if not isinstance(value, kind):
        raise RequestError("BadRequest", f"{message.get('op')!r} needs {key!r} as a"
                           f" {kind.__name__}")
    return value


def _load_probes() -> dict[str, Any]:
    """The registry, imported on first use so that start-up pays only for torch.

    ``TORCHDOCTOR_EXTRA_PROBES`` names more modules (comma-separated) that
    register probes: a user's own, or a test's.
    """
    from torchdoctor.patient import probes

    registry = probes.load_all()
    for module in filter(None, os.environ.get("TORCHDOCTOR_EXTRA_PROBES", "").split(",")):
        importlib.import_module(module.strip())
    return registry
