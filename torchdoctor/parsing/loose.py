"""Find an error outside any traceback: how people write one when they do not paste it whole.

The error line may come before the traceback (pasted first, the traceback cut off
below), be quoted in a sentence ("I got "element 0 of tensors does not require
grad" when…"), be written as the exception's repr (``ValueError(Attempting to
unscale FP16 gradients.)``), sit after other words on a line (``the step failed with
RuntimeError: …``), or be a bare message torch prints. These forms are tried in
that order of certainty, and inside one form the first in the paste wins, because
in a log the first failure is the cause and later ones its consequences.

Lines that explain a recompilation (``last reason: …``, a guard failure) quote
sizes and mismatches without being errors; they are read only when nothing else
is there.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from torchdoctor.linear_regex import compile_linear
from torchdoctor.parsing.scanner import (
    EXCEPTION_SUFFIXES,
    exception_type_name,
    read_exception_line,
)

# Searched through whole lines of a paste, so it runs on RE2 (linear in the line).
TORCH_LIKE_MESSAGE = compile_linear(
    r"shapes cannot be multiplied|must match the size of tensor|out of bounds|out of range"
    r"|Expected .+ but (?:got|found)|does not require grad|modified by an inplace operation"
    r"|cannot be converted to Scalar|is ambiguous|size mismatch|Error\(s\) in loading"
    r"|device-side assert|CUDA error|out of memory|not implemented for|should be the same"
    r"|Can't pickle|cannot re-initialize|view size is not compatible|Trying to backward"
    r"|Missing key\(s\)|Unexpected key\(s\)|Assertion .+ failed|has no attribute"
    r"|must be a|expected scalar type|Given groups=|Expected input batch_size"
    r"|hit config\.\w+_limit|Attempting to unscale"
    # TorchScript's type checks, quoted without their RuntimeError
    r"|Expected a (?:default )?value of type"
    # detect_anomaly naming the backward function that produced NaN, quoted as a title
    r"|returned nan values in its \d+(?:st|nd|rd|th) output"
    # the CPU allocator's failure, often quoted without the size it was asked for
    r"|DefaultCPUAllocator: (?:can't allocate memory|not enough memory)"
    # wordings of torch before 1.8, and of today's accelerator and OOM messages
    r"|THCudaCheck FAIL|cuda runtime error|invalid device ordinal|CUDNN_STATUS_\w+"
    r"|invalid argument \d+:|Expected object of (?:scalar|device|backend) type"
    r"|not supported on CUDAType|Cannot access accelerator device|has a total capacity"
    r"|The offending index is|is invalid for input with"
    # today's shape wordings that name no exception type when quoted alone
    r"|doesn't match the broadcast shape|Sizes of tensors must match|expects each tensor to be equal size"
    # a launcher's word on a rank that died (Lightning: "Child process with PID N
    # terminated with code -9"), which a paste may hold without any traceback
    r"|terminated with code -?\d"
    # NCCL's own log lines: with no Python exception pasted, its warning is the error
    r"|NCCL WARN ",
    ignore_case=True,
)
# What NCCL warns about on every machine without InfiniBand or a network plugin, failing
# or not: no error of the run.
ROUTINE_NCCL_WARNINGS = ("libibverbs", "NET/Plugin", "NET/IB")
MESSAGE_KEYWORDS = ("expected", "must", "out of", "mismatch", "cannot", "can't", "error",
                    "not ", "ambiguous", "assert", "should", "has no", "trying", "missing",
                    "unexpected", "given groups", "hit config", "attempting", "fail", "invalid",
                    "cudnn_status", "capacity", "offending", "nccl warn", "terminated",
                    "broadcast shape", "equal size", "returned nan")
# Old torch printed a failed CUDA call as "THCudaCheck FAIL file=… line=58 error=2 : out of
# memory" and raised "cuda runtime error (2) : out of memory at …:58" for it; a paste often
# keeps only the first.
THC_FAIL = compile_linear(r"THCudaCheck FAIL file=(?P<file>\S{1,500}) line=(?P<line>\d{1,9}) "
                          r"error=(?P<code>\d{1,5}) ?: ?(?P<text>.{1,500})")
# "the step failed with RuntimeError: …": an exception line after other words (retyped
# by hand, sometimes without the space after the colon: "(ValueError:Attempting to …)").
EMBEDDED_EXCEPTION = compile_linear(
    r"(?:^|\W)(?P<type>[A-Za-z_][\w.]{0,100}(?:Error|Exception)): ?(?P<message>[^\s/\\].*)")
# ValueError(Attempting to …) / ValueError('…'): the text is read up to the matching parenthesis.
REPR_OPENING = compile_linear(r"(?:^|[^\w.])(?P<type>[A-Za-z_][\w.]{0,100}(?:"
                              + "|".join(s for s in EXCEPTION_SUFFIXES if s != "Warning")
                              + r"))\(")
# The quotes people set a message in, in the usual languages: English (curly ones are
# straightened by ``markup``), the CJK corner brackets, guillemets (French, Russian);
# each opening with its close.
CLOSING_QUOTE = {'"': '"', "“": "”", "`": "`", "'": "'", "「": "」", "『": "』", "«": "»",
                 "‹": "›"}
# Where the same mark opens and closes, torch's own message may hold that mark too
# ('"addmm_impl_cpu_" not implemented for 'Half''), so the close is found by pairing.
SYMMETRIC_QUOTES = frozenset("\"'`")
# Quotes that only ever close a quotation when a message ends with them.
CLOSING_ONLY = frozenset("”»」』›")
QUOTED_SPAN = 8
QUOTED_LONGEST = 1000
MESSAGE_LINES = 20
LABELS = frozenset({"Error", "Exception", "error"})
# VS Code's debugger: "Exception has occurred: RuntimeError" (sometimes with a note after
# it), the message on the lines below, then the frames innermost first.
IDE_EXCEPTION = re.compile(r"Exception has occurred: (?P<type>[A-Za-z_][\w.]{0,100})\b")
RECOMPILE_REASON = ("last reason:", "triggered by the following guard failure",
                    "Recompiling function", "- 0/", "guard failed:", "To log all recompilation")
# Dynamo's log lines carry the frame and compile they speak of: "[1/8]    last reason: …".
COMPILE_ID = re.compile(r"\[\d{1,9}/\d{1,9}(?:_\d{1,9})?\]\s*")


def _recompile_reason(stripped: str) -> bool:
    found = COMPILE_ID.match(stripped)
    return (stripped[found.end():] if found else stripped).startswith(RECOMPILE_REASON)


FULL_WIDTH = {0xFF08: "(", 0xFF09: ")", 0x3002: ".", 0xFF0C: ", "}
FULL_WIDTH_COLON = re.compile("\uff1a ?")
# A built-in exception's name retyped as two words before its colon ("Runtime Error:",
# "Index Error :").
SPLIT_TYPE = re.compile(
    r"(?<![\w.])(?P<name>Runtime|Value|Type|Index|Attribute|Key|Assertion|Import|NotImplemented"
    r"|ModuleNotFound|FileNotFound|Memory|Name|OS|Unpickling|ZeroDivision|Overflow|EOF|Recursion)"
    r" Error(?=[ \t]{0,4}:)")
SPACED_COLON = re.compile(r"(?<![\w.])(?P<type>[A-Za-z_][\w.]{0,100}(?:Error|Exception))[ \t]{1,4}:[ \t]?")
# Prose in another script after the message on the same line ("…instead，这是为什么？"):
# torch's messages are ASCII apart from paths, so the message ends where CJK or
# full-width text begins.
OTHER_SCRIPT = compile_linear(r"[\x{3000}-\x{9FFF}\x{AC00}-\x{D7AF}\x{FF00}-\x{FFEF}]")


# "[WinError 1455] 页面文件太小，无法完成操作。 Error loading …": Windows words its system
# errors in the user's language, up to the end of their first sentence; the code is stable.
SYSTEM_ERROR_TEXT = re.compile(r"\[(?:WinError|Errno) -?\d{1,10}\][^\n]{0,300}?(?:。|\.(?=\s|$)|$)")


def _own_words(message: str, start: int = 0) -> str:
    """The run of ``message`` around ``start`` that holds no other-script text, keeping an
    operating system's error text in the user's language."""
    if message.isascii():
        return message
    system = SYSTEM_ERROR_TEXT.match(message, start)
    if system is not None:
        rest = message[system.end():]
        rest = _own_words(rest) if rest.strip() and not _other_script(rest.strip()[0]) else ""
        return f"{system.group(0)} {rest.strip()}".strip()
    found = OTHER_SCRIPT.search(message, start)
    end = found.start() if found else len(message)
    begin = start
    while begin > 0 and not _other_script(message[begin - 1]):
        begin -= 1
    kept = message[begin:end].strip()
    # the comma that led into the other-script words ("'mat2'，换了…") is theirs
    return (kept.rstrip(",;").rstrip() if found else kept) or message


def _other_script(char: str) -> bool:
    code = ord(char)
    return 0x3000 <= code <= 0x9FFF or 0xAC00 <= code <= 0xD7AF or 0xFF00 <= code <= 0xFFEF


@dataclass
class LooseError:
    """An error read from one line: its type when the line names one, and its message."""

    full_type: str | None
    message: str
    index: int  # the line it was read from
    source: str  # which form: final_line, embedded, repr, quoted, message_only, error_record


# A C++ backtrace's frame line ("frame #3: c10d::...::checkTimeout(...)").
CPP_FRAME = compile_linear(r"\s*frame #\d+: ")
# A process started before its parent finished bootstrapping (spawn, with no
# ``if __name__ == "__main__":`` guard) re-runs the parent's module-level code, and
# whatever that code raises in the child - a CUDA OOM, a file in use - is printed
# around this error, before it as often as after: it is their cause wherever it is.
EXPLAINS_THE_REST = compile_linear(r"An attempt has been made to start a new process before")


def find_loose_error(texts: list[str], indices: Iterable[int],
                     error_records: list[bool] | None = None) -> LooseError | None:
    """The most certain error among the lines at ``indices``; the first one within a form,
    unless one explains the rest (``EXPLAINS_THE_REST``).

    ``error_records`` marks lines a logger wrote at an error level; when no line reads
    as an error by its words, the first of those is the error.
    """
    # a C++ backtrace's frames name functions (checkTimeout, ...) that read like exceptions
    chosen = [index for index in indices if not CPP_FRAME.match(texts[index])]
    among = set(chosen)
    # the message may open on the line after its "RuntimeError:"
    cause = [j for i in chosen if EXPLAINS_THE_REST.search(texts[i]) for j in (i - 1, i)
             if j in among]
    chosen = cause + [index for index in chosen if index not in cause]
    texts = [_ascii_punctuation(text) for text in texts] if any(
        not texts[index].isascii() or " :" in texts[index] or " Error" in texts[index]
        for index in chosen) else texts
    for index in chosen:
        found = _ide_exception(texts, index)
        if found is not None:
            return found
    readers: list[Callable[[str, int], LooseError | None]] = [
        _exception_line, _embedded_or_repr, _quoted, _message_only]
    for reader in readers:
        for index in chosen:
            found = reader(texts[index], index)
            if found is not None:
                return found
    for index in chosen:
        if error_records and error_records[index] and any(c.isalpha() for c in texts[index]):
            return LooseError(None, texts[index].strip(), index, "error_record")
    for index in chosen:
        if _recompile_reason(texts[index].strip()):
            found = _message_only(texts[index], index, reasons=True)
            if found is not None:
                return found
    return None


def _typed_colon(found: re.Match[str]) -> str:
    """``Type :`` as ``Type: ``, unless it is C++ declaring the name (``class
    RuntimeError : public std::exception``)."""
    declared = found.string[max(0, found.start() - 8):found.start()].rstrip().endswith(
        ("class", "struct"))
    return found.group(0) if declared else found["type"] + ": "


def _ascii_punctuation(text: str) -> str:
    """A message retyped with a Chinese or Japanese input method has full-width colons,
    commas, parentheses and full stops ("RuntimeError： … device_count（） is 1", "torch。cuda");
    one retyped in French style puts a space before the colon ("RuntimeError :Expected
    …"), and a built-in type is sometimes retyped as two words ("Runtime Error:"); torch
    printed ``Type: message``."""
    if " Error" in text:
        text = SPLIT_TYPE.sub(r"\g<name>Error", text)
    if " :" in text:
        text = SPACED_COLON.sub(_typed_colon, text)
    return text if text.isascii() else FULL_WIDTH_COLON.sub(": ", text).translate(FULL_WIDTH)


def _ide_exception(texts: list[str], index: int) -> LooseError | None:
    """The message under an IDE's "Exception has occurred: Type" line, up to a blank line
    or the first frame."""
    stripped = texts[index].strip()
    if not stripped.startswith("Exception has occurred"):
        return None
    found = IDE_EXCEPTION.match(stripped)
    if found is None:
        return None
    lines = []
    for line in texts[index + 1:index + 1 + MESSAGE_LINES]:
        if not line.strip() or line.strip().startswith(("File ", "Traceback ")):
            break
        lines.append(line.strip())
    if not lines:
        return None
    return LooseError(found["type"], _own_words("\n".join(lines)), index, "ide")


def _exception_line(raw: str, index: int) -> LooseError | None:
    exception = read_exception_line(raw.strip(), strict=True)
    if not exception or exception[0].endswith("Warning"):
        return None
    full_type, message = _unlabelled(*exception)
    if full_type in LABELS and not any(c.isalnum() for c in message):
        return None  # "Error:-" introducing the real error on the next line
    return LooseError(full_type, _own_words(message), index, "final_line")


def _unlabelled(full_type: str, message: str) -> tuple[str, str]:
    """``Error: RuntimeError: …`` is a label before the real exception line."""
    if full_type in LABELS:
        inner = read_exception_line(message.strip(), strict=True)
        if inner:
            return inner
    return full_type, message


def _embedded_or_repr(raw: str, index: int) -> LooseError | None:
    if "Error:" in raw or "Exception:" in raw:
        embedded = EMBEDDED_EXCEPTION.search(raw)
        # exception_type_name: not a CUDA library's status code (ncclSystemError)
        if (embedded and not embedded["type"].endswith("Warning")
                and exception_type_name(embedded["type"])):
            message = embedded["message"]
            opening = embedded.group(0)[0]
            close = _closing(message, opening) if opening in CLOSING_QUOTE else -1
            if close > 0:
                # 'I get "ValueError: …" at this line': the quote ends the message.
                message = message[:close]
            return LooseError(embedded["type"],
                              _without_closing_quote(_own_words(_unwrapped(message))),
                              index, "embedded")
    if "(" in raw:
        opening = REPR_OPENING.search(raw)
        # Code that raises the exception (a frame's source line) is not the error itself.
        if opening and not raw[:opening.start(1)].rstrip().endswith(("raise", "except")):
            text = _balanced(raw, opening.end())
            if text is not None and text.strip():
                return LooseError(opening["type"], _unquoted(text.strip()), index, "repr")
    return None


def _unwrapped(message: str) -> str:
    """A message the person set in quotes after its type (``raises RuntimeError: "mat1
    and mat2 must have the same dtype". The …``): the words inside. Torch opens a message
    with a quote only to name something ("'Tensor' object has no attribute 'x'"), so a
    single quote counts only when a stop and nothing, or a new sentence, follows it."""
    opening = message[:1]
    if opening not in CLOSING_QUOTE:
        return message
    end = message.find(CLOSING_QUOTE[opening], 1)
    if end < 8:
        return message
    after = message[end + 1:]
    if not re.search(r"\s", message[1:end]) and re.match(r" \w", after):
        return message  # torch naming an op before its words: '"addmm_impl_cpu_" not implemented'
    if opening != "'" or not after.strip(" .,;:!?") or re.match(r"[.;!?]\s", after):
        return message[1:end]
    return message


def _without_closing_quote(message: str) -> str:
    """The message without a quote mark that closes a quotation opened before its type.

    A quote is the person's only when it is left unpaired: torch's own messages quote
    names in pairs ("… but found 'cuda'", "no attribute 'training'"), and those stay.
    """
    message = message.rstrip()
    while message and message[-1] in "`\"'" + "".join(CLOSING_ONLY) and (
            message[-1] in CLOSING_ONLY or message.count(message[-1]) % 2 == 1):
        message = message[:-1].rstrip()
    return message


def _balanced(raw: str, start: int) -> str | None:
    """The text from ``start`` to the parenthesis that closes the one just before it."""
    depth = 1
    quote = None
    for position in range(start, len(raw)):
        char = raw[position]
        if quote:
            quote = None if char == quote else quote
        elif char in "'\"" and position == start:
            quote = char
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth == 0:
                return raw[start:position]
    return None


def _unquoted(text: str) -> str:
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    return text


def _closing(text: str, opening: str, start: int = 0, end: int | None = None) -> int:
    """Where the quote opened by ``opening`` just before ``text[start]`` closes, or -1
    when it does not close before ``end``.

    A mark that opens and closes alike opens an inner quotation where a word follows it
    after a space, and closes one where no word follows it: torch's own quotes inside the
    message ('"addmm_impl_cpu_" not implemented for 'Half'') come in pairs, the person's
    close is the one that closes when every mark before it is paired; an apostrophe
    inside a word ("can't") is neither.
    """
    close = CLOSING_QUOTE[opening]
    end = len(text) if end is None else min(end, len(text))
    if opening not in SYMMETRIC_QUOTES:
        return text.find(close, start, end)
    seen = 0
    position = text.find(close, start, end)
    while position >= 0:
        word_after = position + 1 < len(text) and text[position + 1].isalnum()
        if word_after:
            seen += position == start or text[position - 1].isspace()
        elif seen % 2 == 0:
            return position
        else:
            seen += 1
        position = text.find(close, position + 1, end)
    return -1


def _quoted_spans(raw: str) -> Iterable[str]:
    """Each stretch of the line set in quotes, in order; a quote that does not close
    within ``QUOTED_LONGEST`` characters is passed over with them, so a line of many
    opening marks is read once."""
    position = 0
    while position < len(raw):
        opening = raw[position]
        opens = opening in CLOSING_QUOTE and opening != "'" and (
            opening not in SYMMETRIC_QUOTES or position == 0 or not raw[position - 1].isalnum())
        if not opens:
            position += 1
            continue
        window = position + 1 + QUOTED_LONGEST
        close = _closing(raw, opening, position + 1, window)
        if close < 0:
            position = window
            continue
        if close - position - 1 >= QUOTED_SPAN:
            yield raw[position + 1:close]
        position = close + 1


def _quoted(raw: str, index: int) -> LooseError | None:
    if not any(opening in raw for opening in CLOSING_QUOTE if opening != "'"):
        return None
    for span in _quoted_spans(raw):
        span = span.strip()
        exception = read_exception_line(span, strict=True)
        if exception and not exception[0].endswith("Warning"):
            return LooseError(*_unlabelled(*exception), index, "quoted")
        if TORCH_LIKE_MESSAGE.search(span):
            return LooseError(None, span, index, "quoted")
    return None


def _message_only(raw: str, index: int, reasons: bool = False) -> LooseError | None:
    stripped = raw.strip()
    if not reasons and _recompile_reason(stripped):
        return None
    lowered = stripped.lower()
    if not any(keyword in lowered for keyword in MESSAGE_KEYWORDS):
        return None
    found = TORCH_LIKE_MESSAGE.search(stripped) if "Warning: " not in stripped else None
    if found is None:
        return None
    check = THC_FAIL.search(stripped) if "THCudaCheck FAIL" in stripped else None
    if check is not None:
        # The error torch raised with it, in the wording its patterns know.
        return LooseError(None, f"cuda runtime error ({check['code']}) : {check['text'].strip()}"
                                f" at {check['file']}:{check['line']}", index, "message_only")
    if found.group(0).upper() == "NCCL WARN ":
        warning = stripped[found.start():]
        if any(routine in warning for routine in ROUTINE_NCCL_WARNINGS):
            return None
        # "host:pid:tid [rank] misc/shmutils.cc:103 NCCL WARN …": the warning is the message.
        return LooseError(None, _own_words(warning), index, "message_only")
    return LooseError(None, _own_words(stripped, found.start()), index, "message_only")
