"""The one wrapper around every job: lease, in-process retry, metrics, failure recording.

``run_job`` is what both the in-process runner and the Celery tasks call. It

1. takes the session's lease (``busy`` when another worker holds it — the caller retries later)
   and keeps it renewed on time while the job runs (:func:`worker.jobs.lease_keeper.keep`);
2. runs the job, retrying transient store errors a few times in-process (tenacity, exponential
   backoff with jitter) — safe because every job is idempotent;
3. records the outcome: success clears the failure row; a permanent problem (a corrupt or
   unsupported log) is recorded once as permanent and not retried; a store that cannot be opened
   as configured (:class:`~memory.store.base.StoreConfigError`) is ``failed`` too, not retried;
   anything else is recorded with its attempt count and answered ``retry`` (the caller backs
   off; the reconcile loop re-derives the work if the caller gives up);
4. releases the lease and counts the run in Prometheus metrics.

Watermarks only move inside a job, after its writes, so every failure leaves them where they were.
"""

from __future__ import annotations

import logging
import time

from sqlalchemy.exc import OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeoutError
from tenacity import (
    RetryError,
    Retrying,
    retry_if_exception_type,
    stop_after_attempt,
    wait_exponential_jitter,
)

from dsh_memory_worker.memory.store.base import (
    FatalStoreError,
    StoreConfigError,
    StoreError,
    TransientStoreError,
)
from dsh_memory_worker.worker.jobs.context import JobContext, JobOutput, JobResult
from dsh_memory_worker.worker.jobs.lease_keeper import keep
from dsh_memory_worker.worker.jobs.logread import PermanentJobError, TransientJobError
from dsh_memory_worker.worker.jobs.registry import JOBS, Job
from dsh_memory_worker.worker.jobs.runtime import Runtime
from dsh_memory_worker.worker.logs import job_context
from dsh_memory_worker.worker.names import session_lease_key
from dsh_memory_worker.worker.observability import (
    ENTRIES_WRITTEN,
    JOB_RUNS,
    JOB_SECONDS,
    RETRACTIONS,
    SPANS_PROCESSED,
)
from dsh_memory_worker.worker.state.disk_full import disk_full
from dsh_memory_worker.worker.state.failures import describe_error

log = logging.getLogger(__name__)

_IN_PROCESS_ATTEMPTS = 3
_RETRYABLE = (TransientStoreError, TransientJobError, OperationalError, PoolTimeoutError)


def run_job(
    runtime: Runtime, job: str, session_id: str, shelf: str, *, attempt: int = 0
) -> JobResult:
    """Run ``job`` for ``(session_id, shelf)`` under the session's lease; never raises for job
    errors (they are recorded and reported in the result's ``status``)."""
    fn = JOBS.get(job)
    if fn is None:
        raise ValueError(f"unknown job {job!r}; known: {', '.join(sorted(JOBS))}")
    # Every log line of the job carries its session, job, shelf and attempt (worker.logs).
    with job_context(job, session_id, shelf, attempt):
        return _guarded(fn, runtime, job, session_id, shelf, attempt)


def _guarded(
    fn: Job, runtime: Runtime, job: str, session_id: str, shelf: str, attempt: int
) -> JobResult:
    started = time.monotonic()
    result = JobResult(job=job, session_id=session_id, shelf=shelf, status="busy", attempt=attempt)
    key = session_lease_key(session_id)
    try:
        with runtime.state.transaction() as repos:
            lease = repos.leases.acquire(key, runtime.owner, runtime.settings.lease_ttl_s)
            holder = repos.leases.holder(key) if lease is None else None
    except (OperationalError, PoolTimeoutError) as exc:
        result.status, result.detail = "retry", f"state database unavailable: {_line(exc)}"
        log.warning("%s %s: %s", job, session_id, result.detail)
        return _finish(result, started)
    if lease is None:
        result.detail = (
            f"the session's lease is held by {holder.owner} until "
            f"{holder.expires_at:%Y-%m-%d %H:%M:%S} UTC"
            if holder is not None
            else "another worker holds the session's lease"
        )
        return _finish(result, started)
    ctx = JobContext(runtime, job, session_id, shelf, lease)
    ctx.keeper = keep(runtime.state, lease, runtime.settings.lease_ttl_s)
    succeeded = False
    try:
        output = _with_retries(fn, ctx)
        _copy(output, result)
        result.status = output.status
        succeeded = True
    except PermanentJobError as exc:
        result.status, result.detail = "failed", _line(exc)
        _record_failure(runtime, job, session_id, exc, permanent=True)
    except StoreConfigError as exc:
        # Only a change of configuration heals it: not retried, but recorded as retryable, so
        # the reconcile loop hints the work again once the store opens (no log growth needed).
        result.status, result.detail = "failed", f"cannot open the store: {_line(exc)}"
        runtime.drop_store(shelf)
        _record_failure(runtime, job, session_id, exc, permanent=False)
    except (StoreError, OSError, *_RETRYABLE) as exc:
        result.status, result.detail = "retry", _line(exc)
        if isinstance(exc, FatalStoreError):
            runtime.drop_store(shelf)
        _record_failure(runtime, job, session_id, exc, permanent=False)
    except Exception as exc:  # a bug must not kill the worker; it is recorded
        log.exception("%s %s failed unexpectedly", job, session_id)
        result.status, result.detail = "retry", _line(exc)
        # Its class only: a bug's message may hold any text it was given (a message's words
        # included), and the failure row outlives a withdrawal (docs/guarantees.md).
        _record_failure(
            runtime,
            job,
            session_id,
            f"unexpected {type(exc).__name__} (the worker log has the traceback)",
            permanent=False,
        )
    finally:
        ctx.keeper.stop()
        ctx.lease = ctx.keeper.lease
        # Success clears the failure row in the same transaction that releases the lease.
        _release(runtime, ctx, clear_failure=succeeded)
    return _finish(result, started)


