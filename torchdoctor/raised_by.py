"""Which library raised an error, when it was not torch.

Many pastes are not torch errors at all: a dataset path that does not exist,
a tokenizer or PIL refusing a file, cv2 returning None, a module that is not
installed. No knowledge-base entry should claim those, and saying plainly
"this came from PIL, in this frame" is worth more than a far-fetched match.
The library is read from the exception's qualified type (``PIL.UnidentifiedImageError``),
the innermost frame's path (``site-packages/<lib>/…``), or the message of an
import or file error.
"""

from __future__ import annotations

import re

_TORCH = ("torch", "torchvision", "torchaudio", "torchtext", "functorch", "triton")
_BUILTIN_MODULES = ("builtins", "exceptions", "__main__")
_PACKAGE_DIR = re.compile(r"(?:site|dist)-packages[\\/]+([A-Za-z_][\w.-]*)")
_NO_MODULE = re.compile(r"No module named '?([\w.]+)'?")
_FILE_TYPES = ("FileNotFoundError", "IsADirectoryError", "NotADirectoryError")


def raised_by(error: object | None) -> dict | None:
    """``{"library", "what", "frame"}`` for an error another library (or the
    filesystem) raised; None for torch's own errors and when it cannot be told."""
    if error is None:
        return None
    kind = str(getattr(error, "type", None) or "")
    full = str(getattr(error, "full_type", None) or kind)
    message = str(getattr(error, "message", "") or "")
    frame = _innermost(error)
    missing = _NO_MODULE.search(message) if kind in ("ModuleNotFoundError", "ImportError") else None
    if missing:
        module = missing.group(1).split(".")[0]
        if module in _TORCH:
            return None
        return _found(module, f"the module '{missing.group(1)}' is not installed", frame)
    if kind in _FILE_TYPES:
        return _found("the filesystem", "a file or folder path that does not exist", frame)
    module = full.rsplit(".", 1)[0] if "." in full else ""
    library = module.split(".")[0]
    if library and library not in _TORCH + _BUILTIN_MODULES and not library.startswith("_"):
        return _found(library, f"{kind or full} from {library}", frame)
    found = _PACKAGE_DIR.search(str(getattr(frame, "file", "") or "")) if frame else None
    if found:
        package = found.group(1).split(".")[0].split("-")[0]
        if package not in _TORCH:
            return _found(package, f"{kind or 'an error'} from {package}", frame)
    return None


def _innermost(error: object) -> object | None:
    frames = getattr(error, "frames", None) or []
    return frames[-1] if frames else None


def _found(library: str, what: str, frame: object | None) -> dict:
    where = None
    if frame is not None:
        where = {"file": frame.file, "line": frame.line, "function": frame.function,
                 "code": frame.code}
    return {"library": library, "what": what, "frame": where}
