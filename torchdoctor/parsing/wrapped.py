"""An exception whose message is another exception's line: the carried one is the error.

torch.compile re-raises what its backend raised as ``BackendCompilerFailed: backend='inductor'
raised:`` with the backend's ``InvalidCxxCompiler: …`` line under it, and torch >= 2.6 wraps
Inductor's own failures as ``InductorError: CppCompileError: …``. When the chain holds no
earlier link for the carried exception (a paste of the last lines only), that line becomes
its own link and the root, as a DataLoader worker's error does: what it says decides, and
the wrapper stays in the chain for the entries that know the wrapper itself.
"""

from __future__ import annotations

import re

from torchdoctor.parsing.model import ChainLink
from torchdoctor.parsing.scanner import short_type

CARRIED = {
    "BackendCompilerFailed": re.compile(
        r"backend='[^'\n]{1,200}' raised:\s*\n(?P<type>[A-Za-z_][\w.]{0,200}): ?(?P<message>.*)",
        re.DOTALL),
    "InductorError": re.compile(r"(?P<type>[A-Za-z_][\w.]{0,200}): ?(?P<message>.*)", re.DOTALL),
}


def read_through(chain: list[ChainLink], root: int) -> int:
    """Insert the carried exception of ``chain[root]`` before it; the new root's index."""
    wrapper = chain[root]
    pattern = CARRIED.get(wrapper.type or "")
    found = pattern.match(wrapper.message.strip()) if pattern else None
    if found is None:
        return root  # the wrapper formats it "{type(e).__name__}: {e}", whatever the name
    if root > 0 and short_type(found["type"]) == chain[root - 1].type:
        return root  # its traceback is in the chain already
    message = found["message"].split("\n\n", 1)[0].strip()
    chain.insert(root, ChainLink(type=short_type(found["type"]), message=message, frames=[],
                                 relation=wrapper.relation, full_type=found["type"]))
    wrapper.relation = "cause"
    return root
