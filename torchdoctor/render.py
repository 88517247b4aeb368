"""Rich text for a Diagnosis: the error as understood, then the ranked entries.

Shared by ``diagnose``, ``run`` and ``check``; it knows nothing of Textual.
Rich is imported inside the functions so that importing this module costs
nothing for commands that end up printing JSON.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any

from torchdoctor.probes_manifest import PROBES

if TYPE_CHECKING:
    from rich.console import Console

    from torchdoctor.match import Diagnosis, Match

MESSAGE_LIMIT = 400
# What the person writes in place of HARNESS, and where the convention is explained.
HARNESS = "HARNESS"
HARNESS_HELP = ("HARNESS is FILE.py:NAME, a function returning model, batch, loss_fn (and "
                "optionally optimizer, train_step, loader); see \"The harness convention\" "
                "in the README")

FIVE_PHASES = (
    ("Reproduce", ("Make it fail on demand with the smallest input: one batch, num_workers=0, "
                  "a fixed seed (torch.manual_seed(0)), on the CPU if you can.")),
    ("Gather information", ("Keep the whole traceback (every 'During handling' link), note torch "
                           "and CUDA versions (`python -m torch.utils.collect_env`) and print the "
                           "shapes, dtypes and devices of the inputs at the failing line.")),
    ("Hypothesize", ("Write down two or three concrete causes (wrong shape from the data, a layer "
                    "built for another input size, a tensor left on the CPU) before changing "
                    "anything.")),
    ("Test", ("Test one hypothesis at a time with a probe: `torchdoctor run train.py` runs the "
             "script under watch; `torchdoctor check FILE.py:build` runs the training checkup "
             "on a harness.")),
    ("Fix and verify", ("Change one thing, rerun the repro to see the error gone, then run a few "
                       "real steps to check the loss still falls.")),
)


def make_console(file: Any = None) -> Console:
    """A console that prints plain text (no colour codes) unless writing to a terminal."""
    from rich.console import Console

    stream = file or sys.stdout
    terminal = _isatty(stream)
    plain = not terminal or "NO_COLOR" in os.environ
    # Piped output is not wrapped: a log or a file keeps each line whole.
    return Console(file=stream, color_system=None if plain else "auto", highlight=False,
                   soft_wrap=not terminal, emoji=False)


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def _indented(console: Console, indent: int, markup: str) -> None:
    """One line of markup; on a terminal, wrapped lines keep the indent."""
    if console.soft_wrap:
        console.print(" " * indent + markup.replace("\n", "\n" + " " * indent))
        return
    from rich.padding import Padding

    console.print(Padding(markup, (0, 0, 0, indent), expand=False))


def shorten(text: str, limit: int = MESSAGE_LIMIT) -> str:
    """Long messages (a tensor repr, a state_dict key list) cut in the middle."""
    text = text.strip()
    if len(text) <= limit:
        return text
    keep = limit // 2 - 3
    return f"{text[:keep]} … {text[-keep:]}"


def probe_command(probe: str, script: str = "train.py") -> str:
    """How a person runs one probe from the shell, on the script the traceback names."""
    if probe in _checkup_probes():
        return check_command([probe])
    spec = PROBES.get(probe)
    needs = spec.needs if spec else "target"
    if needs == "nothing":
        return f"torchdoctor check {HARNESS} --only {probe}"
    return f"torchdoctor run {script} --only {probe}   (or: check {HARNESS} --only {probe})"


def check_command(probes: list[str]) -> str:
    """The one command that runs these checks on the person's harness."""
    return f"torchdoctor check {HARNESS} --only {','.join(probes)}"


def _checkup_probes() -> tuple[str, ...]:
    from torchdoctor.investigation.checkup import CHECK_ORDER

    return CHECK_ORDER


def suggested_checks(matches: list[Match]) -> list[dict]:
    """The checkup probes that test these matches' hypotheses, cheapest first.

    A described symptom has no traceback to investigate, so what torchdoctor
    can offer is the list of checks whose verdicts confirm or reject each
    hypothesis; ``torchdoctor check`` then runs them on the person's harness.
    """
    order = _checkup_probes()
    by_probe: dict[str, dict] = {}
    for match in matches:
        for hypothesis in match.hypotheses:
            probe = hypothesis.get("probe") or {}
            name = probe.get("name")
            if name not in order:
                continue
            check = by_probe.setdefault(name, {"probe": name, "params": {}, "hypotheses": [],
                                               "command": check_command([name])})
            check["params"].update(probe.get("params") or {})
            check["hypotheses"].append(f"{match.entry.id}/{hypothesis['id']}")
    return [by_probe[name] for name in order if name in by_probe]


