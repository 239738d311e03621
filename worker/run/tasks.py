"""The Celery app and thin tasks around :func:`worker.jobs.guard.run_job`.

A task carries a session id and a shelf, nothing else: it re-reads the watermarks and the log when
it runs, so duplicates, reordering and redelivery after a crash are harmless (the job converges
on the same store contents). The lease, the in-process retry of transient errors, the metrics and
the failure record are :func:`~worker.jobs.guard.run_job`'s; a task only turns "try again later"
into a Celery retry with exponential backoff and jitter, bounded by ``task_max_retries``. When
the retries run out, or when the job failed in a way no retry heals (a corrupt log, a store that
cannot be opened as configured), the task ends as a Celery FAILURE (:class:`JobNotFinished`), the
failure stays recorded and the daemon's reconcile loop re-enqueues the session later (the message
was a hint; the watermark is the truth).

Broker: Redis by default (``broker_url``); RabbitMQ works by URL (``amqp://…``). The app is
configured from the settings (environment and config file) when this module is imported, so
``celery -A dsh_memory_worker inspect ping|events|purge|report`` reaches the configured broker;
``memory-worker worker`` and the daemon configure it again with their command-line options.

One task per job kind (:data:`worker.names.TASK_OF_JOB`), so Flower and ``celery events`` show
``memory_worker.consolidate``, ``memory_worker.cascade`` … apart; a job registered later with
``worker.jobs.registry.register_job`` travels by name in ``memory_worker.job``.
"""

from __future__ import annotations

import random
import sys
import threading
from typing import Any, Final

from celery import Celery, signals
from kombu import pools as kombu_pools

from dsh_memory_worker.worker.names import (
    DEFAULT_QUEUE,
    JOB_LOG_SPAN,
    JOB_SESSION_NODE,
    TASK_JOB,
    TASK_LOG_SPAN,
    TASK_OF_JOB,
    TASK_SESSION_NODE,
)
from dsh_memory_worker.worker.run.backoff import backoff_s
from dsh_memory_worker.worker.settings import Settings, SettingsError, load_settings

#: Seconds a task may run beyond its lease before Celery kills it (the lease bounds a task).
_TIME_LIMIT_SLACK_S: Final = 30.0
_BUSY_RETRY_S: Final = 1.0
_BUSY_EXTRA_RETRIES: Final = 3

app = Celery("memory_worker")
_lock = threading.Lock()
_runtime: Any = None  # worker.jobs.runtime.Runtime, built lazily per (forked) worker process
_settings: Settings | None = None


def configure(settings: Settings, *, queue: str = DEFAULT_QUEUE) -> Celery:
    """Point :data:`app` at the configured broker with the delivery guarantees the pipeline
    relies on: late acks, one message prefetched per process, redelivery of a lost worker's
    message, and a visibility timeout above the longest task."""
    global _settings, _runtime
    time_limit = settings.lease_ttl_s + _TIME_LIMIT_SLACK_S
    if app._pool is not None:  # reconfigured after use: drop connections to the old broker
        app._pool.force_close_all()
        app._pool = None
        app.amqp._producer_pool = None
        # kombu's process-wide producer pools still point at the old broker's connections.
        kombu_pools.reset()  # type: ignore[no-untyped-call]
    app.conf.update(
        broker_url=settings.broker_url,
        result_backend=settings.result_backend,
        task_ignore_result=settings.result_backend is None,
        task_default_queue=queue,
        task_routes={name: {"queue": queue} for name in (*TASK_OF_JOB.values(), TASK_JOB)},
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        task_time_limit=time_limit,
        broker_transport_options={"visibility_timeout": int(time_limit * 2 + 60)},
        broker_connection_retry_on_startup=True,
        broker_connection_timeout=4.0,
        # A hint that cannot be published fails fast; the daemon's reconcile re-sends it.
        task_publish_retry_policy={
            "max_retries": 2,
            "interval_start": 0.2,
            "interval_step": 0.5,
            "interval_max": 1.0,
        },
        task_serializer="json",
        accept_content=["json"],
        # Events for Flower / `celery events`: workers report task states, publishers report
        # sent hints (`memory-worker worker` also passes --task-events and keeps heartbeats).
        worker_send_task_events=True,
        task_send_sent_event=True,
        worker_hijack_root_logger=False,
        worker_redirect_stdouts=False,
    )
    with _lock:
        _settings = settings
        _runtime = None
    return app


