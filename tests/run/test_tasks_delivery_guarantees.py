"""The Celery app is configured for at-least-once delivery the pipeline can absorb (late acks,
prefetch 1, redelivery of a lost worker's task, visibility timeout above the longest task,
bounded exponential backoff with jitter), and a task message carries only the session id and the
shelf — on Redis and, by URL, on RabbitMQ."""

from __future__ import annotations

import base64
import json
import uuid
from typing import Any

import pytest
import redis
from kombu import Connection
from redis_dbs import redis_db

from dsh_memory_worker.worker.run import tasks
from dsh_memory_worker.worker.settings import load_settings

REDIS_DB = redis_db("tasks_delivery_guarantees")  # tests/support/redis_dbs.py


def test_delivery_settings() -> None:
    settings = load_settings(None, broker_url=f"redis://127.0.0.1:6379/{REDIS_DB}", lease_ttl_s=300)
    app = tasks.configure(settings, queue="q-config")
    conf = app.conf
    assert conf.task_acks_late is True
    assert conf.task_reject_on_worker_lost is True
    assert conf.worker_prefetch_multiplier == 1
    assert conf.task_default_queue == "q-config"
    assert conf.task_time_limit == 330
    assert conf.broker_transport_options["visibility_timeout"] > conf.task_time_limit
    assert conf.task_serializer == "json"
    assert tasks.log_span_task.name == "memory_worker.log_span"
    assert tasks.session_node_task.name == "memory_worker.session_node"


def test_backoff_is_exponential_with_jitter_and_capped() -> None:
    for retries, base in ((0, 5.0), (1, 5.0), (3, 5.0)):
        ceiling = base * 2**retries
        samples = {tasks.backoff_s(retries, base) for _ in range(50)}
        assert all(0.5 * ceiling <= s < 1.5 * ceiling for s in samples)
        assert len(samples) > 1
    assert tasks.backoff_s(30, 5.0) < 1.5 * 600


def _body(message: dict[str, Any]) -> Any:
    return json.loads(base64.b64decode(message["body"]))


@pytest.mark.integration
def test_a_redis_task_message_carries_only_session_and_shelf() -> None:
    queue = f"h7-msg-{uuid.uuid4().hex[:8]}"
    settings = load_settings(None, broker_url=f"redis://127.0.0.1:6379/{REDIS_DB}")
    tasks.configure(settings, queue=queue)
    client = redis.Redis(db=REDIS_DB)
    try:
        tasks.enqueue("log_span", "sess-1", "default")
        tasks.enqueue("session_node", "sess-1", "work")
        raw = [json.loads(item) for item in reversed(client.lrange(queue, 0, -1))]
    finally:
        client.delete(queue)
    assert [m["headers"]["task"] for m in raw] == [
        "memory_worker.log_span",
        "memory_worker.session_node",
    ]
    assert [_body(m)[0] for m in raw] == [["sess-1", "default"], ["sess-1", "work"]]
    assert all(_body(m)[1] == {} for m in raw)


@pytest.mark.integration
def test_rabbitmq_works_by_url() -> None:
    queue = f"h7-amqp-{uuid.uuid4().hex[:8]}"
    url = "amqp://guest:guest@127.0.0.1:5672//"
    tasks.configure(load_settings(None, broker_url=url), queue=queue)
    tasks.enqueue("log_span", "sess-2", "default")
    with Connection(url) as conn:
        simple = conn.SimpleQueue(queue)
        try:
            message = simple.get(timeout=10)
            headers, payload = message.headers, message.payload
            message.ack()
        finally:
            simple.close()
            conn.default_channel.queue_delete(queue)
    assert headers["task"] == "memory_worker.log_span"
    assert payload[0] == ["sess-2", "default"]


def test_an_unreachable_broker_is_one_line_and_never_blocks_the_watcher(
    caplog: pytest.LogCaptureFixture,
) -> None:
    import logging
    import time

    from dsh_memory_worker.worker.commands.daemon import BrokerHints

    tasks.configure(load_settings(None, broker_url="redis://127.0.0.1:1/0"), queue="q-down")
    hints = BrokerHints(retry_after_s=60)
    caplog.set_level(logging.WARNING, logger="worker")
    started = time.monotonic()
    for n in range(50):
        hints("log_span", f"s-{n}", "default")
    assert time.monotonic() - started < 10
    assert (hints.sent, hints.dropped) == (0, 50)
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 1 and "cannot send hints to the broker" in lines[0]


@pytest.mark.integration
def test_each_job_kind_has_its_task_and_other_jobs_travel_by_name() -> None:
    queue = f"h7-job-{uuid.uuid4().hex[:8]}"
    tasks.configure(
        load_settings(None, broker_url=f"redis://127.0.0.1:6379/{REDIS_DB}"), queue=queue
    )
    client = redis.Redis(db=REDIS_DB)
    try:
        for job in ("consolidate", "cascade", "retract", "some_registered_job"):
            tasks.enqueue(job, "sess-3", "default")
        raw = [json.loads(item) for item in reversed(client.lrange(queue, 0, -1))]
    finally:
        client.delete(queue)
    assert [m["headers"]["task"] for m in raw] == [
        "memory_worker.consolidate",
        "memory_worker.cascade",
        "memory_worker.retract",
        "memory_worker.job",
    ]
    assert [_body(m)[0] for m in raw] == [
        ["sess-3", "default"],
        ["sess-3", "default"],
        ["sess-3", "default"],
        ["some_registered_job", "sess-3", "default"],
    ]
