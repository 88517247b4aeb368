"""The patient: the only part of torchdoctor that imports torch.

It runs in its own process (``python -m torchdoctor.patient``) so that a
device-side assert, a segfault or a hang in the user's code cannot take the
doctor down, and so that reruns can start from a fresh CUDA context.
"""
