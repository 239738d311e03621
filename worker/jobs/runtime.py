"""What a job runs with: settings, the state database, the stores per shelf, a clock."""

from __future__ import annotations

import contextlib
import datetime as dt
import gc
import threading
import time
import zoneinfo
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import tzinfo
from typing import TYPE_CHECKING

from dsh_memory_worker.memory.dsh.frames import set_max_frame_bytes
from dsh_memory_worker.memory.redaction import set_extra_redactions
from dsh_memory_worker.memory.store.breaker import Breaker
from dsh_memory_worker.worker.jobs.handoff import LogHandOff
from dsh_memory_worker.worker.settings import Settings
from dsh_memory_worker.worker.state.database import StateDB
from dsh_memory_worker.worker.state.owners import owner_id

if TYPE_CHECKING:  # start-up time: the store's client and log shipping load when first used
    from dsh_memory_worker.memory.store.base import MemoryStore
    from dsh_memory_worker.worker.shipping.store import SegmentStore


@dataclass(frozen=True, slots=True)
class ConsolidationOwed:
    """The seam for the consolidation issue: an idle-closed session owes a consolidation of
    ``[from_seq, to_seq)`` with its thresholds waived."""

    session_id: str
    shelf: str
    project: str
    from_seq: int
    to_seq: int
    thresholds_waived: bool = True


ConsolidationHook = Callable[[ConsolidationOwed], None]
#: Sends a job hint ``(job, session id, shelf)`` to whatever runs jobs (runner or Celery).
Enqueue = Callable[[str, str, str], None]


@dataclass
class Runtime:
    """Per-process dependencies of the jobs. ``force_idle`` treats every session as idle
    (``run --once``: flush every tail)."""

    settings: Settings
    state: StateDB
    owner: str
    force_idle: bool = False
    consolidation_hook: ConsolidationHook | None = None
    #: Where jobs owe follow-up jobs (``consolidate`` → ``cascade``); ``None`` = run them inline.
    enqueue: Enqueue | None = None
    store_factory: Callable[[str], MemoryStore] | None = None
    #: A span longer than this is written in slices (bounded memory on huge logs).
    max_span_events: int = 50_000
    #: The last whole-log decode, handed from the watcher's scan to the jobs and from
    #: ``log_span`` to ``session_node`` (:class:`~worker.jobs.handoff.LogHandOff`).
    hand_off: LogHandOff = field(default_factory=LogHandOff)
    _stores: dict[str, MemoryStore] = field(default_factory=dict)
    #: One per shelf, kept when a store handle is dropped and reopened (memory.store.breaker).
    _breakers: dict[str, Breaker] = field(default_factory=dict)
    _segments: SegmentStore | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def store(self, shelf: str) -> MemoryStore:
        """The store for ``shelf``, opened once per process."""
        with self._lock:
            found = self._stores.get(shelf)
            if found is None:
                factory = self.store_factory or self._open_store
                found = self._stores[shelf] = factory(shelf)
            return found

    def breaker(self, shelf: str) -> Breaker:
        """The breaker of ``shelf``'s store: open while the store is treated as down."""
        found = self._breakers.get(shelf)
        if found is None:  # setdefault: atomic, and callable under ``_lock`` (store → open)
            s = self.settings
            found = self._breakers.setdefault(
                shelf,
                Breaker(
                    s.store_down_after_timeouts,
                    s.store_down_retry_s,
                    window_s=s.store_down_window_s,
                ),
            )
        return found

    def store_is_down(self, shelf: str) -> bool:
        """True while ``shelf``'s store is treated as down (its breaker is open)."""
        found = self._breakers.get(shelf)
        return found is not None and found.is_open

    def _open_store(self, shelf: str) -> MemoryStore:
        from dsh_memory_worker.memory.store.factory import open_store
        from dsh_memory_worker.worker.store_config import store_config

        return open_store(store_config(self.settings, shelf, self.breaker(shelf)))

    @property
    def segments(self) -> SegmentStore | None:
        """With log shipping (``settings.shipping``): the segment store jobs read logs from
        (:func:`worker.jobs.logread.log_source`); ``None`` in embedded mode (files)."""
        if not self.settings.shipping:
            return None
        if self._segments is None:
            from dsh_memory_worker.worker.shipping.sql import SqlSegmentStore

            self._segments = SqlSegmentStore(self.state)
        return self._segments

    def drop_store(self, shelf: str) -> None:
        """Forget a store handle (after a fatal error, so the next job reopens it)."""
        with self._lock:
            store = self._stores.pop(shelf, None)
        if store is not None:
            with contextlib.suppress(Exception):  # a broken handle must not mask the error
                store.close()

    @staticmethod
    def now_ms() -> int:
        return int(time.time() * 1000)

    def timezone(self) -> tzinfo | None:
        """The zone of the ``timezone`` setting (``None``: dates stay in UTC)."""
        name = self.settings.timezone
        return zoneinfo.ZoneInfo(name) if name else None

    @staticmethod
    def now() -> dt.datetime:
        # From ``time.time`` like ``now_ms``: one clock, which a test may move forward.
        return dt.datetime.fromtimestamp(time.time(), dt.UTC)

    def close(self) -> None:
        with self._lock:
            stores = list(self._stores.values())
            self._stores.clear()
        for store in stores:
            with contextlib.suppress(Exception):
                store.close()
        self.state.dispose()


