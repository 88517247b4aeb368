"""Take secrets and the person out of what a report exports.

A report is meant to be pasted into a public issue, and an error message or
a command line can carry a token (``hf_…``, ``ghp_…``, ``sk-…``), a cloud key,
an email address, a home directory, a user or a host name. One ``Redactor``
goes over every exported file the same way (the Markdown, the JSON, the repro
and the files beside it) and counts what it took out, so the person is told
what changed. A binary file that holds one of them is withheld, since it
cannot be edited without breaking it. docs/report.md lists what is and is
not covered.

Every pattern is linear: fixed prefixes, bounded repetitions, no nested
quantifiers.
"""

from __future__ import annotations

import getpass
import os
import re
import socket
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Kind:
    """One kind of secret: how to find it and what replaces it."""

    name: str
    plural: str
    mask: str
    pattern: re.Pattern[str]
    accept: Callable[[str], bool] = lambda found: True


def _looks_random(found: str) -> bool:
    """Mixed case and digits, and not mostly words: a key, not a path or an identifier.

    ``NativeBatchNormBackward0`` or ``Projects/MyModel2/checkpoints`` are made
    of words; a random key of 32 or more characters almost never is.
    """
    body = found.rstrip("=")
    if not (re.search(r"[a-z]", body) and re.search(r"[A-Z]", body)
            and re.search(r"[0-9]", body)):
        return False
    in_words = sum(len(word) for word in re.findall(r"[A-Z]?[a-z]{3,}", body))
    return in_words < len(body) / 2


def _mixed_hex(found: str) -> bool:
    return bool(re.search(r"[0-9]", found) and re.search(r"[a-fA-F]", found))


_EDGE = r"(?<![A-Za-z0-9_])"
SECRETS = (
    Kind("private key", "private keys", "<private-key>", re.compile(
        r"-----BEGIN [A-Z ]{0,40}PRIVATE KEY-----(?:[\s\S]{0,20000}?-----END [A-Z ]{0,40}"
        r"PRIVATE KEY-----|[A-Za-z0-9+/=\s]{0,20000})")),
    Kind("password in a URL", "passwords in URLs", "<user>:<password>", re.compile(
        r"(?<=://)[^/\s:@'\"`]{1,200}:[^/\s@'\"`]{1,200}(?=@)")),
    Kind("JSON web token", "JSON web tokens", "<jwt>", re.compile(
        r"(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{8,4000}\.eyJ[A-Za-z0-9_-]{8,4000}"
        r"\.[A-Za-z0-9_-]{8,4000}")),
    Kind("Hugging Face token", "Hugging Face tokens", "<hf-token>", re.compile(
        _EDGE + r"hf_[A-Za-z0-9]{30,200}")),
    Kind("GitHub token", "GitHub tokens", "<github-token>", re.compile(
        _EDGE + r"(?:gh[pousr]_[A-Za-z0-9]{30,200}|github_pat_[A-Za-z0-9_]{30,300})")),
    Kind("API key", "API keys", "<api-key>", re.compile(
        r"(?<![A-Za-z0-9_-])(?:sk-[A-Za-z0-9_-]{20,300}|[sr]k_(?:live|test)_[A-Za-z0-9]{20,300}"
        r"|AIza[0-9A-Za-z_-]{35}|xox[abprs]-[A-Za-z0-9-]{10,300})")),
    Kind("AWS access key", "AWS access keys", "<aws-access-key>", re.compile(
        r"(?<![A-Za-z0-9])(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}(?![A-Za-z0-9])")),
    Kind("email address", "email addresses", "<email>", re.compile(
        r"(?<![\w.+-])[\w.+-]{1,64}@[A-Za-z0-9-]{1,63}(?:\.[A-Za-z0-9-]{1,63}){0,8}"
        r"\.[A-Za-z]{2,24}(?![\w-])")),
    Kind("hex secret", "hex secrets", "<hex-secret>", re.compile(
        r"(?<![A-Za-z0-9])[0-9a-fA-F]{32,512}(?![A-Za-z0-9])"), _mixed_hex),
    Kind("long random secret", "long random secrets", "<secret>", re.compile(
        r"(?<![A-Za-z0-9+/_-])[A-Za-z0-9+/_-]{32,1000}={0,2}(?![A-Za-z0-9+/=_-])"),
        _looks_random),
)

