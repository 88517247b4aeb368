"""The Textual front end. Importing this package is cheap: the app loads on first use."""

from __future__ import annotations

from typing import Any


def open_app(**options: Any) -> int:
    """Open the app (see ``build_app`` for the options); returns its exit status."""
    app = build_app(**options)
    result = app.run()
    app.session.close()  # a new error pasted in the app may have started a new session
    return int(result or 0)


def build_app(*, session: Any = None, target: str | None = None, script: str | None = None,
              argv: list[str] | None = None, diagnosis: dict | None = None,
              client_factory: Any = None, demo: Any = None, kb_dirs: tuple[str, ...] = (),
              autostart: bool | None = None, harness: str | None = None,
              kind: str = "app", notice: str | None = None) -> Any:
    """The app, ready to run (tests drive it with Pilot).

    ``target`` is a harness (``file.py:make``) or a script; ``script`` and
    ``argv`` name a script to rerun; ``diagnosis`` is a ``Diagnosis.to_dict()``
    to start from; ``client_factory(env)`` starts patients (real ones by default);
    ``kind`` names the command that started a new session (``run``, ``demo``, ``app``);
    ``notice`` is a line the person should read first (shown as a notification).
    With nothing to start from, the app opens on the intake screen.
    """
    from torchdoctor.investigation.walk import Target, default_client_factory
    from torchdoctor.session import Session
    from torchdoctor.tui.app import TorchDoctorApp

    chosen = _target(target, script, argv, Target)
    if harness:
        chosen = Target(script=chosen.script if chosen else None,
                        argv=chosen.argv if chosen else [], harness=harness)
    if session is None:
        session = Session.start(kind=kind, argv=chosen.argv if chosen else None,
                                target=(chosen.script or chosen.harness) if chosen else None)
    if diagnosis is not None:
        session.record_diagnosis(diagnosis)
        if session.state.phase == "reproduce" and not chosen:
            session.goto("gather")
    factory = client_factory or default_client_factory(chosen.directory if chosen else None)
    # Rerun on opening only a fresh session: a resumed one already holds its runs.
    fresh = not session.state.reproductions and not session.state.probes
    start = autostart if autostart is not None else (
        chosen is not None and diagnosis is None and fresh)
    intake = chosen is None and not session.state.matches
    return TorchDoctorApp(session, factory, chosen, demo=demo, kb_dirs=kb_dirs, autostart=start,
                          intake_first=intake, notice=notice)


def _target(target: str | None, script: str | None, argv: list[str] | None, cls: Any) -> Any:
    if script:
        return cls(script=script, argv=list(argv or []))
    if target:
        return cls.parse(target)
    return None
