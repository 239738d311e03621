"""End to end, distributed: `memory-worker daemon` + two real `memory-worker worker` processes
(Celery on Redis, state in a throwaway PostgreSQL database) produce the same store as an embedded
clean run; the two workers never write the same entry twice; `kill -9` of the worker in the middle
of a long session and a restart converge to exactly a clean run's store (full dumps); a turn
appended to a followed log is written within seconds; a withdrawal appended after its messages
were written retracts them and records it."""

from __future__ import annotations

import os
import re
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_fork import run_cli
from cluster_support import Cluster, clean_run_dump, throwaway_cluster, wait_for
from conftest import REPO

sys.path.insert(0, str(REPO / "benchmarks"))
from redis_dbs import redis_db
from worker_dshgen import SessionLogWriter

pytestmark = pytest.mark.integration

REDIS_DB = redis_db("e2e_distributed")  # tests/support/redis_dbs.py
CWD = "/home/dev/dsh-demo"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    root = tmp_path_factory.mktemp("distributed")
    run_cli(["demo-home", str(root / "dsh")], timeout=120).check_returncode()
    live = SessionLogWriter(root / "dsh", "g-live", CWD)
    first = live.turn("remember the build flag", "noted: --release")
    live.title("Build flags", first.user_seq)
    live.turn("and the target", "x86_64")
    live.flush()
    with throwaway_cluster(root, "h7_e2e", REDIS_DB) as c:
        c.live = live  # type: ignore[attr-defined]
        c.start("daemon", "daemon")
        c.start_worker("w1")
        c.start_worker("w2")
        yield c


def test_distributed_run_equals_an_embedded_clean_run(cluster: Cluster, tmp_path: Path) -> None:
    wait_for(lambda: cluster.settled(9), 60, "the daemon and workers to log every session")
    assert "msg-g-live-3" in cluster.names()
    assert cluster.dump() == clean_run_dump(cluster.home, tmp_path)


def test_two_workers_never_write_the_same_entry_twice(cluster: Cluster) -> None:
    logs = cluster.worker_logs()
    written = [int(n) for n in re.findall(r" written=(\d+)", logs)]
    duplicates = [int(n) for n in re.findall(r" duplicates=(\d+)", logs)]
    assert written and sum(duplicates) == 0
    assert sum(written) == len(cluster.dump()["knowledge"])


def test_an_appended_turn_is_written_within_seconds(cluster: Cluster) -> None:
    live: SessionLogWriter = cluster.live  # type: ignore[attr-defined]
    turn = live.turn("which flag again?", "--release")
    live.flush()
    started = time.monotonic()
    wait_for(
        lambda: {"msg-g-live-4", "msg-g-live-5"} <= cluster.names("msg-g-live-"),
        10,
        "the appended turn's entries",
        every=0.02,
    )
    assert time.monotonic() - started < 5
    assert turn.turn_end_seq + 1 == live.seq


def test_a_late_withdrawal_retracts_written_entries_and_records_it(cluster: Cluster) -> None:
    live: SessionLogWriter = cluster.live  # type: ignore[attr-defined]
    # Turn 3 (ordinals 4, 5) is withdrawn after it was written; a new turn follows.
    marker = live.rewind(next(s for s in live.surface if s >= live.seq - 6))
    live.turn("forget that", "forgotten")
    live.flush()
    kept = {f"msg-g-live-{n}" for n in (0, 1, 2, 3, 6, 7)}
    wait_for(lambda: cluster.names("msg-g-live-") == kept, 15, "the withdrawn entries to go")

    def retractions() -> list[tuple[str, int, str, str]]:
        with cluster.state.transaction() as repos:
            audit = repos.audit.retractions(session_id="g-live")
        return [(a.entry, a.marker_seq, a.source_kind, a.outcome) for a in audit]

    # A retraction's audit row commits just after its store delete: wait for both rows, then
    # check them exactly (a busy machine widens that gap; it never reorders or drops a row).
    wait_for(lambda: len(retractions()) >= 2, 15, "both retractions to be recorded")
    assert retractions() == [(f"msg-g-live-{n}", marker, "dsh-rewind", "retracted") for n in (4, 5)]
    edges = {s["head"] for s in cluster.dump()["statements"] if s["tail"] == "session-g-live"}
    assert edges == {f"msg-g-live-{n}" for n in (0, 1, 2, 3, 6, 7)}


def test_kill_9_mid_session_then_restart_converges_to_a_clean_run(
    cluster: Cluster, tmp_path: Path
) -> None:
    long = SessionLogWriter(cluster.home, "g-long", CWD)
    first = long.turn("start a long session", "ok")
    long.title("A long session", first.user_seq)
    for i in range(4000):
        long.turn(f"question {i}", f"answer {i}")
    long.flush()
    expected = 2 * 4001

    def progress() -> tuple[int, int]:
        return len(cluster.names("msg-g-long-")), cluster.edges("session-g-long")

    def mid_job() -> int | None:
        """The pid of the worker holding the session's lease while its writes are half done."""
        entries, edges = progress()
        if not (300 <= entries < expected or (entries == expected and 0 < edges < expected)):
            return None
        with cluster.state.transaction() as repos:
            lease = repos.leases.holder("session:g-long")
        if lease is None or not lease.owner.startswith("celery:"):
            return None
        return int(lease.owner.split(":")[2])  # celery:<host>:<pid>:<random>

    pid = wait_for(mid_job, 60, "a worker to be mid-way through the long session", every=0.01)
    victim = next(name for name, p in cluster.procs.items() if p.pid == pid)
    os.kill(pid, signal.SIGKILL)
    assert cluster.procs[victim].wait(timeout=10) == -signal.SIGKILL
    entries, edges = progress()
    assert entries < expected or edges < expected  # the killed job left its work half done
    cluster.start_worker(f"{victim}b")
    wait_for(lambda: cluster.settled(10), 90, "the restarted cluster to converge", every=0.2)
    assert len(cluster.names("msg-g-long-")) == expected
    assert cluster.dump() == clean_run_dump(cluster.home, tmp_path)
