"""What one job run receives (its session, shelf, lease and runtime) and what it returns."""

from __future__ import annotations

import logging
import threading
import time
from contextlib import AbstractContextManager
from dataclasses import asdict, dataclass, field, fields
from datetime import tzinfo
from typing import TYPE_CHECKING, Any, Literal

from dsh_memory_worker.worker.jobs.errors import TransientJobError
from dsh_memory_worker.worker.state.progress import Progress

if TYPE_CHECKING:  # start-up time: a run with nothing to do imports no job machinery
    from dsh_memory_worker.memory.store.base import MemoryStore
    from dsh_memory_worker.worker.jobs.lease_keeper import LeaseKeeper
    from dsh_memory_worker.worker.jobs.runtime import Runtime
    from dsh_memory_worker.worker.state.audit import RetractionOutcome
    from dsh_memory_worker.worker.state.database import Repos
    from dsh_memory_worker.worker.state.leases import Lease
    from dsh_memory_worker.worker.state.sessions import SessionState

log = logging.getLogger(__name__)

_warned: set[str] = set()
_warned_lock = threading.Lock()


def warn_once(key: str, message: str) -> None:
    """Log ``message`` once per process."""
    with _warned_lock:
        if key in _warned:
            return
        _warned.add(key)
    log.warning(message)


@dataclass(slots=True, kw_only=True)
class Counts:
    """What jobs did to the store, the one set of counters a job returns, the guard reports,
    the runner and the ``--jobs`` pool add up and the command lines print."""

    written: int = 0
    duplicates: int = 0
    retracted: int = 0
    edges: int = 0
    withdrawn: int = 0

    def add(self, other: Counts) -> None:
        """Add ``other``'s counters to these."""
        for name in _COUNT_NAMES:
            setattr(self, name, getattr(self, name) + getattr(other, name))

    def counts(self) -> Counts:
        """A copy of the counters alone (e.g. of a :class:`JobResult`)."""
        return Counts(**{name: getattr(self, name) for name in _COUNT_NAMES})

    def since(self, earlier: Counts) -> Counts:
        """The counters added since ``earlier`` (a copy taken before)."""
        return Counts(
            **{name: getattr(self, name) - getattr(earlier, name) for name in _COUNT_NAMES}
        )


_COUNT_NAMES = tuple(f.name for f in fields(Counts))


@dataclass(slots=True)
class JobOutput(Counts):
    """What a job did. ``skipped`` means there was nothing to do (not a failure)."""

    status: Literal["done", "skipped"]
    detail: str = ""
    from_seq: int | None = None
    to_seq: int | None = None


def skipped(detail: str, **fields: Any) -> JobOutput:
    return JobOutput(status="skipped", detail=detail, **fields)


JobStatus = Literal["done", "skipped", "busy", "retry", "failed"]


@dataclass(slots=True)
class JobResult(Counts):
    """The outcome of one guarded job run (what runner and tasks act on)."""

    job: str
    session_id: str
    shelf: str
    status: JobStatus
    detail: str = ""
    from_seq: int | None = None
    to_seq: int | None = None
    attempt: int = 0
    seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class JobContext:
    """One run of one job for one (session, shelf), holding the session's lease."""

    runtime: Runtime
    job: str
    session_id: str
    shelf: str
    lease: Lease
    #: The heartbeat renewing ``lease`` on time (set by the guard while the job runs).
    keeper: LeaseKeeper | None = None
    _renewed_at: float = field(default_factory=time.monotonic)

    def state(self) -> AbstractContextManager[Repos]:
        """A short state transaction."""
        return self.runtime.state.transaction()

    def read(self) -> AbstractContextManager[Repos]:
        """A short read-only state transaction (never waits for another process's write)."""
        return self.runtime.state.read()

    def store(self) -> MemoryStore:
        return self.runtime.store(self.shelf)

    def timezone(self) -> tzinfo | None:
        return self.runtime.timezone()

    def session_rows(self) -> tuple[SessionState, Progress] | JobOutput:
        """The session's row and this shelf's progress, read in one transaction, or why the job
        has nothing to do (the watcher has not seen the session, or it was forgotten)."""
        with self.read() as repos:
            session = repos.sessions.get(self.session_id)
            # A missing row reads as all zeros at version 0 (the first advance creates it).
            progress = repos.progress.find(self.shelf, self.session_id) or Progress(
                self.shelf, self.session_id
            )
        if session is None:
            return skipped("session not seen by the watcher yet")
        if session.forgotten:
            return skipped("session is forgotten")
        return session, progress

    def heartbeat(self) -> None:
        """Stop the job when its lease was lost. With a :class:`LeaseKeeper` (every guarded job)
        the keeper renews on time; without one this renews when a third of its time passed."""
        if self.keeper is not None:
            if self.keeper.lost.is_set():
                raise TransientJobError(f"lease on {self.session_id} was lost mid-job")
            self.lease = self.keeper.lease
            return
        ttl = self.runtime.settings.lease_ttl_s
        if time.monotonic() - self._renewed_at < ttl / 3:
            return
        with self.state() as repos:
            renewed = repos.leases.renew(self.lease, ttl)
        if renewed is None:
            raise TransientJobError(f"lease on {self.session_id} was lost mid-job")
        self.lease = renewed
        self._renewed_at = time.monotonic()

    def record_retraction(
        self,
        entry: str,
        ordinal: int,
        marker_seq: int,
        kind: str,
        outcome: RetractionOutcome,
        detail: str | None = None,
    ) -> None:
        with self.state() as repos:
            repos.audit.record_retraction(
                shelf=self.shelf,
                session_id=self.session_id,
                ordinal=ordinal,
                entry=entry,
                marker_seq=marker_seq,
                source_kind=kind,
                outcome=outcome,
                detail=detail,
            )
        if outcome == "retracted":
            log.info("retracted %s (withdrawn by %s marker at seq %d)", entry, kind, marker_seq)

    def warn_once(self, key: str, message: str) -> None:
        warn_once(key, message)