def owe_consolidation(runtime: Runtime, enqueue: Enqueue) -> None:
    """Attach ``enqueue`` as the runtime's job queue: an owed consolidation (a logged turn, an
    idle-close) becomes a ``consolidate`` hint, and consolidation can owe a ``cascade``."""
    runtime.enqueue = enqueue
    runtime.consolidation_hook = lambda owed: enqueue("consolidate", owed.session_id, owed.shelf)


def default_owner(kind: str) -> str:
    """A lease owner id unique to this process: ``<kind>:<host>:<pid>:<random>`` (see
    :mod:`worker.state.owners`: a lease of a gone process of this host is taken over at once)."""
    return owner_id(kind)


def build_runtime(
    settings: Settings,
    *,
    owner: str | None = None,
    force_idle: bool = False,
    migrate: bool = True,
    consolidation_hook: ConsolidationHook | None = None,
    enqueue: Enqueue | None = None,
) -> Runtime:
    """Open the state database (migrated to head unless ``migrate`` is False) and wrap it; the
    operator's extra redaction patterns apply to everything rendered from here on."""
    set_extra_redactions(settings.redact_extra_patterns)
    set_max_frame_bytes(settings.log_max_frame_bytes)  # for every log this process reads
    state = StateDB.open(
        settings.effective_state_url, migrate=migrate, migrations_dir=settings.migrations_dir
    )
    return Runtime(
        settings=settings,
        state=state,
        owner=owner or default_owner("worker"),
        force_idle=force_idle,
        consolidation_hook=consolidation_hook,
        enqueue=enqueue,
    )


def ms_of(moment: dt.datetime | None) -> int | None:
    return None if moment is None else int(moment.timestamp() * 1000)


_frozen_depth = 0
_frozen_lock = threading.Lock()


@contextlib.contextmanager
def long_lived_frozen() -> Iterator[None]:
    """Bulk work (a scan, a run of jobs) with the objects alive on entry moved out of the
    garbage collector's reach (``gc.freeze``) and put back on exit (``gc.unfreeze``).

    Everything alive when bulk work starts (imported modules, the runtime, its engines and
    stores) outlives it, yet every full collection would walk it again: about 200 000 objects
    in a worker process. Nested uses freeze once; objects that became garbage before entry are
    collected normally after exit, so nothing leaks.
    """
    global _frozen_depth
    with _frozen_lock:
        _frozen_depth += 1
        if _frozen_depth == 1:
            gc.freeze()
    try:
        yield
    finally:
        with _frozen_lock:
            _frozen_depth -= 1
            if _frozen_depth == 0:
                gc.unfreeze()
