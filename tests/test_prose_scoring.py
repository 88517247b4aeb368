"""How a prose match scores: read off the report, never as a share of the entry's phrases.

An entry that knows more ways people say its symptom must never rank lower for it;
each symptom regex is one claim, counted once however many of its phrasings hit; the
words a phrase names weigh by how few entries spell them. The last test holds the
whole corpus to the first rule.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from corpus_cases import load_cases

from torchdoctor.knowledge import Entry, Hypothesis, KnowledgeBase, Pattern, load_knowledge
from torchdoctor.match import diagnose, prose_score
from torchdoctor.symptoms import match_symptoms, ruled_out_spans, word_weights


def entry(id_: str, *symptoms: str) -> Entry:
    return Entry(id=id_, title=f"title of {id_}", category=id_.split(".")[0],
                 symptoms=[Pattern(regex=s, ignore_case=True) for s in symptoms],
                 hypotheses=[Hypothesis(id="h", statement=f"statement of {id_}")])


def scores(text: str, *entries: Entry) -> dict[str, float]:
    return {m.entry.id: m.score for m in diagnose(text, KnowledgeBase(list(entries))).matches}


def test_an_entry_that_knows_more_phrasings_scores_as_one_that_knows_one():
    few = entry("training.few", r"\bloss\b.{0,20}\bnan\b")
    many = entry("numerics.many", r"\bloss\b.{0,20}\bnan\b|\bnan loss\b|\bloss went nan\b"
                                  r"|\bloss is not a number\b|\bnan in the loss\b")
    got = scores("the loss is nan", few, many)
    assert got["numerics.many"] == got["training.few"]


def test_phrasings_of_one_claim_that_hit_one_sentence_are_one_piece_of_evidence():
    packed = entry("training.packed", r"\bloss\b.{0,20}\bnan\b|\bnan\b")
    found = match_symptoms("the loss is nan, and nan again", [packed])[0]
    assert found.pieces == 1


def test_a_second_claim_counts_only_when_it_names_something_the_first_did_not():
    echo = entry("training.echo", r"\bloss\b.{0,20}\bnan\b", r"\bnan\b")
    more = entry("training.more", r"\bloss\b.{0,20}\bnan\b", r"\bat step \d+\b")
    assert match_symptoms("the loss is nan", [echo])[0].pieces == 1
    assert match_symptoms("the loss is nan at step 3", [more])[0].pieces == 2
    got = scores("the loss is nan at step 3", echo, more)
    assert got["training.more"] > got["training.echo"]


def test_a_word_most_entries_spell_tells_none_of_them_apart():
    spelling = [["loss", "bcewithlogits"]] + [["loss"]] * 7
    weights = word_weights(spelling)
    assert weights["loss"] == 0.0
    assert weights["bcewithlogits"] > 0.5


def test_the_rarer_words_a_phrase_names_outrank_common_ones():
    generic = entry("training.generic", r"\bmodel\b.{0,20}\bnot\b.{0,10}\blearning\b")
    specific = entry("training.specific", r"\bp\.grad\b.{0,20}\bnone\b")
    fillers = [entry(f"training.filler{i}", r"\bmodel\b.{0,9}\bnot\b") for i in range(6)]
    got = scores("the model is not learning and p.grad is None", generic, specific, *fillers)
    assert max(got, key=got.get) == "training.specific"


@pytest.fixture(scope="module")
def shipped():
    return load_knowledge(include_user=False, use_cache=False, report=False)


def _with_a_phrasing_nobody_writes(kb: KnowledgeBase) -> KnowledgeBase:
    """Every symptom entry learns one more phrasing of its first claim, one that no
    report holds (a made-up word, so no other word's weight moves)."""
    entries = []
    for known in kb.entries:
        if known.symptoms:
            first, *rest = known.symptoms
            wider = replace(first, regex=f"{first.regex}|\\bqqzxvw\\b", _compiled=None)
            known = replace(known, symptoms=[wider, *rest])
        entries.append(known)
    return KnowledgeBase(entries)


def _scored(found) -> dict[str, float]:
    return {m.entry.id: prose_score(m) for m in found}


def test_no_entry_ranks_lower_anywhere_in_the_corpus_for_knowing_one_more_phrasing(shipped):
    wider = _with_a_phrasing_nobody_writes(shipped)
    prose = [case for case in load_cases(shipped) if case.prose_only]
    assert len(prose) > 300
    for case in prose:
        before = _scored(match_symptoms(case.paste, shipped.symptom_entries))
        after = _scored(match_symptoms(case.paste, wider.symptom_entries))
        assert after == before, case.id


KB = load_knowledge(include_user=False, use_cache=False, report=False)

def test_a_lever_already_pulled_with_the_symptom_unchanged_is_not_evidence():
    text = ("Two runs with one seed don't match. I also set shuffle=False in the DataLoader"
            " and it still happens.")
    spans = ruled_out_spans(text)
    assert len(spans) == 1 and "shuffle=False" in text[spans[0][0]:spans[0][1]]
    diagnosis = diagnose(text, KB)
    assert "training.shuffle_off" not in [m.entry.id for m in diagnosis.matches]
    assert diagnosis.matches[0].entry.id == "other.nondeterminism"


def test_the_lever_named_without_persistence_is_still_evidence():
    text = "My DataLoader has shuffle=False and the loss jumps at the start of every epoch."
    diagnosis = diagnose(text, KB)
    assert diagnosis.matches and diagnosis.matches[0].entry.id == "training.shuffle_off"


def test_a_symptom_phrase_that_names_the_persistence_stays_evidence():
    text = "Even with the seed set, the results still differ from run to run."
    diagnosis = diagnose(text, KB)
    assert diagnosis.matches and diagnosis.matches[0].entry.id == "other.nondeterminism"
