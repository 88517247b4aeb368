"""What each phase shows, as Rich renderables built from the session state alone.

Kept free of widgets so the screens stay thin and the text walk of the demo
could print the same things.
"""

from __future__ import annotations

import textwrap
from typing import Any

from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from torchdoctor.location import describe_location, site_lines
from torchdoctor.session import Hypothesis, SessionState

STATE_STYLE = {
    "proposed": "dim", "testing": "bold yellow", "confirmed": "bold green",
    "rejected": "red", "inconclusive": "yellow", "untested": "dim", "error": "bold red",
}


def done_phases(state: SessionState) -> set[str]:
    """The phases to tick, each only on its own evidence, never for being passed by.

    Reproduce: a rerun failed the same way. Test: a hypothesis was confirmed.
    Fix: a verification passed. Gather and Hypothesize hold facts, not proofs,
    so passing them is what counts.
    """
    done = set(state.completed)
    if not any(run.get("same") for run in state.reproductions):
        done.discard("reproduce")
    if not any(h.state == "confirmed" for h in state.hypotheses.values()):
        done.discard("test")
    if not state.verified:
        done.discard("fix")
    return done


def different_error(state: SessionState) -> str | None:
    """The text of the other error the last rerun raised, to diagnose on its own; else None."""
    last = state.reproductions[-1] if state.reproductions else {}
    error = last.get("error") or {}
    if last.get("same") or not error.get("type"):
        return None
    return error.get("traceback") or f"{error['type']}: {error.get('message') or ''}"


def is_symptom(state: SessionState) -> bool:
    """A described symptom (no exception): its Test phase is the checkup."""
    return bool(state.error) and not state.error.get("type")


def verify_plan(target: Any) -> str:
    """Exactly what pressing r in Fix & verify will run, and what counts as passing."""
    if target is None:
        return "nothing yet: it needs a script or a harness to rerun"
    steps = []
    if target.script:
        steps.append(f"rerun {target.label} with seed 0 in a fresh process; it passes if "
                     "the script ends without an exception")
    elif target.harness:
        steps.append(f"run one training step of {target.harness.rsplit('/', 1)[-1]} in a "
                     "fresh process; it passes if the step raises nothing")
    if target.harness:
        steps.append("then overfit one batch (overfit_batch); it passes if that batch's "
                     "loss falls close to zero")
    return ", ".join(steps)


NEEDS_TARGET = "press r to name a script or a harness (file.py:make)"


def needs_next(state: SessionState, phase: str, has_target: bool,
               report: str | None = None, checkup: bool = False) -> str:
    """One line: what the current phase still needs from the person (or where the report went)."""
    if report:
        return f"Report written to {report}"
    if not has_target and phase in ("reproduce", "test", "fix"):
        what = {"reproduce": "Rerunning", "test": "Testing a hypothesis",
                "fix": "Verifying a fix"}[phase]
        skip = "; or n to read on" if phase != "fix" else ""
        return f"{what} needs your code: {NEEDS_TARGET}{skip}."
    if phase == "reproduce":
        if "reproduce" in done_phases(state):
            return "Reproduced. Next: n to gather the facts."
        if different_error(state):
            return ("A different error came back: d diagnoses it as its own session; r reruns;"
                    " n reads on.")
        return "Press r to rerun the target with seed 0 in a fresh patient."
    if phase == "gather":
        if not has_target:
            return ("Press r for the environment; the census of your model needs a target "
                    "(i). Then n.")
        if not any(p.get("probe") == "env" for p in state.probes):
            return "Press r to take the census and the environment; then n."
        return "Read the facts, then n to weigh the hypotheses."
    if phase == "hypothesize":
        if not state.hypotheses:
            return "No hypotheses yet: add your own with a."
        return "Order them ([ ]), add yours (a), reject one (x); then n to test."
    if phase == "test":
        if any(h.state == "confirmed" for h in state.hypotheses.values()):
            return "A cause is confirmed. Next: n to fix and verify."
        if checkup:
            return "Press r to run the whole training checkup on the harness (esc cancels)."
        return "Pick a hypothesis and press r to run its probe (esc cancels)."
    if state.verified:
        return "Verified. Export the report with e."
    return "Change your code as the fix says, then press r to verify (what it runs: below)."


