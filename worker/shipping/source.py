"""A shipped log generation as a reader source: ``scan_log``, ``read_range`` and
``build_index`` read it exactly as they read the file it was shipped from (its complete part).
"""

from __future__ import annotations

from dsh_memory_worker.memory.dsh.source import SegmentSource
from dsh_memory_worker.worker.shipping.store import SegmentStore, ShippedLog


def shipped_source(store: SegmentStore, log: ShippedLog) -> SegmentSource:
    """The bytes of ``log`` as shipped when it was read (``log.shipped_end``). Each read of the
    reader is one query returning at most the rest of one segment: reading the header costs
    the header segment, not a megabyte."""
    where = f"shipped log {log.session_id} generation {log.generation} ({log.log_name})"

    def fetch(offset: int, size: int) -> bytes:
        return store.read(log.session_id, log.generation, offset, size)

    return SegmentSource(log.log_name, log.shipped_end, fetch, where)


def latest_source(store: SegmentStore, session_id: str) -> SegmentSource | None:
    """The newest shipped generation of ``session_id`` as a source, or None if none is."""
    log = store.latest(session_id)
    return None if log is None else shipped_source(store, log)
