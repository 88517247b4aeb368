"""Facets of a symptom report, the entries' profiles over them, and the ranking that
``diagnose`` falls back to when no symptom phrase matched.

The reports below are written for these tests, in wordings no entry's phrases hold,
so each checks what carries over to a new wording, not what a phrase already knew.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from torchdoctor.facets.profiles import (
    REPORTS_FILE,
    corpus_reports,
    count_reports,
    dumps,
    load_reports,
)
from torchdoctor.facets.ranking import FacetIndex
from torchdoctor.facets.reading import report_facets, report_reading
from torchdoctor.facets.vocabulary import facets_of, tells_a_symptom
from torchdoctor.knowledge import load_knowledge
from torchdoctor.match import TIER_RESEMBLANCE, TIER_SYMPTOM, diagnose
from torchdoctor.symptoms import described

CORPUS = Path(__file__).resolve().parent / "corpus"


@pytest.fixture(scope="module")
def kb():
    return load_knowledge(include_user=False, use_cache=False, report=False)


def test_a_report_in_another_language_shows_the_facets_of_its_english_copy():
    found = facets_of(described("训练的时候显存一直在增长，最后爆显存"))
    assert {"quantity.gpu_memory", "behaviour.growing", "behaviour.out_of_memory"} <= found


def test_what_the_numbers_say_is_a_facet_of_its_own():
    found = facets_of(described("10-class problem, the loss sits at 2.3026 every epoch"))
    assert "reading.chance_level" in found


@pytest.mark.parametrize(("report", "halted"), [
    ("the training always gets stuck at epoch 3 and the terminal shows nothing more", True),
    ("after the first epoch the program is blocked and does not go any further", True),
    ("the loss gets stuck at 0.69 and never goes down", False),
    ("my accuracy is stuck around 10% whatever I change", False),
])
def test_stuck_is_a_halted_run_or_a_number_that_will_not_move_not_both(report, halted):
    found = facets_of(described(report))
    assert ("behaviour.hangs" in found) is halted
    assert ("behaviour.stuck" in found) is not halted


def test_a_report_in_the_past_tense_reads_as_one_in_the_present():
    assert "behaviour.growing" in facets_of(described("GPU memory grew after every step"))
    assert "behaviour.swinging" in facets_of(described("the loss spiked, then jumped again"))


def test_a_word_or_two_is_no_report():
    assert not tells_a_symptom(facets_of(described("thanks for the great library")))
    assert not tells_a_symptom(facets_of(described("memory")))
    assert tells_a_symptom(facets_of(described("the loss won't budge")))


@pytest.mark.parametrize(("report", "entry"), [
    (("Every few iterations nvidia-smi shows a couple hundred MiB more, until CUDA runs out "
     "of memory around epoch 3."), "memory.growing"),
    (("Since I moved to 4 cards with torchrun the job just sits there after printing the "
     "config, no step ever runs and nothing is printed."), "distributed.ddp_startup_hang"),
    (("Two runs with identical code and torch.manual_seed(0) end up with different "
     "validation numbers every time."), "other.nondeterminism"),
])
def test_reports_in_new_words_read_like_their_entries_reports(kb, report, entry):
    ranked = FacetIndex(kb.entries).rank(report_facets(report))
    assert entry in [found.entry.id for found in ranked]


def test_no_symptom_no_ranking(kb):
    assert FacetIndex(kb.entries).rank(report_facets("hello, is this project still maintained?")) == []


def test_an_entry_no_report_reached_keeps_the_profile_of_its_own_words(kb):
    index = FacetIndex(kb.entries, reports={})
    assert index.profiles, "every symptom entry has a profile from its own words"
    assert all(profile.reports > 0 for profile in index.profiles.values())


def test_diagnose_falls_back_to_a_guess_below_every_phrase_match(kb):
    text = ("The loss won't budge at all, it sits there epoch after epoch and the "
            "optimizer seems to do nothing.")
    assert not [m for m in diagnose(text, kb).matches if m.kind == "match"]
    top = diagnose(text, kb).matches[0]
    assert TIER_RESEMBLANCE <= top.score < TIER_SYMPTOM
    assert not top.confident
    assert top.kind == "reads_like" and "reads like its reports" in top.reason
    assert top.entry.category == "training"


def test_an_error_nothing_recognises_is_not_read_for_facets(kb):
    text = ("Traceback (most recent call last):\n  File \"train.py\", line 3, in <module>\n"
            "    run()\nZorkError: the loss is stuck and memory keeps growing")
    assert not [m for m in diagnose(text, kb).matches if "reads like" in m.reason]


def test_the_counted_reports_are_those_of_the_corpus():
    expected = dumps(count_reports(corpus_reports(CORPUS)))
    assert REPORTS_FILE.read_text(encoding="utf-8") == expected, (
        "rebuild with: python -m torchdoctor.facets.profiles tests/corpus")


@pytest.mark.parametrize("content", [
    "not json",
    json.dumps([1, 2, 3]),
    json.dumps({"entries": {"memory.growing": {"reports": "many", "seen": {}}}}),
    json.dumps({"entries": {"memory.growing": {"reports": -3, "seen": {}}}}),
    json.dumps({"entries": {"memory.growing": {"reports": 0, "seen": {}}}}),
    json.dumps({"entries": {"memory.growing": {"reports": True, "seen": {}}}}),
])
def test_a_malformed_reports_file_reads_as_none(tmp_path, content):
    path = tmp_path / "reports.json"
    path.write_text(content, encoding="utf-8")
    assert load_reports(path) == {}


def test_a_malformed_reports_file_still_ranks_every_entry_by_its_own_words(tmp_path, kb):
    path = tmp_path / "reports.json"
    path.write_text(json.dumps({"entries": {"memory.growing": {"reports": -3, "seen": {}}}}),
                    encoding="utf-8")
    index = FacetIndex(kb.entries, load_reports(path))
    ranked = index.rank(report_facets("GPU memory keeps growing every iteration until it runs out"))
    assert ranked and ranked[0].entry.category == "memory"


def test_counts_that_cannot_be_are_dropped(tmp_path):
    path = tmp_path / "reports.json"
    path.write_text(json.dumps({"entries": {"memory.growing": {
        "reports": 3, "seen": {"behaviour.growing": 2, "behaviour.stuck": 9,
                               "__import__('os')": 1, "quantity.loss": -1}}}}), encoding="utf-8")
    loaded = load_reports(path)
    assert dict(loaded["memory.growing"].seen) == {"behaviour.growing": 2}


def test_the_shipped_profiles_load_and_name_entries_of_the_knowledge_base(kb):
    reports = load_reports()
    known = {entry.id for entry in kb.entries}
    # Reports of an entry still missing (a wanted_entry) are kept for when it lands.
    assert len(set(reports) & known) >= 50
    assert all(0 < profile.reports and max(profile.seen.values(), default=0) <= profile.reports
               for profile in reports.values())


def test_words_tell_apart_entries_whose_reports_show_the_same_facets(kb):
    # Both families' reports say GPU memory grows; only their words differ, in words
    # no facet reads.
    whens = ("each time", "steadily", "a little every batch", "until OOM")
    labelled = [("memory.growing", f"GPU memory grows {when} since I plot matplotlib figures")
                for when in whens]
    labelled += [("memory.caching_allocator", f"GPU memory grows {when} since I register forward hooks")
                 for when in whens]
    index = FacetIndex(kb.entries, count_reports(labelled))
    by_facets, by_both = [], []
    for report in ("my GPU memory grows with every batch since I plot matplotlib figures",
                   "my GPU memory grows with every batch since I register forward hooks"):
        found, words = report_reading(report)
        by_facets.append(index.rank(found)[0].entry.id)
        by_both.append(index.rank(found, words)[0].entry.id)
    assert by_facets[0] == by_facets[1]
    assert by_both == ["memory.growing", "memory.caching_allocator"]


def test_a_word_one_report_alone_uses_weighs_nothing(kb):
    index = FacetIndex(kb.entries, count_reports([("memory.growing", "GPU memory grows zorkmid")]))
    assert "zorkmid" not in index.words.weight
    assert index.words.closeness(frozenset({"zorkmid"})) == dict.fromkeys(index.profiles, 0.0)


def test_word_counts_that_cannot_be_are_dropped(tmp_path):
    path = tmp_path / "reports.json"
    path.write_text(json.dumps({"entries": {"memory.growing": {
        "reports": 3, "seen": {}, "words": {"leak": 2, "grows": 7, "epoch": -1, "oom": "x"}}}}),
        encoding="utf-8")
    assert dict(load_reports(path)["memory.growing"].words) == {"leak": 2}