def error_view(error: dict | None, input_text: str | None) -> RenderableType:
    """The parsed error: type, message, the last user frame with its code, the phase."""
    from rich.syntax import Syntax  # pygments is slow to import; keep it off the first paint

    if not error or not (error.get("type") or error.get("message")):
        return Text("No error recorded yet.", style="dim")
    table = Table.grid(padding=(0, 1))
    table.add_column(style="bold", no_wrap=True)
    table.add_column()
    symptom = not error.get("type")
    if symptom:
        table.add_row("symptom", str(error.get("message") or ""))
    else:
        table.add_row("type", str(error["type"]))
        table.add_row("message", str(error.get("message") or ""))
    if error.get("phase"):
        table.add_row("phase", str(error["phase"]))
    frame = error.get("user_frame")
    parts: list[RenderableType] = [table]
    if frame:
        function = f" in {frame['function']}" if frame.get("function") else ""
        table.add_row("where", f"{frame.get('file')}:{frame.get('line')}{function}")
        if frame.get("code"):
            parts.append(Syntax(str(frame["code"]), "python", line_numbers=True,
                                start_line=int(frame.get("line") or 1), word_wrap=True))
    return Panel(Group(*parts), title="the symptom" if symptom else "the error",
                 title_align="left")


def reproduce_view(state: SessionState, target_label: str | None) -> RenderableType:
    parts: list[RenderableType] = [
        Text.assemble(("target: ", "bold"), target_label or "none (paste-only session)")]
    if not state.reproductions:
        parts.append(Text("Not rerun yet.", style="dim"))
    for number, run in enumerate(state.reproductions, 1):
        if not run.get("same"):
            mark = ("✗ not the same", "red")
        elif run.get("error"):
            mark = ("✓ same error", "green")
        else:  # a silent symptom: the target ran, which is all a rerun can show
            mark = ("✓ runs", "green")
        parts.append(Text.assemble((f"run {number} ", "bold"), (f"seed {run.get('seed')}  ",),
                                   mark, f"  {run.get('detail') or ''}"))
    parts.append(error_view(state.error, state.input_text))
    if state.repro is not None:
        parts.append(shrunk_view(state.repro))
    return Group(*parts)


def shrunk_view(repro: dict) -> RenderableType:
    """The failure shrunk to a standalone script: what level, and the proof it fails."""
    from rich.syntax import Syntax

    if not repro.get("verified"):
        return Text(f"Could not shrink it to a verified repro: {repro.get('reason') or '?'}",
                    style="yellow")
    # The details go inside: a long panel title is cut off at 80 columns.
    about = Text(f"{repro.get('level')} level ({repro.get('what') or 'standalone'}): "
                 f"{repro.get('lines')} lines, fails the same way in {repro.get('seconds')} s\n"
                 f"{repro.get('path')}", style="dim")
    try:
        with open(repro["path"], encoding="utf-8") as source:
            code: RenderableType = Syntax(source.read(), "python", word_wrap=True)
    except (OSError, KeyError, TypeError):
        code = Text("(the file is gone)", style="dim")
    return Panel(Group(about, code), title="verified minimal repro", title_align="left",
                 border_style="green")


