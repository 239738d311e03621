"""A real ``memory-worker worker`` (prefork pool, concurrency 2) on Redis, operated as a Celery
service: ``celery -A dsh_memory_worker inspect ping`` reaches it through the broker configured in
the
environment (not Celery's default amqp), each job kind arrives under its own task name in the
event stream Flower reads, and the worker's metrics port — served by the parent, while the jobs
run in the pool's child processes — counts exactly the jobs that ran."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.request
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import redis
from celery_events_support import receiving
from prometheus_client.parser import text_string_to_metric_families
from redis_dbs import redis_db

from dsh_memory_worker.worker.run import tasks
from dsh_memory_worker.worker.settings import load_settings

pytestmark = pytest.mark.integration

REDIS_DB = redis_db("worker_prefork_operations")  # tests/support/redis_dbs.py
BIN = Path(sys.executable).parent
JOBS = {"log_span": 3, "session_node": 2, "consolidate": 1, "cascade": 1, "retract": 1}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _job_runs(port: int) -> dict[tuple[str, str], float]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as reply:
            text = reply.read().decode()
    except OSError:
        return {}
    return {
        (s.labels["job"], s.labels["status"]): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name == "memory_worker_job_runs_total"
    }


def _wait(condition: Any, deadline_s: float, what: str, log: Path) -> Any:
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        found = condition()
        if found:
            return found
        time.sleep(0.3)
    raise AssertionError(f"{what}; worker log: {log.read_text(errors='replace')[-3000:]}")


def test_prefork_worker_answers_ping_names_each_job_and_counts_every_child(
    tmp_path: Path,
) -> None:
    broker = f"redis://127.0.0.1:6379/{REDIS_DB}"
    queue = f"h-prefork-{uuid.uuid4().hex[:8]}"
    node = f"prefork-{uuid.uuid4().hex[:6]}@{queue}"
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORY_WORKER_")}
    env.update(
        {
            "MEMORY_WORKER_BROKER_URL": broker,
            "MEMORY_WORKER_STATE_URL": f"sqlite:///{tmp_path / 'state.db'}",
            "MEMORY_WORKER_DATA_DIR": str(tmp_path / "data"),
            "MEMORY_WORKER_LITE_HOME": str(tmp_path / "lite"),
            "MEMORY_WORKER_DSH_HOME": str(tmp_path / "dsh"),
            "MEMORY_WORKER_CONFIG": "",
            "PROMETHEUS_MULTIPROC_DIR": str(tmp_path / "metrics"),
        }
    )
    log_path = tmp_path / "worker.log"
    log = log_path.open("wb")
    proc = subprocess.Popen(
        [
            str(BIN / "memory-worker"),
            "worker",
            "--pool",
            "prefork",
            "--concurrency",
            "2",
            "--queue",
            queue,
            "--name",
            node,
            "--metrics-port",
            str(port),
        ],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    app = tasks.configure(load_settings(None, broker_url=broker), queue=queue)
    seen: list[dict[str, Any]] = []
    try:

        def ping() -> str | None:
            done = subprocess.run(
                [
                    str(BIN / "celery"),
                    "-A",
                    "dsh_memory_worker.worker.run.tasks",
                    "inspect",
                    "ping",
                    "-d",
                    node,
                    "--timeout",
                    "3",
                ],
                env=env,
                capture_output=True,
                text=True,
                timeout=60,
                cwd=tmp_path,
            )
            return done.stdout if done.returncode == 0 and "pong" in done.stdout else None

        answer = _wait(ping, 120, "celery inspect ping got no pong", log_path)
        assert f"{node}: OK" in answer and "pong" in answer

        succeeded = threading.Event()
        bound = threading.Event()  # an event of our worker's arrived: the receiver's queue is bound
        expected = sum(JOBS.values())

        def on_event(event: dict[str, Any]) -> None:
            if event.get("hostname") == node:
                bound.set()
            if event.get("hostname") == node and event["type"].startswith("task-"):
                seen.append(event)
                if sum(1 for e in seen if e["type"] == "task-succeeded") >= expected:
                    succeeded.set()

        with receiving(app, on_event, timeout_s=60):
            # Only events sent after the receiver bound its queue arrive: send the tasks once one
            # of the worker's own (its heartbeat, every 2 s) has.
            assert bound.wait(120), "no event of the worker: " + log_path.read_text()[-3000:]
            for job, count in JOBS.items():
                for n in range(count):
                    tasks.enqueue(job, f"no-such-{job}-{n}", "default")
            assert succeeded.wait(90), (
                f"events: {Counter(e['type'] for e in seen)}; log: "
                + (log_path.read_text(errors="replace")[-3000:])
            )

        wanted = {(job, "skipped"): float(count) for job, count in JOBS.items()}
        runs = _wait(
            lambda: (r := _job_runs(port)) == wanted and r,
            30,
            f"metrics port never showed {wanted} (last: {_job_runs(port)})",
            log_path,
        )
        assert runs == wanted
        # The jobs ran in the pool's children: each wrote its own counter file beside the
        # parent's, and the parent's port summed them.
        files = (tmp_path / "metrics").glob("counter_*.db")
        writers = {int(p.stem.rsplit("_", 1)[1]) for p in files}
        assert writers - {proc.pid}
    finally:
        proc.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=30)
        if proc.poll() is None:
            proc.kill()
        redis.Redis(db=REDIS_DB).delete(queue)
    received = Counter(e["name"] for e in seen if e["type"] == "task-received")
    assert received == {f"memory_worker.{job}": count for job, count in JOBS.items()}
