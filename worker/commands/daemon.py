"""``memory-worker daemon`` — the watcher of the distributed mode: follow the DSH home and send
job hints to Celery (Redis by default, RabbitMQ by URL); ``memory-worker worker`` runs them.

Hints that cannot be sent (broker down) or that the broker loses are dropped with one line: the
periodic reconcile (every ``reconcile_interval_s``, and right after the first poll) re-derives all
owed work from the log and the watermarks — log lag, idle-closes, session nodes, consolidation of
idle-closed sessions, queued reconsolidation requests and interrupted repairs — so nothing is lost.
At startup the daemon opens the state database and the store once (either unusable: one line,
exit 2) and, like ``memory-worker run``, queues the consolidation backfill (the sessions that
lag, per project at most ``consolidation_backfill_per_scope``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from dsh_memory_worker.worker.commands.options import (
    ConfigOption,
    DshHomeOption,
    MetricsPortOption,
    QueueOption,
    ShelfOption,
    say,
)
from dsh_memory_worker.worker.names import DEFAULT_QUEUE

log = logging.getLogger(__name__)


class BrokerHints:
    """Sends hints to Celery; a broker outage is reported once per outage, not per hint.

    ``setup`` (the daemon: :func:`worker.run.tasks.configure`) runs once, before the first
    hint: a daemon at rest sends none, and then never imports Celery and kombu (about 6 MB)."""

    def __init__(
        self, retry_after_s: float = 5.0, *, setup: Callable[[], object] | None = None
    ) -> None:
        self._setup = setup
        self.sent = 0
        self.dropped = 0
        self.retry_after_s = retry_after_s
        self._down_since: float | None = None
        self._next_try = 0.0

    def __call__(self, job: str, session_id: str, shelf: str) -> None:
        if self._down_since is not None and time.monotonic() < self._next_try:
            self.dropped += 1  # broker known down: do not block the watcher on every hint
            return
        from dsh_memory_worker.worker.run import tasks

        if self._setup is not None:
            setup, self._setup = self._setup, None
            setup()
        try:
            tasks.enqueue(job, session_id, shelf)
        except Exception as exc:  # kombu raises several types for an unreachable broker
            self.dropped += 1
            self._next_try = time.monotonic() + self.retry_after_s
            if self._down_since is None:
                self._down_since = time.monotonic()
                line = " ".join(str(exc).split())[:200]
                log.warning(
                    "cannot send hints to the broker (%s); the reconcile loop re-sends owed "
                    "work when it is back",
                    line,
                )
            return
        if self._down_since is not None:
            log.warning("broker reachable again after %.0f s", time.monotonic() - self._down_since)
            self._down_since = None
        self.sent += 1


def daemon(
    queue: QueueOption = DEFAULT_QUEUE,
    dsh_home: DshHomeOption = None,
    shelf: ShelfOption = None,
    metrics_port: MetricsPortOption = None,
    config: ConfigOption = None,
) -> None:
    """Follow the DSH home and enqueue log jobs to Celery (run `memory-worker worker` too)."""
    # Imported when the command runs, not at start-up (keeps `memory-worker --help` fast).
    from dsh_memory_worker.worker.commands.common import (
        check_store_or_exit,
        command_settings,
        open_runtime_or_exit,
        require_distributed,
        serve_metrics,
        stop_on_signals,
    )
    from dsh_memory_worker.worker.jobs.housekeeping import reconcile_with_store
    from dsh_memory_worker.worker.jobs.reconsolidate import backfill_consolidation
    from dsh_memory_worker.worker.jobs.seed_pending import unchecked_children
    from dsh_memory_worker.worker.settings import mask_url
    from dsh_memory_worker.worker.watch.watcher import Watcher

    require_distributed("daemon")
    settings = command_settings(
        config, dsh_home=dsh_home, store_shelf=shelf, metrics_port=metrics_port
    )

    def configure_broker() -> None:
        from dsh_memory_worker.worker.run import tasks

        tasks.configure(settings, queue=queue)

    runtime = open_runtime_or_exit(settings, "daemon")
    # The store the workers write, opened once here: a store no retry can open (a refused shelf
    # registration, a login the server refuses) is one line and exit 2, not a stream of failed
    # jobs.
    check_store_or_exit(runtime, settings.store_shelf)
    serve_metrics(settings, runtime.state)
    if settings.reconcile_on_startup:
        reconcile_with_store(runtime, settings.store_shelf)
    if unchecked_children(runtime, settings.store_shelf):  # fork children an older worker stored
        from dsh_memory_worker.worker.jobs.seed_repair import check_seeded_sessions

        check_seeded_sessions(runtime, settings.store_shelf)
    # Owed consolidation becomes queued requests; the first reconcile hints them together with
    # the repairs a crash interrupted (and every other owed job).
    backfill_consolidation(runtime, settings.store_shelf)
    hints = BrokerHints(setup=configure_broker)  # Celery is loaded with the first hint
    watcher = Watcher(runtime, hints, shelf=settings.store_shelf)
    stop = stop_on_signals()
    say(
        f"following {settings.sessions_root} → {mask_url(settings.broker_url)} "
        f"queue {queue!r}, shelf {settings.store_shelf!r}"
    )
    try:
        watcher.run(stop)
    finally:
        runtime.close()
    say(f"stopped; {hints.sent} hints sent, {hints.dropped} dropped", event="summary")
