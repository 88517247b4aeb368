"""Recording what the user's failing run did, op by op, on a replay of it.

``Recorder`` sees every torch op the user's code executes (a
``TorchFunctionMode``), the module each runs in (global module hooks) and
each optimizer step (global step hooks), with the user's line that called
it. ``replay`` decides what to replay (the whole script, the failing step,
a harness's step) and caches the recording on the context, so the probes of
one investigation share a single replay. The recording goes out as JSON; the
torch-free ``torchdoctor.provenance`` reads it.
"""
