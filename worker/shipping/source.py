"""A shipped log generation as a reader source: ``scan_log``, ``read_range`` and
``build_index`` read it exactly as they read the file it was shipped from (its complete part).
"""

from __future__ import annotations

from memory.dsh.source import SegmentSource
from worker.shipping.store import SegmentStore, ShippedLog

_READ_AHEAD = 4 << 20


class _CachedFetch:
    """``fetch(offset, size)`` over the store, reading ahead so the reader's 1 MiB reads cost
    one query per ``_READ_AHEAD`` bytes, not one per segment piece."""

    def __init__(self, store: SegmentStore, log: ShippedLog) -> None:
        self._store = store
        self._log = log
        self._start = 0
        self._data = b""

    def __call__(self, offset: int, size: int) -> bytes:
        lo, hi = offset - self._start, offset - self._start + size
        if lo < 0 or hi > len(self._data):
            want = min(max(size, _READ_AHEAD), self._log.shipped_end - offset)
            self._data = self._store.read(self._log.session_id, self._log.generation,
                                          offset, want)
            self._start, lo, hi = offset, 0, size
        return self._data[lo:hi]


def shipped_source(store: SegmentStore, log: ShippedLog) -> SegmentSource:
    """The bytes of ``log`` as shipped when it was read (``log.shipped_end``)."""
    where = f"shipped log {log.session_id} generation {log.generation} ({log.log_name})"
    return SegmentSource(log.log_name, log.shipped_end, _CachedFetch(store, log), where)


def latest_source(store: SegmentStore, session_id: str) -> SegmentSource | None:
    """The newest shipped generation of ``session_id`` as a source, or None if none is."""
    log = store.latest(session_id)
    return None if log is None else shipped_source(store, log)
