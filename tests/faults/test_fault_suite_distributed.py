"""Fault suite, kills (distributed): ``memory-worker daemon`` + a prefork Celery worker (two pool
processes) on Redis, state in a throwaway PostgreSQL database, while the logs
grow. ``kill -9`` of the daemon, of the prefork worker's main process and of one of its pool
processes (the one holding a session lease when there is one) at reproducible random points —
after a random number of entries written since the previous kill — each restarted (the pool
replaces its own child); then the store converges to exactly an embedded clean run's over the
same logs (full dump) with no entry or edge twice. The CI form makes 6 kills;
``MEMORY_WORKER_FAULT_KILLS`` / ``MEMORY_WORKER_FAULT_SEED`` scale and move them as in the
embedded suite."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from collections import Counter
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
from fault_support import children, kills, rng

sys.path.insert(0, str(REPO / "benchmarks"))  # worker_dshgen, for the sessions and the clean run
from redis_dbs import redis_db

pytestmark = pytest.mark.integration

REDIS_DB = redis_db("fault_suite_distributed")  # tests/support/redis_dbs.py
TARGETS = ("pool child", "worker", "daemon")


def test_kill9_of_daemon_worker_and_pool_child_while_logs_grow(tmp_path: Path) -> None:
    root = tmp_path / "cluster"
    home = root / "dsh"
    writers = titled_sessions(home, "d", 3, 120)
    points = rng()
    strays: list[int] = []  # pool processes of a killed main, ended at the end of the test
    made: Counter[str] = Counter()
    with throwaway_cluster(root, "h12_dkill", REDIS_DB) as cluster:
        cluster.start("daemon", "daemon")
        prefork_name = "w1"
        prefork = start_prefork(cluster, prefork_name)
        try:
            for number in range(kills(6)):
                target = TARGETS[number % len(TARGETS)]
                # Before a pool process is killed every log grows: its worker gets work.
                grown = (
                    writers if target == "pool child" else [writers[points.randrange(len(writers))]]
                )
                reach_kill_point(cluster, writers, grown, points, number)
                if target == "pool child":
                    kill_pool_child(cluster, prefork_name, points)
                elif target == "worker":
                    strays += children(prefork.pid)
                    prefork.kill()
                    assert prefork.wait(timeout=30) == -signal.SIGKILL
                    prefork_name = f"w1-{number}"
                    prefork = start_prefork(cluster, prefork_name)
                else:
                    daemon = cluster.procs["daemon"]
                    daemon.kill()
                    assert daemon.wait(timeout=30) == -signal.SIGKILL
                    cluster.start("daemon", "daemon")
                made[target] += 1
            for writer in writers:  # the logs keep growing after the last kill
                grow(writer, 10, 99)
            expected = {
                f"msg-d-{i}-{n}" for i, w in enumerate(writers) for n in range(2 * w.turn_no)
            }
            # (The state database learns of the last growth only when the daemon reads it.)
            wait_for(
                lambda: expected <= cluster.names("msg-") and cluster.settled(len(writers)),
                180,
                "the cluster to converge after the kills",
                every=0.2,
            )
            faulted = cluster.dump()
        finally:
            for pid in strays:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
    assert sum(made.values()) == kills(6) and set(made) == set(TARGETS)
    names = [row["name"] for row in faulted["knowledge"]]
    assert len(names) == len(set(names))
    edges = [(s["head"], s["relation"], s["tail"]) for s in faulted["statements"]]
    assert len(edges) == len(set(edges))
    assert faulted == clean_run_dump(home, tmp_path / "clean")
