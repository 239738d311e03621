"""`memory-worker worker` runs with task events and heartbeats, so Flower sees workers and tasks:
the built argv has ``--task-events`` and not ``--without-heartbeat``, the Celery config sends task
events (and sent events from publishers), and a real worker on Redis emits heartbeats and the
task-received / task-succeeded events of a job it ran.

The event stream is the Redis database's: another run of this module on the same server (a second
checkout, a second copy of the suite) publishes into it too, so the test follows its own worker
(by hostname) and its own task (by queue, then task id), never the first event of a kind."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import uuid
from pathlib import Path
from typing import Any

import pytest
import redis
from celery_events_support import receiving
from redis_dbs import redis_db

from dsh_memory_worker.worker.commands.worker_cmd import Pool, celery_argv
from dsh_memory_worker.worker.run import tasks
from dsh_memory_worker.worker.settings import load_settings

REDIS_DB = redis_db("worker_events")  # tests/support/redis_dbs.py
BIN = Path(sys.executable).parent


def test_argv_sends_task_events_and_keeps_heartbeats() -> None:
    argv = celery_argv("q1", 3, Pool.solo, "INFO", "w@host")
    assert argv == [
        "worker",
        "--queues=q1",
        "--concurrency=3",
        "--pool=solo",
        "--loglevel=INFO",
        "--hostname=w@host",
        "--task-events",
        "--without-gossip",
        "--without-mingle",
    ]
    assert "--without-heartbeat" not in argv


def test_celery_config_sends_task_events() -> None:
    settings = load_settings(None, broker_url=f"redis://127.0.0.1:6379/{REDIS_DB}")
    app = tasks.configure(settings, queue="events-config")
    assert app.conf.worker_send_task_events is True
    assert app.conf.task_send_sent_event is True


@pytest.mark.integration
def test_running_worker_emits_heartbeats_and_task_events(tmp_path: Path) -> None:
    broker = f"redis://127.0.0.1:6379/{REDIS_DB}"
    queue = f"h11-events-{uuid.uuid4().hex[:8]}"
    node = f"events-{uuid.uuid4().hex[:6]}@{queue}"
    app = tasks.configure(load_settings(None, broker_url=broker), queue=queue)
    seen: dict[str, list[dict[str, Any]]] = {}
    online = threading.Event()  # the receiver is subscribed and the worker is up
    done = threading.Event()

    def on_event(event: dict[str, Any]) -> None:
        seen.setdefault(event["type"], []).append(event)
        if event.get("hostname") != node:
            return  # another worker's, e.g. of another run of this module on this database
        if event["type"] == "worker-heartbeat":
            online.set()
        if event["type"] == "task-succeeded":
            done.set()

    env = {
        **os.environ,
        "MEMORY_WORKER_BROKER_URL": broker,
        "MEMORY_WORKER_STATE_URL": f"sqlite:///{tmp_path / 'state.db'}",
        "MEMORY_WORKER_DATA_DIR": str(tmp_path / "data"),
        "MEMORY_WORKER_LITE_HOME": str(tmp_path / "lite"),
        "MEMORY_WORKER_DSH_HOME": str(tmp_path / "dsh"),
    }
    log = (tmp_path / "worker.log").open("wb")
    proc = subprocess.Popen(
        [str(BIN / "memory-worker"), "worker", "--pool", "solo", "--queue", queue, "--name", node],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        with receiving(app, on_event):
            # Events are not buffered: send the task once the worker's heartbeat arrived.
            assert online.wait(120), (
                "no heartbeat from the worker; log: "
                + (tmp_path / "worker.log").read_text(errors="replace")[-2000:]
            )
            tasks.enqueue("session_node", "no-such-session", "default")
            assert done.wait(120), (
                f"events seen: {sorted(seen)}; log: "
                + (tmp_path / "worker.log").read_text(errors="replace")[-2000:]
            )
    finally:
        proc.terminate()
        proc.wait(timeout=15)
        redis.Redis(db=REDIS_DB).delete(queue)
    (sent,) = [e for e in seen["task-sent"] if e.get("queue") == queue]
    assert sent["name"] == tasks.TASK_SESSION_NODE
    (received,) = [e for e in seen["task-received"] if e["uuid"] == sent["uuid"]]
    assert received["hostname"] == node
    assert received["name"] == tasks.TASK_SESSION_NODE
    (succeeded,) = [e for e in seen["task-succeeded"] if e["uuid"] == sent["uuid"]]
    assert succeeded["hostname"] == node
    assert "session not seen by the watcher yet" in succeeded["result"]
