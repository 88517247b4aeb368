"""The command line: a thin dispatcher over ``torchdoctor.commands``.

Each subcommand lives in its own module with ``add_arguments(parser)`` and
``run(args) -> int``; those modules import their heavy dependencies inside
``run`` so that ``torchdoctor --help`` and ``diagnose`` start fast.

Exit status: 0 diagnosed / all checks passed, 1 nothing matched / a check
failed, 2 usage or input error.
"""

from __future__ import annotations

import argparse
import importlib
import sys

COMMANDS: dict[str, str] = {
    "diagnose": "read a traceback or a symptom and rank what is wrong",
    "run": "run a script under watch and diagnose its failure",
    "check": "run the training checkup on a harness target",
    "kb": "list or validate knowledge-base entries",
    "report": "render a session's report and verified repro",
    "sessions": "list recorded sessions",
    "fix": "write a patch for the confirmed cause, verify it on a copy, optionally apply it",
    "demo": "open the app on a bundled broken example",
}


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser; only ``command``'s module is imported to add its arguments.

    Importing every command module costs tens of milliseconds that the app's
    first paint and ``diagnose`` should not pay. ``None`` imports them all.
    """
    parser = argparse.ArgumentParser(
        prog="torchdoctor",
        description="A guided troubleshooting expert system for PyTorch.",
        epilog="With no command, opens the app. Exit status: 0 ok, 1 nothing matched or a "
        "check failed, 2 usage or input error.",
    )
    parser.add_argument("--version", action="version", version=_version())
    parser.add_argument("--resume", nargs="?", const="", metavar="ID",
                        help="continue a recorded session in the app (latest when no ID)")
    parser.add_argument("--kb", action="append", default=[], metavar="DIR",
                        help="an extra knowledge-base directory (repeatable)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, help_text in COMMANDS.items():
        command_parser = sub.add_parser(name, help=help_text, description=help_text)
        if command in (None, name):
            importlib.import_module(f"torchdoctor.commands.{name}").add_arguments(command_parser)
    return parser


def _version() -> str:
    from torchdoctor import __version__

    return f"torchdoctor {__version__}"


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    chosen = next((word for word in argv if word in COMMANDS), "")
    args = build_parser(chosen).parse_args(argv)
    name = args.command or "app"
    module = importlib.import_module(f"torchdoctor.commands.{name}")
    from torchdoctor.process_groups import Stopped, stop_like_ctrl_c

    stop_like_ctrl_c()
    try:
        return int(module.run(args) or 0)
    except Stopped as stop:
        print(f"torchdoctor: stopped by {stop}", file=sys.stderr)
        return 128 + stop.signum
    except KeyboardInterrupt:
        print("torchdoctor: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    raise SystemExit(main())
