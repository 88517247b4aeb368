"""``torchdoctor run [--no-tui] [--json] [--timeout S] [--top N] SCRIPT [ARGS…]``.

Runs the script as ``__main__`` in a patient. When it raises, the traceback
is diagnosed without any pasting and each top hypothesis is tested on the
live objects the patient recovered from the failing frames.

The script runs as long as it runs (training takes hours) unless ``--timeout``
sets a limit; each probe and each rerun of the script has a budget of its own
(``--probe-timeout``); a limit that fires is named in the output.

Exit status: 0 a cause was confirmed or the script ran clean, 1 the script
failed and nothing was confirmed, 2 usage error (no such script, ...).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from typing import Any

from torchdoctor.location import describe_location, site_lines

EXIT_OK, EXIT_UNCONFIRMED, EXIT_USAGE = 0, 1, 2


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--no-tui", action="store_true",
                        help="print the diagnosis instead of opening the app")
    parser.add_argument("--json", action="store_true",
                        help="print one JSON object: target, error, matches, findings")
    parser.add_argument("--timeout", type=float, default=None, metavar="S",
                        help="stop the script after S seconds (default: no limit)")
    parser.add_argument("--probe-timeout", type=float, default=None, metavar="S",
                        help="stop each probe and each rerun of the script after S seconds"
                        " (default: each probe's own budget; a rerun, twice the first run"
                        " plus 120 s)")
    parser.add_argument("--top", type=int, default=3, metavar="N",
                        help="test the hypotheses of the N best matches (default 3)")
    parser.add_argument("--only", metavar="P,...",
                        help="test only the hypotheses whose probe is one of these")
    parser.add_argument("--no-session", action="store_true",
                        help="keep no session journal (and so no report or repro)")
    parser.add_argument("script", metavar="SCRIPT", help="the Python script to run")
    parser.add_argument("args", nargs=argparse.REMAINDER, metavar="ARGS",
                        help="arguments passed to the script as its own sys.argv[1:]")


def run(args: argparse.Namespace) -> int:
    problem = _usage_problem(args)
    if problem:
        print(f"torchdoctor run: {problem}", file=sys.stderr)
        return EXIT_USAGE
    notice = _own_flags_after_script(args)
    if notice:
        print(f"torchdoctor run: {notice}", file=sys.stderr)
    if not (args.json or args.no_tui or args.no_session) and _interactive():
        # The app runs the script itself, so its output shows live and one session holds all.
        from torchdoctor.tui import open_app

        return open_app(script=args.script, argv=list(args.args), kind="run", autostart=True,
                        kb_dirs=tuple(getattr(args, "kb", ()) or ()), notice=notice)
    from torchdoctor.patient.client import PatientClient, PatientError
    from torchdoctor.preload import KnowledgeAhead
    from torchdoctor.timeline import Timeline

    timeline = Timeline()
    script = os.path.abspath(args.script)
    # Spawned first, so its torch import runs while the doctor reads the knowledge base
    # (in a thread, which the script's run leaves time for) and opens the session.
    client = PatientClient.spawn(budget=args.probe_timeout)
    with client:
        knowledge = KnowledgeAhead(getattr(args, "kb", None) or ())
        from torchdoctor.recording import finish_run, start_run

        # Opened before the script runs and written as it happens: a kill leaves the session.
        session = None if args.no_session else start_run(args.script, args.args)
        timeline.mark("session_opened")
        try:
            client.wait_ready()
        except PatientError as exc:
            if session is not None:
                session.note(f"could not start the patient process: {exc}")
                session.close()
            print(f"torchdoctor run: could not start the patient process: {exc}",
                  file=sys.stderr)
            return EXIT_UNCONFIRMED
        timeline.mark("patient_ready")
        try:
            report = client.run_script(script, args.args, timeout=args.timeout)
        except PatientError as exc:
            timeline.mark("script_ended")
            outcome = _outcome_of_crash(args.script, exc)
            if not args.json:
                _echo_output(outcome)
            if session is not None:
                finish_run(session, outcome)
        else:
            timeline.mark("script_ended")
            if not args.json:
                _echo_output(report)
            outcome = _investigate(args, report, client, session, knowledge, timeline)
            timeline.mark("tested")
            # Finished while the patient lives: the repro is cut from the live failure.
            if session is not None:
                finish_run(session, {**outcome, "traceback": report.get("traceback")}, client)
    timeline.mark("finished")
    if session is not None:
        session.close()
        outcome["session"] = session.id
    outcome["timings"] = timeline.to_dict()
    if args.json:
        json.dump(outcome, sys.stdout, indent=2, ensure_ascii=False, default=str)
        sys.stdout.write("\n")
    else:
        print_text(outcome, diagnosis_shown="diagnosis_shown" in timeline.marks)
    return outcome_status(outcome)


def _only(args: argparse.Namespace) -> list[str] | None:
    return [name.strip() for name in args.only.split(",") if name.strip()] if args.only else None


def _usage_problem(args: argparse.Namespace) -> str | None:
    from torchdoctor.probes_manifest import PROBES

    unknown = [name for name in _only(args) or () if name not in PROBES]
    if unknown:
        return f"--only: no probe named {', '.join(unknown)} (known: {', '.join(PROBES)})"
    if args.top < 1:
        return "--top must be 1 or more"
    for option, value in (("--timeout", args.timeout), ("--probe-timeout", args.probe_timeout)):
        if value is not None and value <= 0:
            return f"{option} must be a positive number of seconds"
    if not os.path.exists(args.script):
        return f"{args.script}: no such script"
    if not os.path.isfile(args.script):
        return f"{args.script}: not a file (give the Python script to run)"
    if args.script.endswith(".py") is False and ":" in os.path.basename(args.script):
        return f"{args.script}: run takes a script; for a harness use 'torchdoctor check'"
    return None


def _investigate(args: argparse.Namespace, report: dict[str, Any], client: Any,
                 session: Any, knowledge: Any, timeline: Any) -> dict:
    """Diagnose the failure, show the diagnosis at once (text), then test its hypotheses."""
    outcome: dict[str, Any] = {
        "target": args.script, "argv": list(args.args), "exited": report["exited"],
        "exit_code": report["exit_code"], "error": None, "matches": [], "findings": [],
        "found": report.get("found", {}), "stdout": report.get("stdout", ""),
        "stderr": report.get("stderr", ""), "output_dropped": report.get("output_dropped"),
    }
    if report["exited"] != "raised":
        return outcome
    from torchdoctor.investigation.hypotheses import order_by_evidence, test_hypotheses
    from torchdoctor.investigation.probing import factory_for
    from torchdoctor.knowledge import KnowledgeError
    from torchdoctor.match import diagnose

    try:
        kb = knowledge.result()
    except KnowledgeError as error:
        outcome["error"] = {"type": report["error"]["type"],
                            "message": report["error"]["message"]}
        outcome["kb_problems"] = [str(p) for p in error.errors]
        return outcome
    diagnosis = diagnose(report["traceback"], kb)
    shape = diagnosis.to_dict()
    outcome["error"] = shape["error"]
    outcome["matches"] = shape["matches"][: args.top]
    timeline.mark("diagnosed")
    if not args.json:
        print_diagnosis(outcome, _testable(outcome["matches"], _only(args)))
        timeline.mark("diagnosis_shown")
    journal = _journal_as_it_happens(session, report["traceback"], shape, args.top)

    def judged(finding: Any) -> None:
        timeline.add("findings")
        if journal is not None:
            journal(finding)

    findings = test_hypotheses(diagnosis, factory_for(client), top=args.top,
                               only=_only(args), on_finding=judged)
    matches, findings = order_by_evidence(shape["matches"][: args.top], findings)
    outcome["matches"] = matches
    outcome["findings"] = [finding.to_dict() for finding in findings]
    return outcome


def _testable(matches: list[dict], only: list[str] | None) -> int:
    """How many of the shown hypotheses a probe will test (the others stay untested)."""
    return sum(1 for match in matches for hyp in match.get("hypotheses") or []
               if (hyp.get("probe") or {}).get("name")
               and (only is None or hyp["probe"]["name"] in only))


def _journal_as_it_happens(session: Any, traceback: str, shape: dict, top: int) -> Any:
    """Journal the failure now, and return what journals each finding as it comes in."""
    if session is None:
        return None
    from torchdoctor.recording import record_failure, record_finding

    record_failure(session, traceback, {**shape, "matches": shape["matches"][:top]})
    return lambda finding: record_finding(session, finding.to_dict())


def _outcome_of_crash(script: str, exc: Exception) -> dict:
    """The patient died or hung: that is the finding, and the doctor lives on."""
    kind = type(exc).__name__
    exited = "timeout" if kind == "PatientTimeout" else "died"
    return {
        "target": script, "exited": exited, "exit_code": getattr(exc, "returncode", None),
        "signal": getattr(exc, "signal", None), "limit": getattr(exc, "limit", None),
        "error": {"type": kind, "message": str(exc)}, "matches": [], "findings": [],
        # What the script printed up to the crash: its last lines are often the clue.
        "stdout": getattr(exc, "stdout", ""), "stderr": getattr(exc, "stderr", ""),
        "output_dropped": getattr(exc, "output_dropped", None),
    }


def outcome_status(outcome: dict) -> int:
    if outcome["exited"] == "clean" or (outcome["exited"] == "sys.exit"
                                        and outcome["exit_code"] == 0):
        return EXIT_OK
    if any(f["verdict"] == "confirmed" for f in outcome["findings"]):
        return EXIT_OK
    return EXIT_UNCONFIRMED


def _interactive() -> bool:
    return sys.stdout.isatty() and sys.stdin.isatty()


# run's own options: given after the script they are the script's (as with python -m pdb).
_OWN_FLAGS = ("--no-tui", "--json", "--timeout", "--top", "--only", "--no-session")


def _own_flags_after_script(args: argparse.Namespace) -> str | None:
    """One line when words after the script look like torchdoctor's: they are not read as such."""
    own = [word for word in args.args if word.split("=", 1)[0] in _OWN_FLAGS]
    if not own:
        return None
    name = os.path.basename(args.script)
    return (f"{' '.join(own)} come after {name}, so {name} gets them; "
            f"for torchdoctor, put them first: torchdoctor run {' '.join(own)} {name}")


