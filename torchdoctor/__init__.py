"""torchdoctor: a guided troubleshooting expert system for PyTorch.

The doctor side (this package, except ``torchdoctor.patient``) never imports
torch, so it starts fast and survives whatever the user's model does.
"""

__version__ = "0.1.0"