def how_many_match(matches: list[dict]) -> str:
    """How many entries a pattern or phrase recognised, and how many only read like
    the description (kind ``reads_like``): a resemblance is not a match, wherever the
    count is told (the app's notice, a report's timeline)."""
    matched = sum(1 for match in matches if match.get("kind") != "reads_like")
    resembling = len(matches) - matched
    said = []
    if matched:
        said.append(f"{matched} knowledge-base {'entry matches' if matched == 1 else 'entries match'}")
    if resembling:
        said.append(f"{resembling} {'reads' if resembling == 1 else 'read'} like the description")
    return "; ".join(said) or "no knowledge-base entry matches"


def wording(match: Match) -> str:
    """How sure to sound: "probably" only above the calibrated CONFIDENT score."""
    if match.kind == "similar":
        return "similar, not recognised"
    return "probably" if match.confident else "a guess"


def render_diagnosis(diagnosis: Diagnosis, console: Console, top: int = 3) -> None:
    render_error(diagnosis, console)
    render_raised_by(diagnosis, console)
    matches = diagnosis.matches[:top]
    if not matches:
        if diagnosis.similar:
            render_similar(diagnosis, console, top)
        else:
            render_no_match(diagnosis, console)
        return
    more = len(diagnosis.matches) - len(matches)
    console.print()
    heading = ("What it probably is" if matches[0].confident
               else "What it may be (a guess: no match is certain enough to say \"probably\")")
    heading += f" (best {len(matches)} of {len(diagnosis.matches)})" if more else ""
    console.print(f"[bold]{heading}[/bold]")
    script = traceback_script(diagnosis)
    for rank, match in enumerate(matches, start=1):
        render_match(match, console, rank, detailed=rank == 1, script=script)
    if diagnosis.error is None:
        render_checks(suggested_checks(matches), console)


def traceback_script(diagnosis: Diagnosis) -> str:
    """The script the traceback ran (its outermost frame in the person's code), or train.py."""
    error = diagnosis.error
    frames = [f for f in (getattr(error, "frames", None) or []) if getattr(f, "is_user", False)]
    if frames and str(frames[0].file).endswith(".py"):
        return str(frames[0].file).replace("\\", "/").rsplit("/", 1)[-1]
    return "train.py"


def render_raised_by(diagnosis: Diagnosis, console: Console) -> None:
    """Name the library that raised an error that is not torch's own."""
    from rich.markup import escape

    origin = diagnosis.raised_by
    if not origin:
        return
    console.print()
    library = "" if origin["library"] in origin["what"] else f" (raised by {origin['library']})"
    console.print(f"[bold]Not a torch error:[/bold] {escape(origin['what'] + library)}")
    frame = origin.get("frame")
    if frame:
        where = f"{frame['file']}:{frame['line']}" + (
            f" in {frame['function']}" if frame.get("function") else "")
        _indented(console, 2, f"raised at {escape(where)}")
        if frame.get("code"):
            _indented(console, 6, escape(str(frame["code"]).strip()))


def render_similar(diagnosis: Diagnosis, console: Console, top: int) -> None:
    """No entry recognises it: the closest ones, worded as resemblance, and the question."""
    from rich.markup import escape

    console.print()
    console.print("[bold]Not recognised.[/bold] The closest entries (similar, not recognised; "
                  "their scores are low on purpose):")
    for rank, match in enumerate(diagnosis.similar[:top], start=1):
        render_match(match, console, rank, detailed=False)
    if diagnosis.question:
        console.print()
        _indented(console, 0, f"[bold]To tell them apart:[/bold] {escape(diagnosis.question)}")


def render_checks(checks: list[dict], console: Console) -> None:
    """The runnable command that tests the hypotheses above, and what each check decides."""
    from rich.markup import escape

    if not checks:
        return
    console.print()
    console.print("[bold]Test these hypotheses on your model[/bold]")
    _indented(console, 2, escape(check_command([c["probe"] for c in checks])))
    _indented(console, 4, f"[dim]{escape(HARNESS_HELP)}[/dim]")
    width = max(len(c["probe"]) for c in checks)
    for check in checks:
        _indented(console, 4, f"{escape(check['probe'].ljust(width))}  confirms or rejects "
                              f"{escape(', '.join(check['hypotheses']))}")