def _echo_output(outcome: dict) -> None:
    """The script's own output first, as ``python SCRIPT`` would have shown it.

    Only the last bytes of each stream are kept; a cut is said, on stderr,
    before what is shown of that stream.
    """
    dropped = outcome.get("output_dropped") or {}
    for name, stream in (("stdout", sys.stdout), ("stderr", sys.stderr)):
        if dropped.get(name):
            sys.stdout.flush()
            print(f"torchdoctor: the script's {name} was cut: its first {dropped[name]:,} bytes"
                  f" are not shown, only the last ones", file=sys.stderr, flush=True)
        if outcome.get(name):
            stream.write(outcome[name])
            stream.flush()


def print_text(outcome: dict, diagnosis_shown: bool = False) -> None:
    """What is wrong and where, in a few lines; the diagnosis itself unless already shown."""
    name = os.path.basename(outcome["target"])
    exited = outcome["exited"]
    if exited == "clean":
        print(f"torchdoctor: {name} finished without an exception")
        return
    if exited == "sys.exit":
        print(f"torchdoctor: {name} exited with code {outcome['exit_code']} (sys.exit);"
              " no exception to diagnose")
        return
    error = outcome.get("error") or {}
    if exited in ("died", "timeout"):
        print(f"torchdoctor: {error.get('message')}")
        return
    if not diagnosis_shown:
        _print_failure(outcome)
    if outcome.get("kb_problems"):
        print("  the knowledge base is invalid; nothing was tested:")
        for problem in outcome["kb_problems"]:
            print(f"    {problem}")
        return
    if not outcome["matches"]:
        if not diagnosis_shown:
            print("  no knowledge-base entry matches this error")
        return
    _print_findings(outcome, name)


