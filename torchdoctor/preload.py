"""The doctor's own preparation, done while the patient imports torch and runs the script.

Reading and indexing the knowledge base and importing the matcher take a few
hundred milliseconds. Done after the script failed, they would stand between
the crash and its diagnosis; done in a thread while the patient starts, they
cost the person nothing, since the doctor's main thread only waits on the
patient's pipe meanwhile (and releases the interpreter while it waits).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import Any


class KnowledgeAhead:
    """The knowledge base, loaded and indexed in a thread from construction on."""

    def __init__(self, kb_dirs: Iterable[str] = ()) -> None:
        self._dirs = tuple(kb_dirs)
        self._kb: Any = None
        self._failure: BaseException | None = None
        # Not a daemon: a run that ends first still lets it finish writing the cache.
        self._thread = threading.Thread(target=self._load, name="knowledge-ahead")
        self._thread.start()

    def _load(self) -> None:
        try:
            from torchdoctor.knowledge import load_knowledge
            from torchdoctor.match import index_for
            from torchdoctor.parse import parse_traceback  # noqa: F401 - imported ahead

            self._kb = load_knowledge(self._dirs)
            index_for(self._kb)
        except BaseException as failure:  # noqa: BLE001 - raised again in result()
            self._failure = failure

    def result(self) -> Any:
        """The knowledge base; raises what loading it raised (``KnowledgeError``)."""
        self._thread.join()
        if self._failure is not None:
            raise self._failure
        return self._kb
