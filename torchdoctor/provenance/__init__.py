"""Provenance: from the failing value back to the user's line that made it wrong.

Reads a recording (the JSON the patient's recorder returns: every op with
its user line, module and tensor identities, shapes, dtypes, devices and
versions) and answers two places: ``raised_at``, the line that raised, and
``fix_at``, the first line where the property that broke became wrong (the
flatten that merged the batch, the ``.double()`` or numpy source, the
in-place write onto a saved activation, the optimizer step between two
backwards). Torch-free: the doctor can run it on a recording it was sent,
and the patient runs it on its own.
"""

from torchdoctor.provenance.locate import trace_back

__all__ = ["trace_back"]
