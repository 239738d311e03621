"""The in-process executor (embedded mode): the same jobs and the same guard as the Celery tasks.

Jobs are queued by key ``(job, session, shelf)``; a key already waiting is not queued twice (its
job re-reads the log and the watermarks when it runs, so one run covers every hint). Jobs run one
at a time in submission order. ``busy`` (another process holds the session's lease) and
``retry`` (a transient error outlived the guard's own retries) put the key back with exponential
backoff and jitter, at most ``task_max_retries`` times; ``busy`` is retried for up to
``lease_wait_s``. After that the runner gives up on the job (:func:`worker.jobs.guard.give_up`:
one line naming the session, the failure recorded) and the next scan or reconcile brings the
session back.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

from dsh_memory_worker.worker.jobs.context import Counts, JobResult
from dsh_memory_worker.worker.jobs.runtime import Runtime, long_lived_frozen
from dsh_memory_worker.worker.run.backoff import backoff_s

JobKey = tuple[str, str, str]  # (job, session id, shelf)
_BUSY_DELAY_MAX_S = 2.0


@dataclass(kw_only=True)
class Tally(Counts):
    """Jobs done and failed and their counters: what the runner, a ``--jobs`` child (the
    difference since its last report) and the ``--jobs`` totals count."""

    done: int = 0
    failed: int = 0

    @property
    def finished(self) -> int:
        """Jobs that ended (done or failed), not counting retried attempts."""
        return self.done + self.failed

    def tally(self) -> Tally:
        """A copy of the jobs and counters alone."""
        return Tally(done=self.done, failed=self.failed, **asdict(self.counts()))

    def tally_since(self, earlier: Tally) -> Tally:
        """What was added since ``earlier`` (a copy taken before)."""
        return Tally(
            done=self.done - earlier.done,
            failed=self.failed - earlier.failed,
            **asdict(self.counts().since(earlier)),
        )

    def add_tally(self, other: Tally) -> None:
        """Add ``other``'s jobs and counters to these."""
        self.done += other.done
        self.failed += other.failed
        self.add(other)


@dataclass(kw_only=True)
class RunnerStats(Tally):
    """What the runner did (shown by ``run``): jobs by outcome, and the jobs' counters summed."""

    retried: int = 0
    results: list[JobResult] = field(default_factory=list)
    #: Jobs that ended failed (given up or permanent): ``(job, session id)`` -> one-line reason.
    unfinished: dict[tuple[str, str], str] = field(default_factory=dict)
    #: Jobs that ended done or skipped (a later phase's success clears an earlier failure).
    settled: set[tuple[str, str]] = field(default_factory=set)


class InProcessRunner:
    """Run pipeline jobs in this process, with the guard's lease / retry / failure semantics."""

    def __init__(
        self,
        runtime: Runtime,
        *,
        on_result: Callable[[JobResult], None] | None = None,
        keep_results: bool = False,
        single_pass: bool = False,
    ) -> None:
        self.runtime = runtime
        #: One pass over the home (``run --once``): a job given up is not run again in it.
        self.single_pass = single_pass
        self._given_up: set[JobKey] = set()
        self.on_result = on_result
        self.keep_results = keep_results
        self.stats = RunnerStats()
        self._ready: deque[JobKey] = deque()
        self._queued: set[JobKey] = set()
        self._delayed: list[tuple[float, JobKey]] = []
        self._backing_off: set[JobKey] = set()
        self._attempts: dict[JobKey, int] = {}
        self._busy_since: dict[JobKey, float] = {}
        self._running: JobKey | None = None

    # ---------------------------------------------------------------------------------- queue

    def submit(self, job: str, session_id: str, shelf: str) -> None:
        """Queue a job hint; a key already waiting is not queued twice."""
        key = (job, session_id, shelf)
        if key in self._queued or key in self._given_up or key in self._backing_off:
            return  # a key backing off runs again anyway, and re-reads everything then
        self._queued.add(key)
        self._ready.append(key)

    def pending(self) -> int:
        return len(self._ready) + len(self._delayed)

    def left(self) -> list[JobKey]:
        """The jobs not finished yet: the one running (when stopped mid-job), then the queued and
        the delayed ones."""
        keys = [self._running] if self._running is not None else []
        return keys + list(self._ready) + [key for _, key in sorted(self._delayed)]

    # ---------------------------------------------------------------------------------- drain

    def run_ready(self, *, max_jobs: int | None = None) -> int:
        """Run the jobs that are due now; returns how many ran."""
        self._promote(time.monotonic())
        ran = 0
        with long_lived_frozen():
            while self._ready and (max_jobs is None or ran < max_jobs):
                key = self._ready.popleft()
                self._queued.discard(key)
                self._run(key)
                ran += 1
        return ran

    def drain(self, *, timeout_s: float | None = None) -> None:
        """Run until nothing is queued or delayed (or ``timeout_s`` passed)."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while self.pending():
            if self.run_ready() == 0:
                if deadline is not None and time.monotonic() >= deadline:
                    return
                wake = min(at for at, _ in self._delayed)
                time.sleep(max(0.0, min(0.5, wake - time.monotonic())))

    # -------------------------------------------------------------------------------- helpers

    def _promote(self, now: float) -> None:
        due = [item for item in self._delayed if item[0] <= now]
        if not due:
            return
        self._delayed = [item for item in self._delayed if item[0] > now]
        self._backing_off.difference_update(key for _, key in due)
        for _, key in sorted(due):
            if key not in self._queued:
                self._queued.add(key)
                self._ready.append(key)

    def _run(self, key: JobKey) -> None:
        # Start-up time: the guard and the jobs (the registry imports every job's module) load
        # with the first job; a pass that finds nothing to do never imports them.
        from dsh_memory_worker.worker.jobs.guard import give_up, run_job

        job, session_id, shelf = key
        attempt = self._attempts.get(key, 0)
        self._running = key
        result = run_job(self.runtime, job, session_id, shelf, attempt=attempt)
        self._running = None
        settings = self.runtime.settings
        now = time.monotonic()
        if result.status == "busy":
            # Another live process holds the lease: wait for it, up to lease_wait_s.
            waiting = now - self._busy_since.setdefault(key, now)
            again = waiting < settings.lease_wait_s
        else:
            self._busy_since.pop(key, None)
            # A store treated as down (memory.store.breaker) fails every call at once: no retry.
            again = (
                result.status == "retry"
                and attempt < settings.task_max_retries
                and not self.runtime.store_is_down(shelf)
            )
        if again:
            self._attempts[key] = attempt + 1
            self.stats.retried += 1
            delay = (
                backoff_s(attempt, settings.retry_backoff_s)
                if result.status == "retry"
                else min(_BUSY_DELAY_MAX_S, 0.2 * (1 + attempt))
            )
            self._delayed.append((now + delay, key))
            self._backing_off.add(key)
        else:
            self._attempts.pop(key, None)
            self._busy_since.pop(key, None)
            if result.status in ("done", "skipped"):
                self.stats.done += 1
                self.stats.unfinished.pop((job, session_id), None)
                self.stats.settled.add((job, session_id))
            else:
                self.stats.failed += 1
                self.stats.unfinished[(job, session_id)] = give_up(self.runtime, result)
                if self.single_pass:
                    self._given_up.add(key)
        self.stats.add(result)
        if self.keep_results:
            self.stats.results.append(result)
        if self.on_result is not None:
            self.on_result(result)
