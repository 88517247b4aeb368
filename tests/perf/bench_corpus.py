"""How well ``diagnose`` recognises the real pastes in ``tests/corpus/``.

    python tests/perf/bench_corpus.py [--unseen | --dev] [--misses] [--form TAG] [--category NAME]

With ``--unseen`` it scores the held-out pastes of ``tests/corpus_unseen/``
instead: cases no pattern was written against, so their figures say how
``diagnose`` does on pastes nobody tuned it for. With ``--dev``, the prose
reports of ``tests/corpus_dev/``, which no phrase was written for and no
entry's report profile counts.

On the whole corpus it also prints how the ranking by a report's facets
(``torchdoctor/facets``) does alone, cross-validated: five times, the profiles
are counted from four fifths of the corpus's prose reports and rank the fifth.

Prints top-1/top-3 category and entry accuracy, the share answered only with
"similar, not recognised" entries (a miss for the accuracy columns; sim@3 is
the share whose expected entry is among those three) and the "nothing
matched" rate, overall, per category, per kind of paste (form tag), per
source and for torch before 1.8; then the calibration of the top match's
score (precision and coverage per score band, and at the documented
``CONFIDENT`` threshold); then the entries the knowledge base lacks, by how
many cases want them; then (with ``--misses``, or always when few) every
case whose expected entry did not come first: id, expected, got.
"""

from __future__ import annotations

import argparse
import itertools
import math
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))


from corpus_cases import (
    CATEGORIES,
    CORPUS_DIR,
    DEV_DIR,
    FORM_TAGS,
    UNSEEN_DIR,
    Outcome,
    calibration,
    figures,
    load_cases,
    score,
)

from torchdoctor.knowledge import load_knowledge
from torchdoctor.match import CONFIDENT

COLUMNS = ("top1_category", "top3_category", "top1_entry", "top3_entry", "similar_only",
           "similar3_entry", "nothing_matched")
HEADINGS = ("cat@1", "cat@3", "entry@1", "entry@3", "similar", "sim@3", "nothing")
# Lower edges of the score bands the calibration table reports.
BANDS = (0.0, 0.5, 1.0, 2.0, 2.5, 3.0, 3.3, 3.6)


def table(title: str, groups: list[tuple[str, list[Outcome]]]) -> None:
    print(f"\n{title:<24}{'cases':>6}" + "".join(f"{h:>9}" for h in HEADINGS))
    for name, outcomes in groups:
        if not outcomes:
            continue
        row = figures(outcomes)
        print(f"  {name:<22}{len(outcomes):>6}"
              + "".join(f"{row[c] * 100:>8.1f}%" for c in COLUMNS))


def calibration_table(outcomes: list[Outcome]) -> None:
    """Per band of the top recognised score: how often it is right, and how many get it."""
    total = len(outcomes) or 1
    print(f"\ncalibration (top recognised match){'cases':>10}{'right':>9}{'coverage':>10}")
    edges = BANDS + (float("inf"),)
    for low, high in itertools.pairwise(edges):
        band = [o for o in outcomes if o.score is not None and low <= o.score < high]
        if band:
            name = f"{low:.1f} .. {high:.1f}" if high != float("inf") else f">= {low:.1f}"
            right = sum(o.top1_entry for o in band) / len(band)
            print(f"  score {name:<26}{len(band):>8}{right * 100:>8.1f}%"
                  f"{len(band) / total * 100:>9.1f}%")
    confident = calibration(outcomes, CONFIDENT)
    print(f"  CONFIDENT = {CONFIDENT}: precision {confident['precision'] * 100:.1f}% "
          f"over {confident['count']} cases, coverage {confident['coverage'] * 100:.1f}%")
    errors = calibration([o for o in outcomes if not o.case.prose_only], CONFIDENT)
    print(f"  coverage of the pastes that hold an error message (prose alone is never "
          f"confident): {errors['coverage'] * 100:.1f}%")


