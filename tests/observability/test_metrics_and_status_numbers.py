"""``memory-worker status --json`` and the Prometheus endpoint report the numbers the test
computes on its own: per-session and total logging lag (events appended since the last run),
consolidation lag, pending retractions, retraction records, model tokens (from the model
server's scripted usage), and the in-process counters of retractions and repairs."""

from __future__ import annotations

import json
import socket
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from canary_support import CanarySession, canary_reply, cli, cli_env, process, runtime_for
from model_server import ModelServer, Reply, model_server_fixture  # noqa: F401
from prometheus_client.parser import text_string_to_metric_families

from dsh_memory_worker.worker.observability import serve_metrics
from dsh_memory_worker.worker.watch.watcher import Watcher

pytestmark = pytest.mark.integration


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _scrape(port: int) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as reply:
        text = reply.read().decode()
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def _value(samples: dict[Any, float], name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def test_status_and_metrics_report_independently_computed_numbers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, model_server: ModelServer
) -> None:
    def responder(request: Any) -> Reply:
        reply = canary_reply(request)
        reply.usage = {"prompt_tokens": 100, "completion_tokens": 7}
        return reply

    model_server.responder = responder
    runtime = runtime_for(tmp_path, model_server, monkeypatch)
    a = CanarySession.start(tmp_path, "s-ma")
    b = CanarySession.start(tmp_path, "s-mb")
    a.turn("1")
    second = a.turn("2")
    b.turn("1")
    process(runtime)
    port = _free_port()
    serve_metrics(port, runtime.state, "default")
    first = _scrape(port)

    a.rewind(second.user_seq)
    process(runtime)  # retracts msg-s-ma-2 and -3, regenerates a's summary
    before_b = b.log.seq
    b.turn("2")  # six new events on disk, seen by the watcher but not logged yet
    Watcher(runtime, lambda *_: None).poll_once()
    second_scrape = _scrape(port)

    def delta(name: str, **labels: str) -> float:
        return _value(second_scrape, name, **labels) - _value(first, name, **labels)

    assert delta("memory_worker_retractions_total") == 2
    assert delta("memory_worker_repairs_total", kind="summary", outcome="regenerated") == 1
    assert delta("memory_worker_repairs_total", kind="work-unit", outcome="retracted") == 1
    assert delta("memory_worker_spans_processed_total", job="log_span") == 1
    # No per-session series (unbounded): the per-session numbers are `status`'s (below).
    assert not [key for key in second_scrape if dict(key[1]).get("session")]
    assert _value(second_scrape, "memory_worker_lag_events") == b.log.seq - before_b == 6
    assert _value(second_scrape, "memory_worker_consolidation_lag_events") == 0
    assert _value(second_scrape, "memory_worker_retractions_pending") == 0
    assert _value(second_scrape, "memory_worker_retractions_audited", outcome="retracted") == 2
    extraction = [r for r in model_server.requests if "<transcript>" in r.user_text]
    archive = [r for r in model_server.requests if "memory archivist" in r.user_text]
    assert len(extraction) == 3 and len(archive) == 2  # a, b, a regenerated; built + regenerated
    assert _value(
        second_scrape,
        "memory_worker_model_tokens",
        purpose="memory-consolidation",
        direction="input",
    ) == 100 * len(extraction)
    assert _value(
        second_scrape, "memory_worker_model_tokens", purpose="memory-cascade", direction="output"
    ) == 7 * len(archive)
    assert _value(second_scrape, "memory_worker_model_calls", purpose="memory-consolidation") == (
        len(extraction)
    )
    assert _value(second_scrape, "memory_worker_job_seconds_count", job="log_span") >= 3
    runtime.close()

    status = cli(["status", "--json"], cli_env(tmp_path, model_server))
    assert status.returncode == 0, status.stderr
    found = json.loads(status.stdout)
    rows = {row["session_id"]: row for row in found["sessions"]}
    assert rows["s-mb"]["durable_end_seq"] == b.log.seq
    assert rows["s-mb"]["last_logged_seq"] == before_b
    assert rows["s-mb"]["lag"] == 6 and rows["s-ma"]["lag"] == 0
    assert rows["s-ma"]["last_logged_seq"] == rows["s-ma"]["last_consolidated_seq"] == a.log.seq
    assert rows["s-ma"]["consolidation_lag"] == 0 and rows["s-ma"]["retractions_pending"] == 0
    assert found["total"]["lag"] == 6 and found["total"]["sessions"] == 2
    assert found["total"]["retractions"] == {"retracted": 2}
    assert found["total"]["model_tokens"]["memory-consolidation"] == {
        "input": 300,
        "output": 21,
        "reasoning": 0,
    }
    table = cli(["status"], cli_env(tmp_path, model_server))
    assert table.returncode == 0
    flat = " ".join(table.stdout.split())
    assert "s-mb" in flat and "total (2)" in flat and "cons. lag" in flat
