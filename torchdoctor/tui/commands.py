"""The command palette: every phase and view by name, for those who prefer typing."""

from __future__ import annotations

from functools import partial

from textual.command import Hit, Hits, Provider

from torchdoctor.session import PHASE_PURPOSE, PHASE_TITLES, PHASES

_ACTIONS = (
    ("Rerun / run the step of this phase", "run_step"),
    ("Next phase", "next_phase"),
    ("Previous phase", "previous_phase"),
    ("Add a hypothesis of your own", "add_hypothesis"),
    ("Confirm the selected hypothesis", "confirm"),
    ("Reject the selected hypothesis, with a reason", "reject"),
    ("Cancel the running step", "cancel"),
    ("Bisect the model to the first bad module", "bisect"),
    ("Diagnose the different error the rerun raised, as its own session",
     "diagnose_new_error"),
    ("Check: run the whole training checkup on the harness", "checkup"),
    ("Open the hypothesis log", "log"),
    ("Export the report", "export"),
    ("Intake: paste a traceback, pick a log or a symptom, set the target", "intake"),
    ("Copy the traceback", "copy_traceback"),
    ("Copy the selected result", "copy_result"),
    ("Toggle light / dark theme", "toggle_theme"),
)


class DoctorCommands(Provider):
    """Phases and actions of the torchdoctor app."""

    def _commands(self) -> list[tuple[str, str, str]]:
        items = [(f"Go to {PHASE_TITLES[p]}", f"goto('{p}')", PHASE_PURPOSE[p]) for p in PHASES]
        items += [(name, action, "") for name, action in _ACTIONS]
        return items

    async def discover(self) -> Hits:
        for name, action, help_text in self._commands():
            yield Hit(1.0, name, partial(self.app.run_action, action), help=help_text or None)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for name, action, help_text in self._commands():
            score = matcher.match(name)
            if score > 0:
                yield Hit(score, matcher.highlight(name), partial(self.app.run_action, action),
                          help=help_text or None)
