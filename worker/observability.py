"""Every Prometheus metric, defined once, and the ``/metrics`` server.

In-process counters and histograms (job runs, spans processed, entries written, retractions,
repairs, task latency) are incremented where the work happens. The numbers that live in the
state database — total lag, pending retractions, audited retractions, model tokens — are read
from it at scrape time by :class:`StateCollector`, so every process (the embedded runner, a
Celery worker, the daemon) reports the same figures for them. No label is per session (the
series would grow without bound); per-session numbers are ``memory-worker status``'s.

Under Celery's prefork pool the jobs run in child processes: ``memory-worker worker`` sets
``PROMETHEUS_MULTIPROC_DIR`` (prometheus_client's multiprocess mode) before this module is
imported, every process writes its counters there, and the parent's port serves the sum of
all of them (:func:`serve_metrics`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Histogram, start_http_server
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from dsh_memory_worker.worker.figures import figures  # the one place that computes them
from dsh_memory_worker.worker.settings import prometheus_multiproc_dir

JOB_RUNS = Counter(
    "memory_worker_job_runs_total", "Guarded job runs by job and outcome", ["job", "status"]
)
JOB_SECONDS = Histogram(
    "memory_worker_job_seconds", "Task latency: wall time of guarded job runs", ["job"]
)
SPANS_PROCESSED = Counter(
    "memory_worker_spans_processed_total", "Spans a job finished (logged or consolidated)", ["job"]
)
ENTRIES_WRITTEN = Counter("memory_worker_entries_written_total", "Entries created", ["job"])
RETRACTIONS = Counter("memory_worker_retractions_total", "Withdrawn entries deleted")
REPAIRS = Counter(
    "memory_worker_repairs_total",
    "Derived entries repaired after a withdrawal or a forget, by kind and outcome",
    ["kind", "outcome"],
)


class StateCollector(Collector):
    """Gauges read from the state database on every scrape."""

    def __init__(self, state: Any, shelf: str) -> None:
        self.state = state
        self.shelf = shelf

    def collect(self) -> Iterator[Metric]:
        total_lag = GaugeMetricFamily("memory_worker_lag_events", "Total logging lag")
        total_consolidation = GaugeMetricFamily(
            "memory_worker_consolidation_lag_events", "Total consolidation lag"
        )
        pending = GaugeMetricFamily(
            "memory_worker_retractions_pending",
            "Repairs started and not finished, plus retractions the store refused",
        )
        audited = GaugeMetricFamily(
            "memory_worker_retractions_audited",
            "Retraction records by outcome",
            labels=["outcome"],
        )
        tokens = GaugeMetricFamily(
            "memory_worker_model_tokens",
            "Model tokens of the recorded model calls (the newest the model_calls table keeps), "
            "by purpose and direction",
            labels=["purpose", "direction"],
        )
        calls = GaugeMetricFamily(
            "memory_worker_model_calls",
            "Recorded model calls (the newest the model_calls table keeps), by purpose",
            labels=["purpose"],
        )
        try:
            found = figures(self.state, self.shelf)
        except Exception:  # a scrape must not fail because the database is down
            return
        total_lag.add_metric([], found["total"]["lag"])
        total_consolidation.add_metric([], found["total"]["consolidation_lag"])
        pending.add_metric([], found["total"]["retractions_pending"])
        for outcome, count in sorted(found["total"]["retractions"].items()):
            audited.add_metric([outcome], count)
        for purpose, counts in sorted(found["total"]["model_tokens"].items()):
            for direction, value in sorted(counts.items()):
                tokens.add_metric([purpose, direction], value)
        for purpose, count in sorted(found["total"]["model_calls"].items()):
            calls.add_metric([purpose], count)
        yield from (total_lag, total_consolidation, pending, audited, tokens, calls)


_served: dict[int, Any] = {}
_collectors: dict[tuple[int, str], StateCollector] = {}
_multiprocess: CollectorRegistry | None = None


def metrics_registry() -> CollectorRegistry:
    """The registry to serve: in multiprocess mode one that sums every process's files
    (prometheus_client's ``MultiProcessCollector``), else the default registry."""
    global _multiprocess
    if prometheus_multiproc_dir() is None:
        return REGISTRY
    if _multiprocess is None:
        from prometheus_client.multiprocess import MultiProcessCollector

        _multiprocess = CollectorRegistry()
        MultiProcessCollector(_multiprocess)  # type: ignore[no-untyped-call]
    return _multiprocess


def serve_metrics(
    port: int,
    state: Any | None = None,
    shelf: str = "default",
    registry: CollectorRegistry | None = None,
) -> None:
    """Serve ``/metrics`` on ``port`` (once per process), with the state gauges when ``state``
    is given. Raises ``OSError`` when the port is taken."""
    registry = registry if registry is not None else metrics_registry()
    if state is not None and (id(state), shelf) not in _collectors:
        collector = StateCollector(state, shelf)
        registry.register(collector)
        _collectors[(id(state), shelf)] = collector
    if port not in _served:
        _served[port] = start_http_server(port, registry=registry)