def facets_cross_validated(kb: object, folds: int = 5) -> tuple[float, float]:
    """Top-1 and top-3 entry accuracy of the ranking by facets and words on prose
    reports it never counted: each fold's profiles come from the other folds."""
    import random

    from torchdoctor.facets.profiles import corpus_reports, count_reports
    from torchdoctor.facets.ranking import FacetIndex
    from torchdoctor.facets.reading import report_reading

    reports = corpus_reports(CORPUS_DIR)
    order = list(range(len(reports)))
    random.Random(0).shuffle(order)
    first = within_three = 0
    for fold in range(folds):
        held = set(order[fold::folds])
        index = FacetIndex(kb.entries, count_reports(r for i, r in enumerate(reports) if i not in held))
        for i in held:
            ranked = [found.entry.id for found in index.rank(*report_reading(reports[i][1]))]
            first += ranked[:1] == [reports[i][0]]
            within_three += reports[i][0] in ranked
    return first / len(reports), within_three / len(reports)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--misses", action="store_true", help="list every miss")
    parser.add_argument("--form", help="only cases with this form tag")
    parser.add_argument("--category", help="only cases of this category")
    chosen = parser.add_mutually_exclusive_group()
    chosen.add_argument("--unseen", action="store_true",
                        help="score the held-out pastes of tests/corpus_unseen/")
    chosen.add_argument("--dev", action="store_true",
                        help="score the prose reports of tests/corpus_dev/")
    args = parser.parse_args()

    kb = load_knowledge(include_user=False, use_cache=False, report=False)
    cases = load_cases(kb, UNSEEN_DIR if args.unseen else DEV_DIR if args.dev else CORPUS_DIR)
    if args.form:
        cases = [c for c in cases if args.form in c.form]
    if args.category:
        cases = [c for c in cases if c.category == args.category]
    start = time.perf_counter()
    outcomes = score(cases, kb)
    elapsed = time.perf_counter() - start

    print(f"{len(cases)} cases, {len(kb)} knowledge-base entries, "
          f"diagnosed in {elapsed:.2f} s ({elapsed / max(len(cases), 1) * 1000:.1f} ms each)")
    table("overall", [("all", outcomes)])
    table("by category", [(c, [o for o in outcomes if o.case.category == c])
                          for c in CATEGORIES])
    table("by form", [(t, [o for o in outcomes if t in o.case.form]) for t in FORM_TAGS])
    table("by source and era", [
        ("issues", [o for o in outcomes if o.case.group == "issues"]),
        ("pages", [o for o in outcomes if o.case.group == "pages"]),
        ("torch < 1.8", [o for o in outcomes if o.case.before_1_8]),
        ("entry in the KB", [o for o in outcomes if o.case.expected]),
        ("entry missing", [o for o in outcomes if not o.case.expected]),
    ])

    calibration_table(outcomes)

    wanted = Counter(o.case.wanted_entry["id"] for o in outcomes if not o.case.expected)
    print(f"\nentries the knowledge base lacks ({sum(wanted.values())} cases, "
          f"{len(wanted)} entries):")
    for entry_id, count in wanted.most_common():
        print(f"  {count:>4}  {entry_id}")

    if args.unseen and not (args.form or args.category):
        overall = figures(outcomes)
        print("\nfloors for the held-out pastes in tests/test_corpus.py:")
        print(f"  FLOOR_UNSEEN_TOP1_CATEGORY = "
              f"{max(math.floor(overall['top1_category'] * 100) - 2, 0) / 100:.2f}")
        print(f"  FLOOR_UNSEEN_TOP1_ENTRY = "
              f"{max(math.floor(overall['top1_entry'] * 100) - 2, 0) / 100:.2f}")
    elif not (args.form or args.category or args.dev):
        top1, top3 = facets_cross_validated(kb)
        print(f"\nranking by facets and words, 5-fold cross-validation over the prose reports: "
              f"top-1 {top1 * 100:.1f}%, top-3 {top3 * 100:.1f}%")
        overall = figures(outcomes)
        print("\nfloors for tests/test_corpus.py (one point below today's figures):")
        for name, key in (("FLOOR_TOP1_CATEGORY", "top1_category"),
                          ("FLOOR_TOP1_ENTRY", "top1_entry"), ("FLOOR_TOP3_ENTRY", "top3_entry")):
            print(f"  {name} = {max(math.floor(overall[key] * 100) - 1, 0) / 100:.2f}")
        print(f"  CEILING_NOTHING_MATCHED = "
              f"{min(math.ceil(overall['nothing_matched'] * 100) + 1, 100) / 100:.2f}")
        shown = overall["top3_entry"] + overall["similar3_entry"]
        print(f"  FLOOR_SHOWN_IN_FIRST_THREE = "
              f"{max(math.floor(shown * 100) - 1, 0) / 100:.2f}")
        print(f"  MIN_CASES = {len(outcomes)}")

    misses = [o for o in outcomes if o.case.expected and not o.top1_entry]
    print(f"\nmisses with an entry in the knowledge base: {len(misses)}")
    if args.misses or len(misses) <= 40:
        for o in misses:
            got = (", ".join(entry for entry, _ in o.got[:3])
                   or ("similar: " + ", ".join(entry for entry, _ in o.similar[:3])
                       if o.similar else "nothing matched"))
            print(f"  {o.case.group}/{o.case.id}: expected {o.case.expected}; got {got}")
    else:
        print("  (--misses lists them)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
