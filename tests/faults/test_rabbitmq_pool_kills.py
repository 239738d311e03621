"""Pool-child kills over RabbitMQ (issue 22 item 8): ``memory-worker daemon`` + a prefork Celery
worker on the real RabbitMQ at 127.0.0.1:5672, state in a throwaway PostgreSQL database, while the
logs grow; ``kill -9`` of the pool process holding a session lease (else a random one) at
reproducible random points. RabbitMQ hands the killed task's message back at once (late ack,
``task_reject_on_worker_lost``) and the next process takes the dead owner's lease at once, so the
store converges to exactly an embedded clean run's (waited for as a condition), no entry or edge
twice. The distributed fault suite runs the same kills, and the others, on Redis."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from cluster_support import (
    clean_run_dump,
    grow,
    kill_pool_child,
    reach_kill_point,
    start_prefork,
    throwaway_cluster,
    titled_sessions,
    wait_for,
)
from conftest import REPO
from fault_support import kills, rng

sys.path.insert(0, str(REPO / "benchmarks"))  # worker_dshgen, for the sessions and the clean run

pytestmark = pytest.mark.integration

REDIS_DB = 13  # not used by this broker; a cluster names one
RABBITMQ = "amqp://guest:guest@127.0.0.1:5672//"


def test_pool_child_kills_over_rabbitmq_converge_exactly(tmp_path: Path) -> None:
    root = tmp_path / "cluster"
    home = root / "dsh"
    writers = titled_sessions(home, "r", 2, 60)
    points = rng()
    with throwaway_cluster(
        root, "h22_rabbit", REDIS_DB, {"MEMORY_WORKER_BROKER_URL": RABBITMQ}
    ) as cluster:
        cluster.start("daemon", "daemon")
        start_prefork(cluster, "w1")
        for number in range(kills(3)):
            reach_kill_point(cluster, writers, writers, points, number)
            kill_pool_child(cluster, "w1", points)
        for writer in writers:
            grow(writer, 10, 99)
        expected = {f"msg-r-{i}-{n}" for i, w in enumerate(writers) for n in range(2 * w.turn_no)}
        wait_for(
            lambda: expected <= cluster.names("msg-") and cluster.settled(len(writers)),
            120,
            "the cluster to converge after the kills",
            every=0.2,
        )
        faulted = cluster.dump()
    names = [row["name"] for row in faulted["knowledge"]]
    assert len(names) == len(set(names))
    edges = [(s["head"], s["relation"], s["tail"]) for s in faulted["statements"]]
    assert len(edges) == len(set(edges))
    assert faulted == clean_run_dump(home, tmp_path / "clean")