def render_error(diagnosis: Diagnosis, console: Console) -> None:
    from rich.markup import escape

    error = diagnosis.error
    if error is None:
        console.print("[bold]No traceback found;[/bold] reading the text as a description of "
                      "a symptom.")
        if diagnosis.prose_fields:
            numbers = ", ".join(f"{k} = {v}" for k, v in diagnosis.prose_fields.items())
            _indented(console, 2, f"numbers read: {escape(numbers)}")
        return
    console.print("[bold]The error[/bold]")
    kind = error.type or "(exception type not shown)"
    _indented(console, 2, f"[bold red]{escape(kind)}[/bold red]: {escape(shorten(error.message))}")
    frame = error.user_frame
    if frame is not None:
        where = f"{frame.file}:{frame.line}" + (f" in {frame.function}" if frame.function else "")
        _indented(console, 2, f"at {escape(where)}")
        if frame.code:
            _indented(console, 6, f"{escape(frame.code.strip())}")
    _indented(console, 2, f"phase: {error.phase.replace('_', ' ')}")
    for note in _extras_notes(error.extras or {}):
        _indented(console, 2, f"{escape(note)}")


def _extras_notes(extras: dict) -> list[str]:
    notes = []
    worker = extras.get("dataloader_worker")
    if worker is not None:
        notes.append(f"raised inside DataLoader worker process {worker}")
    failed = extras.get("failed_ranks") or []
    if failed:
        notes.append("failed ranks: " + ", ".join(str(rank) for rank in failed))
    for line in (extras.get("cuda_asserts") or [])[:1]:
        text = line if isinstance(line, str) else str(line.get("text") or line)
        notes.append(f"CUDA assertion: {shorten(text, 200)}")
    others = extras.get("other_errors") or []
    if others:
        notes.append(f"{len(others)} other error(s) in the paste; diagnosing the first root one")
    if extras.get("truncated"):
        notes.append("the paste looks truncated; the diagnosis uses what is there")
    return notes


def render_match(match: Match, console: Console, rank: int, detailed: bool,
                 script: str = "train.py") -> None:
    from rich.markup import escape

    entry = match.entry
    console.print()
    console.print(f"[bold]{rank}. {wording(match)}: {escape(entry.title)}[/bold]  "
                  f"[dim]{entry.id}  score {match.score:.2f}[/dim]")
    _indented(console, 3, f"[dim]why this entry: {escape(match.reason)}[/dim]")
    for fact in match.facts:
        _indented(console, 3, f"• {escape(fact)}")
    hypotheses = match.hypotheses if detailed else match.hypotheses[:2]
    for number, hypothesis in enumerate(hypotheses, start=1):
        _render_hypothesis(hypothesis, console, number, detailed, script)
    hidden = len(match.hypotheses) - len(hypotheses)
    if hidden:
        _indented(console, 3, f"[dim]… {hidden} more hypotheses (--json shows them all)[/dim]")


def _render_hypothesis(hypothesis: dict, console: Console, number: int, detailed: bool,
                       script: str = "train.py") -> None:
    from rich.markup import escape

    _indented(console, 3, f"[bold]H{number}[/bold] {escape(hypothesis['statement'])}")
    if detailed and hypothesis.get("predicts"):
        _indented(console, 6, f"predicts: {escape(hypothesis['predicts'])}")
    probe = hypothesis.get("probe")
    if probe:
        _indented(console, 6, f"test it: {escape(probe_command(probe['name'], script))}")
    fix = hypothesis.get("fix")
    if not fix:
        return
    _indented(console, 6, f"fix: {escape(fix['summary'])}")
    if detailed and (fix.get("before") or fix.get("after")):
        _render_snippets(fix, console)


def _render_snippets(fix: dict, console: Console) -> None:
    """Highlighted on a colour terminal; plain indented lines anywhere else (and faster)."""
    from rich.markup import escape

    for label in ("before", "after"):
        code = (fix.get(label) or "").rstrip()
        if not code:
            continue
        _indented(console, 6, f"{label}:")
        if console.color_system is None:
            for line in code.splitlines():
                _indented(console, 8, f"{escape(line)}")
            continue
        from rich.padding import Padding
        from rich.syntax import Syntax

        console.print(Padding(Syntax(code, "python", theme="ansi_dark",
                                     background_color="default"), (0, 0, 0, 8)))


def render_no_match(diagnosis: Diagnosis, console: Console) -> None:
    console.print()
    if diagnosis.error is None:
        console.print("[bold]Nothing matched:[/bold] no traceback was found and no known "
                      "symptom matches this description.")
    else:
        console.print("[bold]Nothing matched:[/bold] no knowledge-base entry recognises this "
                      "error yet.")
    console.print("Work through it in five phases:")
    for number, (name, step) in enumerate(FIVE_PHASES, start=1):
        _indented(console, 2, f"{number}. [bold]{name}[/bold]: {step}")
