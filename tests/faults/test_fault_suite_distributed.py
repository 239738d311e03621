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
import random
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from cluster_support import Cluster, clean_run_dump, throwaway_cluster, wait_for
from conftest import REPO
from fault_support import children, kills, rng

sys.path.insert(0, str(REPO / "benchmarks"))
from redis_dbs import redis_db
from worker_dshgen import SessionLogWriter

pytestmark = pytest.mark.integration

REDIS_DB = redis_db("fault_suite_distributed")  # tests/support/redis_dbs.py
TARGETS = ("pool child", "worker", "daemon")


def _start_prefork(cluster: Cluster, name: str) -> subprocess.Popen[bytes]:
    return cluster.start(name, "worker", "--pool", "prefork", "--concurrency", "2",
                         "--name", f"{name}@{cluster.queue}")


def _leased_pids(cluster: Cluster) -> set[int]:
    """The pids of the Celery processes holding a session lease now."""
    with cluster.state.transaction() as repos:
        owners = [repos.leases.holder(f"session:{sid}") for sid in
                  (s.session_id for s in repos.sessions.list())]
    return {int(lease.owner.split(":")[2]) for lease in owners
            if lease is not None and lease.owner.startswith("celery:")}


def _serving(cluster: Cluster, name: str) -> bool:
    """Whether worker ``name`` has received a task since it was ready (Celery checks once, right
    after start-up, that no pool process died, and gives up if one did)."""
    text = (cluster.root / f"{name}.log").read_text(errors="replace")  # Cluster.start's log
    ready = text.find(" ready.")
    return ready >= 0 and " received" in text[ready:]


def _kill_pool_child(cluster: Cluster, name: str, points: random.Random) -> None:
    """SIGKILL a pool process of the worker ``name`` (one holding a session lease when there is
    one) and wait until its main process has replaced it."""
    main = cluster.procs[name].pid
    wait_for(lambda: _serving(cluster, name), 90, f"{name} to serve tasks")
    pool = wait_for(lambda: children(main), 60, "the pool processes")
    busy = [pid for pid in pool if pid in _leased_pids(cluster)]
    victim = busy[0] if busy else pool[points.randrange(len(pool))]
    os.kill(victim, signal.SIGKILL)
    wait_for(lambda: victim not in children(main) and len(children(main)) == 2, 60,
             "a new pool process")


def _grow(writer: SessionLogWriter, turns: int, tag: int) -> None:
    for i in range(turns):
        writer.turn(f"step {tag}.{i}: what next?", f"step {tag}.{i}: do the next thing")
    writer.flush()


def test_kill9_of_daemon_worker_and_pool_child_while_logs_grow(tmp_path: Path) -> None:
    root = tmp_path / "cluster"
    home = root / "dsh"
    writers = []
    for i in range(3):
        writer = SessionLogWriter(home, f"d-{i}", f"/home/dev/dist-{i % 2}")
        first = writer.turn("start the work", "started")
        writer.title(f"Distributed {i}", first.user_seq)
        _grow(writer, 120, 0)
        writers.append(writer)
    points = rng()
    strays: list[int] = []  # pool processes of a killed main, ended at the end of the test
    made: Counter[str] = Counter()
    with throwaway_cluster(root, "h12_dkill", REDIS_DB) as cluster:
        cluster.start("daemon", "daemon")
        prefork_name = "w1"
        prefork = _start_prefork(cluster, prefork_name)
        try:
            for number in range(kills(6)):
                target = TARGETS[number % len(TARGETS)]
                # Before a pool process is killed every log grows: its worker gets work.
                grown = writers if target == "pool child" else [
                    writers[points.randrange(len(writers))]]
                for writer in grown:
                    _grow(writer, points.randint(20, 80), number + 1)
                # A random point: a random number of entries written since the last kill, or
                # every entry the logs hold so far, whichever comes first.
                goal = min(len(cluster.names("msg-")) + points.randint(10, 150),
                           sum(2 * w.turn_no for w in writers))
                wait_for(lambda goal=goal: len(cluster.names("msg-")) >= goal, 120,
                         f"kill point {number}", every=0.02)
                if target == "pool child":
                    _kill_pool_child(cluster, prefork_name, points)
                elif target == "worker":
                    strays += children(prefork.pid)
                    prefork.kill()
                    assert prefork.wait(timeout=30) == -signal.SIGKILL
                    prefork_name = f"w1-{number}"
                    prefork = _start_prefork(cluster, prefork_name)
                else:
                    daemon = cluster.procs["daemon"]
                    daemon.kill()
                    assert daemon.wait(timeout=30) == -signal.SIGKILL
                    cluster.start("daemon", "daemon")
                made[target] += 1
            for writer in writers:  # the logs keep growing after the last kill
                _grow(writer, 10, 99)
            expected = {f"msg-d-{i}-{n}" for i, w in enumerate(writers)
                        for n in range(2 * w.turn_no)}
            # (The state database learns of the last growth only when the daemon reads it.)
            wait_for(lambda: expected <= cluster.names("msg-")
                     and cluster.settled(len(writers)), 180,
                     "the cluster to converge after the kills", every=0.2)
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
