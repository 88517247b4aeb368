"""A report's facets and words, read the one way profiles are counted and reports are ranked."""

from __future__ import annotations

from torchdoctor import symptoms
from torchdoctor.facets.vocabulary import facets_of
from torchdoctor.facets.words import report_words


def symptom_text(text: str) -> str:
    """A description with its English copy and the readings of its numbers
    (``symptoms.described``), without the levers the person already pulled and saw
    fail ("I also set shuffle=False and it still happens" tells of the lever, not of
    the symptom, as for the symptom phrases: ``symptoms.ruled_out_spans``)."""
    described = symptoms.described(text)
    for start, end in symptoms.ruled_out_spans(described):
        described = described[:start] + " " * (end - start) + described[end:]
    return described


def report_facets(text: str) -> frozenset[str]:
    """The facets of a description (``vocabulary.facets_of``)."""
    return facets_of(symptom_text(text))


def report_reading(text: str) -> tuple[frozenset[str], frozenset[str]]:
    """The facets and the words of a description, read once."""
    read = symptom_text(text)
    return facets_of(read), report_words(read)