def print_diagnosis(outcome: dict, testable: int) -> None:
    """The first verdict, shown as soon as the traceback is diagnosed: the error, where it
    was raised, and the causes the knowledge base ranks for it. Testing them on the failing
    run (a replay under the recorder, the probes) comes after, and the line saying so is
    flushed with it, so the person reads the diagnosis while the tests run."""
    _print_failure(outcome)
    if not outcome["matches"]:
        print("  no knowledge-base entry matches this error")
    else:
        print("likely causes, ranked from the traceback:")
        for number, match in enumerate(outcome["matches"], 1):
            guess = "" if match.get("confident") else ", a guess"
            print(f"  {number}. {match.get('title')} ({match.get('entry')}{guess})")
    if testable:
        noun = "hypothesis" if testable == 1 else "hypotheses"
        print(f"testing {testable} {noun} on the failing run...")
    sys.stdout.flush()


def _print_failure(outcome: dict) -> None:
    name = os.path.basename(outcome["target"])
    error = outcome.get("error") or {}
    print(f"torchdoctor: {name} raised {error.get('type')}: {_first_line(error.get('message'))}")
    frame = error.get("user_frame")
    if frame:
        print(f"  at {_place(frame)}: {frame.get('code') or ''}".rstrip())


def _print_findings(outcome: dict, name: str) -> None:
    """The verdicts the failing run gave: what was confirmed, with its evidence and sites."""
    hypotheses = _hypotheses_by_id(outcome["matches"])
    confirmed = [f for f in outcome["findings"] if f["verdict"] == "confirmed"]
    for finding in confirmed:
        hyp = hypotheses.get(finding["hypothesis"], {})
        print(f"confirmed: {hyp.get('statement') or finding['hypothesis']}")
        print(f"  evidence ({finding['probe']}): {finding['summary']}")
        unstated = _unstated_evidence(finding)
        if unstated:
            print("  decided by: " + ", ".join(f"{fact} = {value}"
                                              for fact, value in unstated.items()))
        for line in site_lines(finding):
            print(f"  {line}")
        where = describe_location(finding.get("location"))
        if where:
            print(f"  where: {where}")
        fix = hyp.get("fix") or {}
        if fix.get("summary"):
            print(f"  fix: {fix['summary']}")
    if not confirmed:
        best = outcome["matches"][0]
        print(f"likely: {best.get('title')} ({best.get('entry')}); no hypothesis was confirmed")
    others = [f for f in outcome["findings"] if f["verdict"] != "confirmed"]
    need_harness = [f for f in others if _needs_harness(f)]
    for finding in others:
        if finding in need_harness:
            continue
        statement = hypotheses.get(finding["hypothesis"], {}).get("statement")
        print(f"  {finding['verdict']}: {_shorten(statement or finding['summary'], 110)}")
        if finding.get("reason"):
            print(f"    ({_shorten(finding['reason'], 104)})")
    if need_harness and not confirmed:
        print("  not testable on a script (they rerun training steps): give a harness and run"
              f" torchdoctor check {name}:NAME (see docs/harness.md) to test:")
        shown = dict.fromkeys(hypotheses.get(f["hypothesis"], {}).get("statement")
                              or f["hypothesis"] for f in need_harness)
        for statement in shown:
            print(f"    {_shorten(statement, 106)}")
    if outcome.get("session"):
        print(f"report and verified repro: torchdoctor report {outcome['session']}")