def gather_view(state: SessionState) -> RenderableType:
    parts: list[RenderableType] = [error_view(state.error, state.input_text)]
    facts = [fact for match in state.matches[:1] for fact in match.get("facts", [])]
    if facts:
        parts.append(Panel(Group(*(Text(f"• {fact}") for fact in facts)),
                           title="the numbers, explained", title_align="left"))
    for probe in reversed(state.probes):
        if probe.get("probe") == "census":
            parts.append(Panel(census_table(probe.get("facts") or {}),
                               title="census", title_align="left"))
            break
    for probe in reversed(state.probes):
        if probe.get("probe") == "env":
            parts.append(Panel(Text(probe.get("summary", "")), title="environment",
                               title_align="left"))
            break
    return Group(*parts)


def census_table(facts: dict) -> RenderableType:
    table = Table.grid(padding=(0, 1))
    table.add_column(style="bold", no_wrap=True)
    table.add_column()
    for name in ("inputs", "targets"):
        value = facts.get(name)
        if isinstance(value, dict):
            table.add_row(name, f"{value.get('shape')} {value.get('dtype')} on "
                                f"{value.get('device')}")
    params = facts.get("parameters")
    if isinstance(params, dict):
        table.add_row("parameters", str(params.get("text", "")))
    if "training" in facts:
        table.add_row("mode", "train" if facts["training"] else "eval")
    if facts.get("classes_out") is not None:
        table.add_row("classes out", str(facts["classes_out"]))
    if facts.get("target_min") is not None:
        table.add_row("label range", f"{facts['target_min']} … {facts['target_max']}")
    return table


def hypothesis_detail(hyp: Hypothesis | None) -> RenderableType:
    if hyp is None:
        return Text("No hypothesis selected.", style="dim")
    lines = [Text(hyp.statement)]
    if hyp.predicts:
        lines.append(Text.assemble(("predicts: ", "bold"), hyp.predicts))
    lines.append(Text.assemble(("tested by: ", "bold"),
                               hyp.probe or "no probe: judge it yourself (y / x)"))
    lines.append(Text.assemble(("state: ", "bold"), (hyp.state, STATE_STYLE.get(hyp.state, ""))))
    if hyp.reason:
        lines.append(Text.assemble(("why: ", "bold"), hyp.reason))
    return Panel(Group(*lines), title=hyp.key, title_align="left")


def result_view(hyp: Hypothesis | None) -> RenderableType:
    """The last probe run on a hypothesis: evidence, where it points, the verdict."""
    if hyp is None or not hyp.evidence:
        return Text("No result yet for this hypothesis.", style="dim")
    finding = hyp.evidence[-1]
    verdict = finding.get("verdict") or "untested"
    lines = [Text.assemble(("verdict: ", "bold"), (verdict, STATE_STYLE.get(verdict, ""))),
             Text.assemble(("evidence: ", "bold"), f"{finding.get('probe')} "
                           f"[{finding.get('status')}] {finding.get('summary', '')}")]
    if finding.get("reason"):
        lines.append(Text.assemble(("why: ", "bold"), finding["reason"]))
    for line in site_lines(finding):  # the fix site first
        label, _, text = line.partition(": ")
        lines.append(Text.assemble((f"{label}: ", "bold"), text))
    where = describe_location(finding.get("location"))
    if where:
        lines.append(Text.assemble(("where: ", "bold"), where))
    facts = finding.get("facts") or {}
    shown = [(k, v) for k, v in facts.items() if not isinstance(v, (dict, list)) or len(str(v)) < 80]
    if shown:
        table = Table.grid(padding=(0, 1))
        table.add_column(style="dim", no_wrap=True)
        table.add_column()
        for name, value in shown[:12]:
            table.add_row(name, str(value))
        lines.append(table)
    return Panel(Group(*lines), title="result", title_align="left")


