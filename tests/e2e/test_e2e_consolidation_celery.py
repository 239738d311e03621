"""End to end, distributed: `memory-worker daemon` + a real `memory-worker worker` (Celery on Redis,
PostgreSQL state) consolidate live sessions through a local chat-completions server: a small
first turn stays below the token floor, a big second turn triggers the summary; a second session
of the project triggers the cascade's tier-2 archive; work units and model-call rows appear."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cluster_support import Cluster, throwaway_cluster, wait_for
from model_server import ModelServer, model_server_fixture  # noqa: F401
from redis_dbs import redis_db
from test_e2e_consolidation_embedded import scripted
from worker_dshgen import SessionLogWriter

from dsh_memory_worker.memory.entries import archive_name
from hypatia_lite.sqlitelib import sqlite3

pytestmark = pytest.mark.integration

REDIS_DB = redis_db("e2e_consolidation_celery")  # tests/support/redis_dbs.py
CWD = "/home/dev/celery-proj"


@pytest.fixture
def cluster(tmp_path: Path, model_server: ModelServer) -> Iterator[Cluster]:
    model_server.responder = scripted
    env = {
        "MEMORY_WORKER_IDLE_CLOSE_S": "600",
        "MEMORY_WORKER_CHECK_EVERY_TURNS": "1",
        "MEMORY_WORKER_MIN_NEW_TOKENS": "500",
        "MEMORY_WORKER_CASCADE_BATCH_SIZE": "2",
        "MEMORY_WORKER_MODEL_ROUTES": json.dumps(
            [
                {
                    "base_url": model_server.base_url,
                    "model": "deepseek-chat",
                    "api_key_env": "E2E_KEY",
                }
            ]
        ),
        "E2E_KEY": "sk-e2e-0000000000000000",
    }
    with throwaway_cluster(tmp_path, "h8_e2e", REDIS_DB, env) as c:
        c.start("daemon", "daemon")
        c.start_worker("w1")
        yield c


def names(cluster: Cluster, prefix: str) -> set[str]:
    """The store's names with ``prefix``; empty while the store file is still being created."""
    try:
        return cluster.names(prefix)
    except sqlite3.OperationalError:
        return set()


def statements(cluster: Cluster) -> set[tuple[str, str, str]]:
    dump: dict[str, Any] = cluster.dump()
    return {(r["head"], r["relation"], r["tail"]) for r in dump["statements"]}


def test_live_sessions_are_consolidated_by_celery_workers(
    cluster: Cluster, model_server: ModelServer
) -> None:
    first = SessionLogWriter(cluster.home, "c-one", CWD)
    first.turn("hello", "hi")
    first.flush()
    wait_for(
        lambda: {"msg-c-one-0", "msg-c-one-1"} <= names(cluster, "msg-"),
        60,
        "the first turn to be logged",
    )

    def judged() -> Any:
        with cluster.state.transaction() as repos:
            progress = repos.progress.get("default", "c-one")
        return progress if progress.pending_tokens > 0 else None

    # The gate ran, recorded the waiting tokens, and said no: below the token floor.
    progress = wait_for(judged, 30, "the turn-end gate to judge the first turn")
    assert (progress.last_consolidated_seq, progress.pending_tokens) == (0, 3)
    assert not names(cluster, "sum")

    first.turn("b" * 2400, "a long answer")
    first.flush()
    one = f"sum-c-one-0-{first.seq}"
    wait_for(lambda: one in names(cluster, "sum-"), 30, "the first session's summary")

    second = SessionLogWriter(cluster.home, "c-two", CWD)
    second.turn("c" * 2400, "another long answer")
    second.flush()
    two = f"sum-c-two-0-{second.seq}"
    archive = archive_name(2, [one, two])
    wanted = {(archive, "summary", one), (archive, "summary", two)}

    def cascaded() -> set[tuple[str, str, str]] | None:
        # The cascade writes the archive entry, then its edges, then the work unit and its
        # edges: wait for the last of them, not for the first (a reader can come in between).
        edges = statements(cluster)
        units = names(cluster, "wu-")
        done = wanted <= edges and any(
            {(u, "derivedFrom", one), (u, "derivedFrom", two)} <= edges for u in units
        )
        return edges if done else None

    edges = wait_for(cascaded, 30, "the tier-2 archive, its edges and the work unit's")
    assert {(one, "summary", f"msg-c-one-{n}") for n in range(4)} <= edges
    assert {(archive, "summary", one), (archive, "summary", two)} <= edges
    (unit,) = names(cluster, "wu-")
    assert {(unit, "derivedFrom", one), (unit, "derivedFrom", two)} <= edges
    with cluster.state.transaction() as repos:
        calls = repos.model_calls.recent()
        assert repos.progress.get("default", "c-one").last_consolidated_seq == first.seq
    assert {c.purpose for c in calls} == {"memory-consolidation", "memory-cascade"}
    assert all(c.outcome == "ok" for c in calls)
