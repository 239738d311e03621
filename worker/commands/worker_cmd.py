"""``memory-worker worker`` — a Celery worker with the worker's settings and guarantees.

Late acks, one prefetched message per process, redelivery of a lost worker's message, a
visibility timeout above the longest task (see :func:`worker.run.tasks.configure`). The state
database is migrated to head and the store opened once before the worker starts consuming; either
unusable is one line and exit 2. Task events and heartbeats are on, so Flower (``docker
compose``'s ``flower`` service) shows workers, tasks and their outcomes.
The metrics port serves the counters of every pool process (prometheus_client multiprocess mode,
set up before anything imports it), and logging stays this project's (Celery does not redo it).
"""

from __future__ import annotations

import logging
import os
import socket
from enum import StrEnum
from typing import Annotated

import typer

from dsh_memory_worker.worker.commands.options import (
    ConfigOption,
    MetricsPortOption,
    QueueOption,
    say,
)
from dsh_memory_worker.worker.names import DEFAULT_QUEUE


class Pool(StrEnum):
    prefork = "prefork"
    solo = "solo"
    threads = "threads"


def worker_command(
    queue: QueueOption = DEFAULT_QUEUE,
    concurrency: Annotated[
        int | None, typer.Option("--concurrency", "-c", help="Processes (default: setting).")
    ] = None,
    pool: Annotated[Pool, typer.Option("--pool", help="Celery pool implementation.")] = (
        Pool.prefork
    ),
    name: Annotated[str | None, typer.Option("--name", help="Celery node name.")] = None,
    metrics_port: MetricsPortOption = None,
    config: ConfigOption = None,
) -> None:
    """Run a Celery worker that executes the queued jobs (log, session node, consolidate, cascade,
    retract, rewrite)."""
    # Before anything imports prometheus_client: every pool process writes its counters to
    # one directory, and this process's metrics port serves their sum (worker.observability).
    _multiprocess_metrics()
    # Imported when the command runs, not at start-up (keeps `memory-worker --help` fast).
    from dsh_memory_worker.worker.commands.common import (
        check_store_or_exit,
        command_settings,
        open_runtime_or_exit,
        require_distributed,
        serve_metrics,
    )

    settings = command_settings(config, concurrency=concurrency, metrics_port=metrics_port)
    logging.getLogger("celery").setLevel(settings.log_level)  # Celery's own lines: ready, tasks
    require_distributed("worker")
    from celery import signals

    from dsh_memory_worker.worker.run import tasks

    # Migrate once, before any child starts, and open the store once: an unusable state
    # database or store (a refused shelf registration, a refused login) is one line, exit 2.
    runtime = open_runtime_or_exit(settings, "migrate")
    try:
        check_store_or_exit(runtime, settings.store_shelf)
    finally:
        runtime.close()  # nothing opened here crosses the pool's fork
    tasks.configure(settings, queue=queue)
    # Logging is ours (one tree, JSON or text, job fields): Celery must not reconfigure it.
    signals.setup_logging.connect(_keep_logging, weak=False)
    serve_metrics(settings)  # the sum over every pool process (multiprocess mode)
    node = name or f"memory-worker-{os.getpid()}@{socket.gethostname()}"
    argv = celery_argv(queue, settings.concurrency, pool, settings.log_level, node)
    say(f"celery worker {node} on queue {queue!r} ({pool.value} × {settings.concurrency})")
    tasks.app.worker_main(argv)


def _keep_logging(**_: object) -> None:
    """A ``setup_logging`` receiver: its presence stops Celery from configuring logging."""


def _multiprocess_metrics() -> None:
    """Point prometheus_client at a fresh multiprocess directory (``$PROMETHEUS_MULTIPROC_DIR``
    if set, emptied of old files; else a temporary one removed at exit)."""
    import atexit
    import shutil
    import tempfile
    from pathlib import Path

    from dsh_memory_worker.worker.settings import (
        prometheus_multiproc_dir,
        use_prometheus_multiproc_dir,
    )

    given = prometheus_multiproc_dir()
    if given is not None:
        directory = given
        directory.mkdir(parents=True, exist_ok=True)
        for old in directory.glob("*.db"):  # counters of an earlier run are not this run's
            old.unlink(missing_ok=True)
    else:
        directory = Path(tempfile.mkdtemp(prefix="memory-worker-metrics-"))
        owner = os.getpid()

        def _remove() -> None:
            if os.getpid() == owner:  # not in a forked pool process
                shutil.rmtree(directory, ignore_errors=True)

        atexit.register(_remove)
        use_prometheus_multiproc_dir(directory)


def celery_argv(queue: str, concurrency: int, pool: Pool, log_level: str, node: str) -> list[str]:
    """The ``celery worker`` arguments: task events on (``--task-events``) and heartbeats kept,
    so Flower and ``celery events`` see the workers and their tasks; gossip and mingle off (each
    worker needs nothing from its peers at startup)."""
    return [
        "worker",
        f"--queues={queue}",
        f"--concurrency={concurrency}",
        f"--pool={pool.value}",
        f"--loglevel={log_level}",
        f"--hostname={node}",
        "--task-events",
        "--without-gossip",
        "--without-mingle",
    ]