def patch_view(step: Any) -> RenderableType | None:
    """The diff of the user's own file for the confirmed cause, and what v and w do with it."""
    from rich.syntax import Syntax

    patch = step.first
    if patch is None:
        reasons = [p.reason for p in step.proposals or () if p.reason]
        return Text("no patch: " + (reasons[0] if reasons else "nothing to rewrite"),
                    style="dim") if reasons else None
    verified = step.verified
    outcome: list[RenderableType] = []
    if step.written is not None:
        title = "written to your file (the original kept as .orig)"
    elif verified is not None:
        title = "verified on a copy"
    elif step.attempts:
        title = "the patch, not verified"
        # What v found stays in view after its notice fades: it decides the next step.
        last = next((a for a in reversed(step.attempts) if a.verification), None)
        if last is not None:
            outcome.append(Text(f"✗ v ran {step.ran()}: {last.verification.detail}",
                                style="red"))
    else:
        title = "the patch, not yet verified"
    body = Group(*outcome, Text(patch.what, style="bold"),
                 Syntax(patch.diff.rstrip(), "diff", word_wrap=True))
    return Panel(body, title=title, title_align="left")


def patch_next(step: Any) -> str:
    """The next-step line while phase five has a patch of the user's code."""
    if step.written is not None:
        return "The patch is in your file. Run your training; e exports the report."
    if step.verified is not None:
        return "Verified on a copy. w writes it to your file (a backup is kept); e exports."
    return step.describe() + ". Your files stay as they are."


def fix_view(state: SessionState, hyp: Hypothesis | None, demo_fix: tuple[str, str] | None,
             demo_applied: bool, verify_detail: str = "", plan: str = "",
             patch: RenderableType | None = None) -> RenderableType:
    parts: list[RenderableType] = []
    if hyp is None:
        parts.append(Text("No hypothesis confirmed yet: the fix follows from the cause. Test "
                          "one (4, then r), or confirm one you know holds (y).", style="dim"))
        # Only an untested hypothesis leads: a test that did not confirm one weighs against it.
        leading = next((h for h in state.hypotheses.values()
                        if h.state in ("proposed", "untested") and (h.fix or {}).get("summary")),
                       None)
        if leading is not None:  # a paste-only session still learns what the fix would be
            fix = leading.fix or {}
            parts.append(Text.assemble(("if the leading hypothesis holds: ", "bold"),
                                       leading.statement))
            parts.append(Text.assemble(("its fix: ", "bold"), fix["summary"]))
            parts.extend(_before_after(fix.get("before"), fix.get("after"), "the pattern"))
    else:
        parts.append(Text.assemble(("cause: ", "bold"), hyp.statement))
        fix: dict[str, Any] = hyp.fix or {}
        if fix.get("summary"):
            parts.append(Text.assemble(("fix: ", "bold"), fix["summary"]))
        if patch is not None:
            parts.append(patch)  # their own lines, not the knowledge base's pattern
        else:
            parts.extend(_before_after(fix.get("before"), fix.get("after"), "the pattern"))
    if demo_fix is not None:
        before, after = demo_fix
        status = "applied to the copy" if demo_applied else "press f to apply it to the copy"
        parts.extend(_before_after(before, after, f"the demo's fix ({status})"))
    if plan:
        ran = state.verified is not None
        parts.insert(0, Text.assemble(("it ran: " if ran else "r will ", "bold"), plan))
    if state.verified is not None:  # the outcome first: it is what the person waits for
        passed = state.verified
        parts.insert(0, Text(("✓ verified: " if passed else "✗ not yet: ") + verify_detail,
                             style="green" if passed else "red"))
    return Group(*parts)


def _before_after(before: str | None, after: str | None, title: str) -> list[RenderableType]:
    if not before and not after:
        return []
    return [Panel(BeforeAfter((before or "").rstrip(), (after or "").rstrip()), title=title,
                  title_align="left")]