_OTHER_HOMES = (
    (re.compile(r"/home/[^/\s'\"`]{1,200}"), "/home/<user>"),
    (re.compile(r"/Users/[^/\s'\"`]{1,200}"), "/Users/<user>"),
    (re.compile(r"[A-Za-z]:(?:\\\\|\\)Users(?:\\\\|\\)[^\\\s'\"`]{1,200}", re.IGNORECASE),
     r"C:\\Users\\<user>"),
)
_NOUNS = {"home directory": "home directories", "user name": "user names",
          "host name": "host names"}


class Redactor:
    """Replaces secrets, home directories, the user and the host; counts what it replaced."""

    def __init__(self, home: str | None = None, user: str | None = None,
                 host: str | None = None) -> None:
        self.home = (home if home is not None else os.path.expanduser("~")).rstrip("/\\")
        self.user = user if user is not None else _current_user()
        self.host = host if host is not None else socket.gethostname()
        self.found: dict[str, set[str]] = {}
        self.withheld: list[str] = []
        self._plural = {**_NOUNS, **{k.name: k.plural for k in SECRETS}}

    def text(self, value: str) -> str:
        for kind in SECRETS:
            value = kind.pattern.sub(lambda m, kind=kind: self._replace(kind, m), value)
        if self.home and len(self.home) > 1 and self.home in value:
            self._note("home directory", self.home)
            value = value.replace(self.home, "~")
        for pattern, mask in _OTHER_HOMES:
            value = pattern.sub(lambda m, mask=mask: self._mask("home directory", m, mask),
                                value)
        # A name is masked only as a whole word, and never a one-letter one.
        for noun, name, mask in (("host name", self.host, "<host>"),
                                 ("user name", self.user, "<user>")):
            if name and len(name) >= 2:
                value = re.sub(rf"(?<![\w-]){re.escape(name)}(?![\w-])",
                               lambda m, noun=noun, mask=mask: self._mask(noun, m, mask), value)
        return value

    def value(self, obj: Any) -> Any:
        """Every string inside dicts and lists, keys included."""
        if isinstance(obj, str):
            return self.text(obj)
        if isinstance(obj, dict):
            return {self.value(k): self.value(v) for k, v in obj.items()}
        if isinstance(obj, (list, tuple)):
            return [self.value(v) for v in obj]
        return obj

    def data(self, name: str, data: bytes) -> bytes | None:
        """A file's content redacted; None when it is binary and holds something to redact."""
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            probe = Redactor(self.home, self.user, self.host)
            if probe.text(data.decode("latin-1")) != data.decode("latin-1"):
                self.withheld.append(name)
                return None
            return data
        return self.text(text).encode("utf-8")

    def summary(self) -> str:
        """One line: how many distinct things of each kind were replaced, and what was withheld."""
        parts = [f"{len(values)} {self._plural[noun] if len(values) > 1 else noun}"
                 for noun, values in self.found.items()]
        if self.withheld:
            noun = "binary file" if len(self.withheld) == 1 else "binary files"
            parts.append(f"withheld {len(self.withheld)} {noun} that held one"
                         f" ({', '.join(self.withheld)})")
        return ", ".join(parts) if parts else "nothing to redact"

    def _replace(self, kind: Kind, match: re.Match[str]) -> str:
        if not kind.accept(match.group()):
            return match.group()
        return self._mask(kind.name, match, kind.mask)

    def _mask(self, noun: str, match: re.Match[str], mask: str) -> str:
        self._note(noun, match.group())
        return match.expand(mask) if "\\" in mask else mask

    def _note(self, noun: str, found: str) -> None:
        self.found.setdefault(noun, set()).add(found)


def _current_user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return ""
