"""Every Prometheus metric and the structured-log formatter, defined once.

In-process counters and histograms (job runs, spans processed, entries written, retractions,
repairs, task latency) are incremented where the work happens. The numbers that live in the
state database — per-session lag, pending retractions, audited retractions, model tokens — are
read from it at scrape time by :class:`StateCollector`, so every process (the embedded runner, a
Celery worker, the daemon) reports the same figures for them.

``log_json = true`` switches the ``memory_worker`` logger to one JSON object per line
(:class:`JsonFormatter`); otherwise every line goes through :class:`PrintableFormatter`.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
from collections.abc import Iterator
from typing import Any

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Histogram, start_http_server
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from memory.printable import printable

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
        from worker.figures import figures  # the one place that computes them

        lag = GaugeMetricFamily(
            "memory_worker_session_lag_events",
            "Events on disk not yet logged (durable end - logged watermark)", labels=["session"],
        )
        consolidation = GaugeMetricFamily(
            "memory_worker_session_consolidation_lag_events",
            "Logged events not yet consolidated (logged - consolidated watermark)",
            labels=["session"],
        )
        total_lag = GaugeMetricFamily("memory_worker_lag_events", "Total logging lag")
        total_consolidation = GaugeMetricFamily(
            "memory_worker_consolidation_lag_events", "Total consolidation lag"
        )
        pending = GaugeMetricFamily(
            "memory_worker_retractions_pending",
            "Repairs started and not finished, plus retractions the store refused",
        )
        audited = GaugeMetricFamily(
            "memory_worker_retractions_audited", "Retraction records by outcome",
            labels=["outcome"],
        )
        tokens = GaugeMetricFamily(
            "memory_worker_model_tokens",
            "Model tokens of the recorded model calls (the newest the model_calls table keeps), "
            "by purpose and direction", labels=["purpose", "direction"],
        )
        try:
            found = figures(self.state, self.shelf)
        except Exception:  # a scrape must not fail because the database is down
            return
        for row in found["sessions"]:
            if row["lag"] is not None:
                lag.add_metric([row["session_id"]], row["lag"])
            if row["consolidation_lag"] is not None:
                consolidation.add_metric([row["session_id"]], row["consolidation_lag"])
        total_lag.add_metric([], found["total"]["lag"])
        total_consolidation.add_metric([], found["total"]["consolidation_lag"])
        pending.add_metric([], found["total"]["retractions_pending"])
        for outcome, count in sorted(found["total"]["retractions"].items()):
            audited.add_metric([outcome], count)
        for purpose, counts in sorted(found["total"]["model_tokens"].items()):
            for direction, value in sorted(counts.items()):
                tokens.add_metric([purpose, direction], value)
        yield from (lag, consolidation, total_lag, total_consolidation, pending, audited, tokens)


_served: dict[int, Any] = {}
_collectors: dict[tuple[int, str], StateCollector] = {}


def serve_metrics(port: int, state: Any | None = None, shelf: str = "default",
                  registry: CollectorRegistry = REGISTRY) -> None:
    """Serve ``/metrics`` on ``port`` (once per process), with the state gauges when ``state``
    is given. Raises ``OSError`` when the port is taken."""
    if state is not None and (id(state), shelf) not in _collectors:
        collector = StateCollector(state, shelf)
        registry.register(collector)
        _collectors[(id(state), shelf)] = collector
    if port not in _served:
        _served[port] = start_http_server(port, registry=registry)


# ------------------------------------------------------------------------------------ logging

_STANDARD = frozenset(logging.LogRecord("", 0, "", 0, "", (), None).__dict__) | {"message"}


class PrintableFormatter(logging.Formatter):
    """A plain (or Rich) log line whose message has its control characters escaped
    (:func:`memory.printable.printable`): a session id holding a newline or an ANSI escape cannot
    forge a second line or rewrite the terminal. Tracebacks keep their lines."""

    def formatMessage(self, record: logging.LogRecord) -> str:
        safe = logging.makeLogRecord(record.__dict__)
        safe.message = printable(record.message)
        return super().formatMessage(safe)


class JsonFormatter(logging.Formatter):
    """One JSON object per record: ``time`` (UTC ISO-8601), ``level``, ``logger``, ``message``,
    ``exc`` when there is a traceback, and any ``extra=`` fields."""

    def format(self, record: logging.LogRecord) -> str:
        payload: dict[str, Any] = {
            "time": dt.datetime.fromtimestamp(record.created, dt.UTC).isoformat(
                timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key, value in record.__dict__.items():
            if key not in _STANDARD and not key.startswith("_"):
                payload[key] = value if isinstance(value, int | float | bool | None) else str(value)
        if record.exc_info:
            payload["exc"] = self.formatException(record.exc_info)
        return json.dumps(payload, ensure_ascii=False)
