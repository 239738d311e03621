"""``memory-worker worker`` — a Celery worker with the worker's settings and guarantees.

Late acks, one prefetched message per process, redelivery of a lost worker's message, a
visibility timeout above the longest task (see :func:`worker.tasks.configure`). The state
database is migrated to head before the worker starts consuming. Task events and heartbeats are
on, so Flower (``docker compose``'s ``flower`` service) shows workers, tasks and their outcomes.
"""

from __future__ import annotations

import os
import socket
from enum import StrEnum
from typing import Annotated

import typer

from worker import tasks
from worker.cli import app
from worker.commands.config import ConfigOption
from worker.commands.daemon import QueueOption
from worker.commands.run import (
    MetricsPortOption,
    check_store_binary_or_exit,
    err,
    load_or_exit,
    open_runtime_or_exit,
    serve_metrics,
    setup_logging,
)
from worker.names import DEFAULT_QUEUE


class Pool(StrEnum):
    prefork = "prefork"
    solo = "solo"
    threads = "threads"


@app.command("worker")
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
    settings = load_or_exit(config, concurrency=concurrency, metrics_port=metrics_port)
    setup_logging(settings)
    check_store_binary_or_exit(settings)
    open_runtime_or_exit(settings, "migrate").close()  # migrate once, before any child starts
    tasks.configure(settings, queue=queue)
    serve_metrics(settings)  # jobs run in this process with --pool solo/threads
    node = name or f"memory-worker-{os.getpid()}@{socket.gethostname()}"
    argv = celery_argv(queue, settings.concurrency, pool, settings.log_level, node)
    err.print(f"celery worker {node} on queue {queue!r} ({pool.value} × {settings.concurrency})",
              soft_wrap=True)
    tasks.app.worker_main(argv)


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
