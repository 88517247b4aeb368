"""What a symptom report is about, and which entries' reports read like it.

A person who describes a run rather than pasting an error words it in endless
ways ("the loss won't budge", "stays around 0.69", "не уменьшается"), and an
entry's ``symptoms:`` phrases, however many, reach only the wordings someone
wrote down. What those reports have in common is not their words but what they
are about: which quantity (the loss, GPU memory, the speed of an epoch), how it
behaves (stuck, growing, NaN, different on each run), when (from the first step,
after a while, at each epoch's start, only in evaluation) and around what (several
GPUs, workers, half precision, a loaded checkpoint). Those are a few dozen
*facets* (``vocabulary.py``), each a broad regex read on the text and on its
English copy (``symptoms.described``), so every language the glossary reads
reaches them.

Facets cannot tell apart entries whose reports are about the same things (GPU
memory that grows in the validation loop, or once forward hooks are registered);
the words a report uses can (``words.py``).

Each entry's profile is how often its real reports show each facet and use each
word (``profiles.py``: counted from the prose reports of ``tests/corpus`` and from
the entry's own title, hypotheses and symptom phrases, so an entry no report has
reached yet still has one). ``ranking.py`` ranks entries by how well a new
report's facets fit each profile (naive Bayes) and how close its words are, which is what ``match.diagnose``
falls back to when no symptom phrase matched: a guess worded as one, below every
phrase match, instead of a dead end.
"""