def _place(frame: dict) -> str:
    """``file:line in function``; a SyntaxError's place has a line but no function."""
    place = f"{frame.get('file')}:{frame.get('line')}"
    return f"{place} in {frame['function']}" if frame.get("function") else place


def _unstated_evidence(finding: dict) -> dict:
    """The deciding facts, when the probe's summary quotes none of them; else nothing.

    A summary that already says "targets span 1..10 but there are 10 classes" is
    the evidence; repeating "one_based = True" under it is noise. Flags (true/false)
    are the probe's own conclusion, never evidence the reader can check.
    """
    values = {name: value for name, value in (finding.get("evidence") or {}).items()
              if not isinstance(value, bool)}
    summary = finding.get("summary") or ""
    quoted = any(re.search(rf"(?<!\w)(?<!\d\.){re.escape(str(value))}(?!\w)", summary)
                 for value in values.values())
    return {} if quoted else values


def _hypotheses_by_id(matches: list[dict]) -> dict[str, dict]:
    return {f"{m['entry']}/{h['id']}": h for m in matches for h in m.get("hypotheses", [])}


def _shorten(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _needs_harness(finding: dict) -> bool:
    return finding["verdict"] == "untested" and "needs a" in (finding.get("reason") or "")


def _first_line(text: Any) -> str:
    """The message's first line; of a long one, its first sentence (torch appends advice)."""
    line = str(text or "").strip().splitlines()[0] if str(text or "").strip() else ""
    if len(line) > 160 and ". " in line[:240]:
        line = line[: line.index(". ") + 1]
    return line
