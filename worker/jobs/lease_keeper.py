"""The lease heartbeat: a job's session lease renewed on time, whatever the job is doing.

A job can spend longer than ``lease_ttl_s`` inside one store call or one batch (a CLI store that
forks a process per entry, a shelf locked by another writer), so renewing between batches is not
enough. :func:`keep` registers a job's lease with its process's heartbeat thread (one per state
database and process, started on first use), which renews every lease it keeps each third of its
time to live, independent of what the jobs do. When a renewal finds a lease gone (it expired
during a stall of the whole process, or another worker took it over), the keeper is marked lost:
the job's next :meth:`JobContext.heartbeat` raises, and the fenced watermark update refuses
anything the job would still try to advance. A renewal that fails for a transient
state-database error is retried sooner (the lease still has two thirds of its time).
:meth:`LeaseKeeper.stop` forgets the lease before it is released; a thread with nothing to keep
waits idle.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import os
import threading
import time
from collections.abc import Callable

from sqlalchemy.exc import OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeoutError
from tenacity import RetryError, Retrying, retry_if_result, stop_after_delay, wait_fixed

from dsh_memory_worker.worker.jobs.errors import TransientJobError
from dsh_memory_worker.worker.state.database import StateDB
from dsh_memory_worker.worker.state.leases import Lease

log = logging.getLogger("memory_worker")

#: A heartbeat thread with no lease to keep for this long ends.
_IDLE_EXIT_S = 30.0


class LeaseKeeper:
    """One kept lease: the current holding (renewed), and whether it was lost."""

    def __init__(self, beat: _Heartbeat, lease: Lease, ttl_s: float) -> None:
        self._beat = beat
        self._lease = lease
        self.ttl_s = ttl_s
        self.lost = threading.Event()
        self.stopped = False
        self.renewals = 0

    @property
    def lease(self) -> Lease:
        with self._beat.lock:
            return self._lease

    def renewed(self, lease: Lease) -> None:
        with self._beat.lock:
            self._lease = lease
            self.renewals += 1

    def stop(self) -> None:
        """Stop renewing (a renewal already running finishes first, then nothing more)."""
        with self._beat.lock:
            self.stopped = True


class _Heartbeat:
    """The renewal thread of one state database in one process."""

    def __init__(self, state: StateDB) -> None:
        self.state = state
        self.lock = threading.Lock()
        self._wake = threading.Condition(self.lock)
        self._due: list[tuple[float, int, LeaseKeeper]] = []
        self._order = itertools.count()
        self.ended = False
        self._thread = threading.Thread(target=self._run, daemon=True, name="lease heartbeat")
        self._thread.start()

    def keep(self, lease: Lease, ttl_s: float) -> LeaseKeeper | None:
        """Keep ``lease``; ``None`` when this thread has ended (idle)."""
        keeper = LeaseKeeper(self, lease, ttl_s)
        with self._wake:
            if self.ended:
                return None
            heapq.heappush(self._due, (time.monotonic() + ttl_s / 3, next(self._order), keeper))
            self._wake.notify()
        return keeper

    def _run(self) -> None:
        while True:
            with self._wake:
                while self._due and self._due[0][2].stopped:
                    heapq.heappop(self._due)
                if not self._due:
                    if not self._wake.wait(_IDLE_EXIT_S) and not self._due:
                        self.ended = True  # idle: the next keep() starts a new thread
                        return
                    continue
                at, _, keeper = self._due[0]
                delay = at - time.monotonic()
                if delay > 0:
                    self._wake.wait(delay)
                    continue
                heapq.heappop(self._due)
                lease = keeper._lease
            wait = self._renew(keeper, lease)
            if wait is not None:
                with self._wake:
                    if not keeper.stopped:
                        heapq.heappush(
                            self._due, (time.monotonic() + wait, next(self._order), keeper)
                        )

    def _renew(self, keeper: LeaseKeeper, lease: Lease) -> float | None:
        """Renew once; seconds until the next renewal, ``None`` when the lease is lost."""
        interval = keeper.ttl_s / 3
        try:
            with self.state.transaction() as repos:
                renewed = repos.leases.renew(lease, keeper.ttl_s)
        except (OperationalError, PoolTimeoutError) as exc:
            log.debug("lease %s not renewed (will retry): %s", lease.key, exc)
            return interval / 4
        if renewed is None:
            if not keeper.stopped:
                log.warning(
                    "lease %s was lost (expired or taken over); the job stops and is re-done",
                    lease.key,
                )
                keeper.lost.set()
            return None
        keeper.renewed(renewed)
        return interval


_beats: dict[tuple[int, int], _Heartbeat] = {}
_beats_lock = threading.Lock()


def keep(state: StateDB, lease: Lease, ttl_s: float) -> LeaseKeeper:
    """Keep ``lease`` renewed every ``ttl_s / 3`` seconds until the keeper's :meth:`stop`."""
    key = (id(state), os.getpid())  # a forked child starts its own thread
    with _beats_lock:
        beat = _beats.get(key)
        kept = beat.keep(lease, ttl_s) if beat is not None and beat.state is state else None
        if kept is None:
            beat = _beats[key] = _Heartbeat(state)
            kept = beat.keep(lease, ttl_s)
    assert kept is not None
    return kept


#: Seconds between two tries of a busy lease (:func:`wait_for_lease`).
LEASE_POLL_S = 0.2


def wait_for_lease(
    acquire: Callable[[], Lease | None],
    *,
    wait_s: float,
    busy: str,
    while_waiting: Callable[[], None] | None = None,
) -> Lease:
    """The lease ``acquire`` takes, tried every 0.2 s for up to ``wait_s`` seconds (calling
    ``while_waiting`` before each wait); :class:`TransientJobError` saying ``busy`` when it is
    still held by another worker then."""
    retrying = Retrying(
        retry=retry_if_result(lambda lease: lease is None),
        stop=stop_after_delay(wait_s),
        wait=wait_fixed(LEASE_POLL_S),
        before_sleep=(lambda _state: while_waiting()) if while_waiting is not None else None,
    )
    try:
        lease = retrying(acquire)
    except RetryError:
        raise TransientJobError(busy) from None
    assert lease is not None  # retried while None
    return lease
