"""Readings of a report's words: what its numbers, moments and comparisons say.

Each module here reads one kind of fact from a pasted report, in any language
(when a NaN came, which card holds the memory, a batch changed under a kept
learning rate, the same input giving other outputs, a channel count that is the
batch size) and words it as a phrase the knowledge base's symptom regexes
know. ``symptoms.readings`` and ``match.diagnose`` gather them; none of them
decides an entry on its own.
"""