def give_up(runtime: Runtime, result: JobResult) -> str:
    """The caller stops retrying ``result``'s job: say so by session, once, and (for a job that
    never got its lease: the guard recorded nothing yet) record it as the job's failure so
    ``status`` shows it. Returns the one-line reason."""
    reason = result.detail or result.status
    if result.status == "busy":
        reason = f"could not get its lease: {reason}"
        try:
            with runtime.state.transaction() as repos:
                repos.failures.record(result.job, result.session_id, reason)
        except (OperationalError, PoolTimeoutError) as exc:
            log.warning(
                "could not record the failure of %s %s: %s",
                result.job,
                result.session_id,
                _line(exc),
            )
    if result.status != "failed":  # a permanent failure was said once already
        log.warning(
            "%s %s not finished: %s; the next run or reconcile tries again",
            result.job,
            result.session_id,
            reason,
        )
    return reason


def _with_retries(fn: Job, ctx: JobContext) -> JobOutput:
    retrying = Retrying(
        retry=retry_if_exception_type((TransientStoreError, OperationalError)),
        stop=stop_after_attempt(_IN_PROCESS_ATTEMPTS),
        wait=wait_exponential_jitter(multiplier=0.1, max=2.0, jitter=0.1),
        reraise=True,
    )
    try:
        for attempt in retrying:
            with attempt:
                return fn(ctx)
    except RetryError as exc:  # pragma: no cover - reraise=True re-raises the last error
        raise TransientJobError(str(exc)) from exc
    raise AssertionError("unreachable")  # pragma: no cover


def _copy(output: JobOutput, result: JobResult) -> None:
    result.detail = output.detail
    result.from_seq, result.to_seq = output.from_seq, output.to_seq
    result.add(output)


def _finish(result: JobResult, started: float) -> JobResult:
    result.seconds = time.monotonic() - started
    JOB_RUNS.labels(result.job, result.status).inc()
    JOB_SECONDS.labels(result.job).observe(result.seconds)
    if result.status == "done" and result.to_seq is not None:
        SPANS_PROCESSED.labels(result.job).inc()
    if result.written:
        ENTRIES_WRITTEN.labels(result.job).inc(result.written)
    if result.retracted:
        RETRACTIONS.inc(result.retracted)
    if result.status == "done":
        log.info(
            "%s %s %s: %s; written=%d duplicates=%d retracted=%d edges=%d (%.3f s)",
            result.job,
            result.session_id,
            result.status,
            result.detail,
            result.written,
            result.duplicates,
            result.retracted,
            result.edges,
            result.seconds,
        )
    return result


def _line(exc: BaseException | str) -> str:
    if isinstance(exc, str):
        return " ".join(exc.split())
    full = disk_full(exc)  # "disk full: <where>", not SQLite's "disk I/O error"
    if full is not None:
        return full
    text = " ".join(str(exc).split())
    return text or type(exc).__name__


def _record_failure(
    runtime: Runtime, job: str, session_id: str, exc: BaseException | str, *, permanent: bool
) -> None:
    try:
        with runtime.state.transaction() as repos:
            previous = repos.failures.get(job, session_id)
            if (
                permanent
                and previous is not None
                and previous.permanent
                and previous.last_error == describe_error(exc)
            ):
                return  # recorded once: the same permanent problem is not counted again
            repos.failures.record(job, session_id, exc, permanent=permanent)
    except (OperationalError, PoolTimeoutError) as db_exc:
        log.warning("could not record the failure of %s %s: %s", job, session_id, _line(db_exc))
        return
    kind = "permanent failure" if permanent else "failed (will retry)"
    # One line per distinct problem: a retry failing the same way is counted, not re-logged.
    repeated = previous is not None and previous.last_error == describe_error(exc)
    log.log(
        logging.DEBUG if repeated else logging.WARNING,
        "%s %s %s: %s",
        job,
        session_id,
        kind,
        _line(exc),
    )


def _release(runtime: Runtime, ctx: JobContext, *, clear_failure: bool = False) -> None:
    """Give the lease back; after a success also forget the job's failure row, in the same
    transaction (one commit instead of two per job)."""
    if clear_failure:
        try:
            with runtime.state.transaction() as repos:
                repos.failures.clear(ctx.job, ctx.session_id)
                repos.leases.release(ctx.lease)
            return
        except (OperationalError, PoolTimeoutError) as exc:
            log.warning(
                "could not clear the failure of %s %s: %s", ctx.job, ctx.session_id, _line(exc)
            )
    try:
        with runtime.state.transaction() as repos:
            repos.leases.release(ctx.lease)
    except (OperationalError, PoolTimeoutError) as exc:
        # The lease expires on its own; nothing else depends on the release.
        log.warning("could not release the lease on %s: %s", ctx.session_id, _line(exc))
