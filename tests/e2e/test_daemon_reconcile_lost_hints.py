"""Distributed mode never loses owed consolidation (Celery messages are hints): with a real Redis
broker and PostgreSQL state, a ``consolidate`` hint purged from the queue after an idle-close is
re-sent by the reconcile loop and a real ``memory-worker worker`` completes it; a reconsolidation
request queued without ``--wait`` and never hinted is found by a running ``memory-worker daemon``
and consolidated by a real worker."""

from __future__ import annotations

import base64
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from cluster_support import Cluster, throwaway_cluster, wait_for
from conftest import REPO
from model_server import ModelServer, model_server_fixture  # noqa: F401
from test_e2e_consolidation_embedded import scripted

from dsh_memory_worker.worker.commands.daemon import BrokerHints
from dsh_memory_worker.worker.jobs.guard import run_job
from dsh_memory_worker.worker.jobs.reconsolidate import request_reconsolidation
from dsh_memory_worker.worker.jobs.runtime import owe_consolidation
from dsh_memory_worker.worker.run import tasks
from dsh_memory_worker.worker.watch.watcher import Watcher

sys.path.insert(0, str(REPO / "benchmarks"))
from redis_dbs import redis_db
from worker_dshgen import SessionLogWriter, embedded_runtime

pytestmark = pytest.mark.integration

REDIS_DB = redis_db("daemon_reconcile_lost_hints")  # tests/support/redis_dbs.py
SHELF = "default"
CWD = "/home/dev/lost-hints"
KEY_ENV = "LOST_HINTS_KEY"


@pytest.fixture
def cluster(tmp_path: Path, model_server: ModelServer) -> Iterator[Cluster]:
    model_server.responder = scripted
    env = {
        "MEMORY_WORKER_IDLE_CLOSE_S": "600",
        "MEMORY_WORKER_CASCADE_ENABLED": "false",
        "MEMORY_WORKER_MODEL_ROUTES": json.dumps(
            [{"base_url": model_server.base_url, "model": "deepseek-chat", "api_key_env": KEY_ENV}]
        ),
        KEY_ENV: "sk-lost-hints-000000000000",
    }
    with throwaway_cluster(tmp_path, "h11_reconcile", REDIS_DB, env) as c:
        yield c


def local_runtime(cluster: Cluster, monkeypatch: pytest.MonkeyPatch, *, force_idle: bool) -> Any:
    """A runtime on the cluster's state, store and DSH home (what the daemon process builds)."""
    monkeypatch.setenv(KEY_ENV, cluster.env[KEY_ENV])
    return embedded_runtime(
        cluster.root,
        force_idle=force_idle,
        dsh_home=cluster.home,
        lite_home=cluster.lite,
        state_url=cluster.state_url,
        broker_url=cluster.env["MEMORY_WORKER_BROKER_URL"],
        model_routes=json.loads(cluster.env["MEMORY_WORKER_MODEL_ROUTES"]),
        cascade_enabled=False,
        idle_close_s=600,
    )


def queued_hints(queue: str) -> list[tuple[str, ...]]:
    """``(job, session id, shelf)`` of every message waiting in the Redis queue."""
    hints = []
    for raw in redis.Redis(db=REDIS_DB).lrange(queue, 0, -1):
        message = json.loads(raw)
        args, _kwargs, _embed = json.loads(base64.b64decode(message["body"]))
        task = message["headers"]["task"]
        hints.append(tuple(args) if task == tasks.TASK_JOB else (task.split(".")[-1], *args))
    return sorted(hints)


def consolidated(cluster: Cluster, sid: str) -> int:
    with cluster.state.transaction() as repos:
        return repos.progress.get(SHELF, sid).last_consolidated_seq


def test_purged_consolidate_hint_is_re_sent_by_reconcile_and_completed(
    cluster: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    writer = SessionLogWriter(cluster.home, "lost-one", CWD)
    writer.turn("which port does the API use", "8443, behind the proxy")
    writer.turn("and the health check", "GET /healthz every 10 s")
    writer.flush()
    end = writer.seq

    runtime = local_runtime(cluster, monkeypatch, force_idle=True)
    try:
        tasks.configure(runtime.settings, queue=cluster.queue)
        owe_consolidation(runtime, tasks.enqueue)  # jobs owe consolidation to the real broker
        Watcher(runtime, BrokerHints()).poll_once()
        assert queued_hints(cluster.queue) == [("log_span", "lost-one", SHELF)]
        redis.Redis(db=REDIS_DB).delete(cluster.queue)
        for _ in range(3):  # log the span, then the idle-close owes the consolidation
            run_job(runtime, "log_span", "lost-one", SHELF)
        with cluster.state.transaction() as repos:
            assert repos.sessions.get("lost-one").closed_at is not None
            assert repos.progress.get(SHELF, "lost-one").last_logged_seq == end
        assert ("consolidate", "lost-one", SHELF) in queued_hints(cluster.queue)

        redis.Redis(db=REDIS_DB).delete(cluster.queue)  # the hint is lost
        assert queued_hints(cluster.queue) == []

        watcher = Watcher(runtime, BrokerHints())  # what a (restarted) daemon runs
        assert watcher.reconcile() == 1
        assert queued_hints(cluster.queue) == [("consolidate", "lost-one", SHELF)]
        assert watcher.reconcile() == 0  # sent already; the watermarks did not move since
        assert consolidated(cluster, "lost-one") == 0

        cluster.start_worker("w1")
        wait_for(
            lambda: consolidated(cluster, "lost-one") == end,
            60,
            "the worker to consolidate the re-sent hint",
        )
        assert f"sum-lost-one-0-{end}" in cluster.names("sum-")
        assert watcher.reconcile() == 0
        assert queued_hints(cluster.queue) == []
    finally:
        runtime.close()


def test_running_daemon_hints_a_queued_request_whose_message_was_lost(
    cluster: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    writer = SessionLogWriter(cluster.home, "lost-two", CWD)
    writer.turn("where are the backups", "s3://team-backups, nightly")
    writer.flush()
    end = writer.seq

    runtime = local_runtime(cluster, monkeypatch, force_idle=False)
    try:
        Watcher(runtime, lambda *_: None).poll_once()
        run_job(runtime, "log_span", "lost-two", SHELF)  # logged by a worker; session still open
        result = request_reconsolidation(runtime, "lost-two", SHELF)  # no --wait; no hint sent
        assert (result.queued, result.from_seq, result.to_seq) == (True, 0, end)
        with cluster.state.transaction() as repos:
            assert repos.sessions.get("lost-two").closed_at is None
    finally:
        runtime.close()
    assert queued_hints(cluster.queue) == []

    cluster.start("daemon", "daemon")
    cluster.start_worker("w1")
    wait_for(
        lambda: consolidated(cluster, "lost-two") == end,
        60,
        "the daemon's reconcile to hint the queued request and a worker to run it",
    )
    assert f"sum-lost-two-0-{end}" in cluster.names("sum-")
    with cluster.state.transaction() as repos:
        outcomes = [
            e.outcome for e in repos.audit.entries(session_id="lost-two", action="reconsolidate")
        ]
    assert outcomes == ["queued", "done"]