class BeforeAfter:
    """Before and after side by side when both lines fit, one above the other when not.

    Decided at render time from the width Rich offers, because at 80 columns
    two columns of code wrap every line into unreadable pieces.
    """

    def __init__(self, before: str, after: str) -> None:
        # Lines cut from inside a class keep their indent; it only pushes the code right.
        self.before = textwrap.dedent(before)
        self.after = textwrap.dedent(after)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        from rich.syntax import Syntax

        longest = max(len(line) for line in (self.before + "\n" + self.after).splitlines())
        if options.max_width >= 2 * longest + 8:
            table = Table(show_header=True, expand=True, box=None, padding=(0, 1))
            table.add_column("before", ratio=1)
            table.add_column("after", ratio=1)
            table.add_row(Syntax(self.before, "python", word_wrap=True),
                          Syntax(self.after, "python", word_wrap=True))
            yield table
            return
        yield Text("before", style="bold")
        yield Syntax(self.before, "python", word_wrap=True)
        yield Text("after", style="bold")
        yield Syntax(self.after, "python", word_wrap=True)


def event_line(event: dict) -> RenderableType:
    """One journal event as one entry of the hypothesis log, wrapped under its own column."""
    kind = event.get("type", "")
    row = Table.grid(padding=(0, 1))
    row.add_column(style="dim", no_wrap=True, width=8)
    row.add_column(style="bold", no_wrap=True, width=10)
    row.add_column(ratio=1, overflow="fold")  # long paths wrap instead of ending in …
    row.add_row(str(event.get("t", ""))[11:19], kind, event_detail(event))
    return row


def event_detail(event: dict) -> Text:
    """What happened, in words; unknown kinds fall back to their fields."""
    kind = event.get("type", "")
    text = Text()
    if kind == "hypothesis":
        state = event.get("state", "")
        text.append(f"{event.get('key')} ", style="cyan")
        text.append(state, style=STATE_STYLE.get(state, ""))
        detail = event.get("statement") or event.get("reason") or ""
        if detail:
            text.append(f" — {detail}")
    elif kind == "probe":
        text.append(f"{event.get('probe')} [{event.get('status')}] ")
        if event.get("verdict"):
            text.append(f"{event['verdict']} ", style=STATE_STYLE.get(event["verdict"], ""))
        text.append(str(event.get("summary", "")))
    elif kind == "parse":
        error = event.get("error") or {}
        text.append(f"{error.get('type') or 'symptom'}: {error.get('message')}")
    elif kind == "matches":
        text.append(", ".join(m.get("entry", "") for m in event.get("matches", [])) or "none")
    elif kind == "reproduce":
        text.append(("same error" if event.get("same") else "not the same") +
                    f" (seed {event.get('seed')}) {event.get('detail') or ''}")
    elif kind == "verify":
        text.append(("passed: " if event.get("passed") else "failed: ") +
                    str(event.get("detail", "")))
    elif kind == "repro":
        if event.get("verified"):
            text.append(f"verified at the {event.get('level')} level "
                        f"({event.get('what') or 'standalone'}), {event.get('lines')} lines: "
                        f"{event.get('path')}")
        else:
            text.append(f"not verified: {event.get('reason') or '?'}")
    elif kind in ("note", "phase"):
        text.append(str(event.get("text") or event.get("phase") or ""))
    elif kind == "fix":
        text.append(str(event.get("summary") or ""))
    elif kind == "input":
        body = str(event.get("text") or "").strip()
        last = body.splitlines()[-1] if body else ""  # a traceback ends with its error
        lines = body.count("\n") + 1
        text.append(f"{event.get('source')}: {_short(last)}"
                    + (f" ({lines} lines)" if lines > 1 else ""))
    elif kind == "session":
        text.append(f"{event.get('kind')} session" +
                    (f", target {event['target']}" if event.get("target") else ""))
    else:
        rest = {k: v for k, v in event.items() if k not in ("v", "seq", "t", "type")}
        text.append(" ".join(f"{k}={_short(v)}" for k, v in rest.items()))
    return text


def _short(value: Any, limit: int = 60) -> str:
    text = str(value).replace("\n", " ")
    return text if len(text) <= limit else text[: limit - 1] + "…"
