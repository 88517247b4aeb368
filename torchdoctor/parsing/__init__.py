"""The pieces of the traceback parser; ``torchdoctor.parse`` is the public entry point.

Split by job: ``lines`` cleans what people paste, ``frames`` reads one frame line and
decides whose code it is, ``scanner`` finds tracebacks and their chains, ``extras``
collects what surrounds them (C++ frames, CUDA asserts, ranks, warnings), ``phase``
and ``signature`` derive judgements from the result, ``model`` holds the dataclasses.
"""