def _get_runtime() -> Any:
    global _runtime
    # Start-up time: `celery -A dsh_memory_worker inspect …` loads no job code; a worker process
    # imports it with its first task.
    from dsh_memory_worker.worker.jobs.runtime import (
        build_runtime,
        default_owner,
        owe_consolidation,
    )

    with _lock:
        if _runtime is None:
            if _settings is None:
                raise RuntimeError(
                    "dsh_memory_worker.worker.run.tasks.configure(settings) was not called"
                )
            # `memory-worker worker` migrated the state database before the pool started.
            _runtime = build_runtime(_settings, owner=default_owner("celery"), migrate=False)
            # Owed consolidations and cascades go back to the broker as job hints.
            owe_consolidation(_runtime, enqueue)
        return _runtime


@signals.worker_process_init.connect  # type: ignore[untyped-decorator]
def _reset_after_fork(**_: Any) -> None:
    # Connections and store handles must not cross a fork: each pool process builds its own.
    global _runtime
    _runtime = None


class JobNotFinished(Exception):
    """A job ended without finishing (out of retries, or an error no retry heals): raised so
    Celery records the task as FAILURE and Flower / ``celery events`` show it red. Listed in
    each task's ``throws``: Celery logs it as one line, without a traceback."""


def _run(task: Any, job: str, session_id: str, shelf: str) -> dict[str, Any]:
    from dsh_memory_worker.worker.jobs.guard import (
        give_up,
        run_job,
    )  # start-up time, as in _get_runtime

    runtime = _get_runtime()
    retries = int(task.request.retries or 0)
    limit = runtime.settings.task_max_retries
    result = run_job(runtime, job, session_id, shelf, attempt=retries)
    if result.status == "busy" and retries < limit + _BUSY_EXTRA_RETRIES:
        countdown = _BUSY_RETRY_S * (0.5 + random.random())
        raise task.retry(countdown=countdown, max_retries=limit + _BUSY_EXTRA_RETRIES)
    if result.status == "retry" and retries < limit:
        countdown = backoff_s(retries, runtime.settings.retry_backoff_s)
        raise task.retry(countdown=countdown, max_retries=limit)
    if result.status in ("busy", "retry", "failed"):
        # Out of retries, or ``failed`` (a corrupt log, a store that cannot be opened as
        # configured: no retry heals it). The failure is recorded (run_job / give_up) and the
        # reconcile loop hints the session again while the work is owed; the task is a FAILURE.
        reason = give_up(runtime, result)  # one line by session, and recorded for `status`
        raise JobNotFinished(f"{job} {session_id} not finished: {reason}")
    return result.as_dict()


def _job_task(job: str, name: str) -> Any:
    def run(self: Any, session_id: str, shelf: str) -> dict[str, Any]:
        return _run(self, job, session_id, shelf)

    run.__name__ = run.__qualname__ = f"{job}_task"
    run.__doc__ = (
        f"Run the ``{job}`` job for one session (see :mod:`dsh_memory_worker.worker.jobs`)."
    )
    return app.task(name=name, bind=True, acks_late=True, throws=(JobNotFinished,))(run)


#: The task of each job kind, by job name.
TASKS: Final = {job: _job_task(job, name) for job, name in TASK_OF_JOB.items()}
log_span_task = TASKS[JOB_LOG_SPAN]
session_node_task = TASKS[JOB_SESSION_NODE]


@app.task(
    name=TASK_JOB,
    bind=True,
    acks_late=True,  # type: ignore[untyped-decorator]
    throws=(JobNotFinished,),
)
def job_task(self: Any, job: str, session_id: str, shelf: str) -> dict[str, Any]:
    """Run any other registered job (see :func:`worker.jobs.registry.register_job`)."""
    return _run(self, job, session_id, shelf)


def enqueue(job: str, session_id: str, shelf: str) -> None:
    """Send one job hint for a session to the broker."""
    task = TASKS.get(job)
    if task is not None:
        task.apply_async(args=(session_id, shelf))
    else:
        job_task.apply_async(args=(job, session_id, shelf))


def _configure_from_settings() -> None:
    """At import: the broker and delivery settings from the environment and config file (what
    the ``celery`` command line needs); an unusable configuration is one line on stderr."""
    try:
        configure(load_settings())
    except SettingsError as exc:
        print(
            f"dsh_memory_worker.worker.run.tasks: {exc}; Celery keeps its defaults", file=sys.stderr
        )


_configure_from_settings()

__all__ = [
    "TASKS",
    "TASK_JOB",
    "TASK_LOG_SPAN",
    "TASK_SESSION_NODE",
    "JobNotFinished",
    "app",
    "backoff_s",
    "configure",
    "enqueue",
    "job_task",
    "log_span_task",
    "session_node_task",
]
