"""Crash points for the fault tests, loaded by a ``memory-worker`` subprocess whose PYTHONPATH
starts with this directory (never installed, never imported by the worker itself).

``MEMORY_WORKER_TEST_CRASH_AT=N``: the process dies (``os._exit(137)``, as ``kill -9`` would
leave it: no ``finally``, no lease released, nothing flushed) just before its N-th write to a
hypatia-lite store (``knowledge_create`` / ``_update`` / ``_delete``, ``statement_create`` /
``_delete``, ``write_batch``). ``MEMORY_WORKER_TEST_CRASH_COUNT=FILE``: every write appends its
method name to FILE (a run without a crash point says how many writes there are to crash at).
"""

from __future__ import annotations

import functools
import os
from typing import Any

_AT = int(os.environ.get("MEMORY_WORKER_TEST_CRASH_AT", "0") or 0)
_COUNT = os.environ.get("MEMORY_WORKER_TEST_CRASH_COUNT", "")
_WRITES = (
    "knowledge_create",
    "knowledge_update",
    "knowledge_delete",
    "statement_create",
    "statement_delete",
    "write_batch",
)

if _AT or _COUNT:
    from hypatia_lite.store import LiteStore

    seen = [0]

    def _counted(name: str, method: Any) -> Any:
        @functools.wraps(method)
        def write(self: Any, *args: Any, **kwargs: Any) -> Any:
            seen[0] += 1
            if seen[0] == _AT:
                os._exit(137)
            if _COUNT:
                with open(_COUNT, "a") as out:
                    out.write(name + "\n")
            return method(self, *args, **kwargs)

        return write

    for _name in _WRITES:
        setattr(LiteStore, _name, _counted(_name, getattr(LiteStore, _name)))
