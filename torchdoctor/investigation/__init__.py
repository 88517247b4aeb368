"""The investigation engine: reproduce, test a hypothesis, judge, verify.

One engine for every front end. ``torchdoctor run`` and ``check``, the
app and the demo all drive these modules and only present what they return,
so a verdict means the same wherever it is read:

* ``sameness``: whether two failures are the same failure (reproduce, verify).
* ``probing``: running one probe, turning any patient failure into an error result.
* ``verdicts``: when a probe result confirms, rejects or says nothing.
* ``findings``: a judged result with its evidence and the sites ``raised_at`` / ``fix_at``.
* ``hypotheses``: testing a diagnosis' hypotheses against the failing run.
* ``checkup``: the silent-failure checks of a harness, judged the same way.
* ``walk``: the five phases' steps recorded in a Session (the app's and the demo's).
"""
