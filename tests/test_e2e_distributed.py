"""End to end, distributed: `memory-worker daemon` + two real `memory-worker worker` processes
(Celery on Redis, state in a throwaway PostgreSQL database) produce the same store as an embedded
clean run; the two workers never write the same entry twice; `kill -9` of the worker in the middle
of a long session and a restart converge to exactly a clean run's store (full dumps); a turn
appended to a followed log is written within seconds; a withdrawal appended after its messages
were written retracts them and records it."""

from __future__ import annotations

import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
import redis
from conftest import REPO

from memory.store.lite import db, shelves
from memory.store.lite.store import LiteStore
from worker.runner import InProcessRunner
from worker.state.database import StateDB
from worker.watch import Watcher

sys.path.insert(0, str(REPO / "benchmarks"))
from worker_dshgen import SessionLogWriter, embedded_runtime

pytestmark = pytest.mark.integration

BIN = Path(sys.executable).parent
PG_ADMIN = "postgresql://postgres@127.0.0.1:5432/postgres"
REDIS_DB = 13
CWD = "/home/dev/dsh-demo"


def wait_for(check: Callable[[], Any], timeout: float, what: str, every: float = 0.1) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(every)


class Cluster:
    def __init__(self, root: Path, state_url: str, queue: str) -> None:
        self.root = root
        self.state_url = state_url
        self.queue = queue
        self.home = root / "dsh"
        self.lite = root / "lite"
        self.env = {
            **os.environ,
            "MEMORY_WORKER_STATE_URL": state_url,
            "MEMORY_WORKER_BROKER_URL": f"redis://127.0.0.1:6379/{REDIS_DB}",
            "MEMORY_WORKER_LITE_HOME": str(self.lite),
            "MEMORY_WORKER_DSH_HOME": str(self.home),
            "MEMORY_WORKER_DATA_DIR": str(root / "data"),
            "MEMORY_WORKER_POLL_INTERVAL_S": "0.2",
            "MEMORY_WORKER_RECONCILE_INTERVAL_S": "2",
            "MEMORY_WORKER_IDLE_CLOSE_S": "3",
            "MEMORY_WORKER_LEASE_TTL_S": "5",
            "MEMORY_WORKER_RETRY_BACKOFF_S": "0.5",
            "MEMORY_WORKER_LOG_LEVEL": "INFO",
        }
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.state = StateDB.open(state_url)  # migrate before any process starts

    def start(self, name: str, *args: str) -> subprocess.Popen[bytes]:
        log = (self.root / f"{name}.log").open("wb")
        proc = subprocess.Popen(
            [str(BIN / "memory-worker"), *args, "--queue", self.queue],
            env=self.env, stdout=log, stderr=subprocess.STDOUT,
        )
        self.procs[name] = proc
        return proc

    def start_worker(self, name: str) -> subprocess.Popen[bytes]:
        return self.start(name, "worker", "--pool", "solo", "--name", f"{name}@{self.queue}")

    def stop(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.terminate()
        for proc in self.procs.values():
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
        self.state.dispose()

    def lag(self) -> dict[str, int]:
        with self.state.transaction() as repos:
            progress = {p.session_id: p for p in repos.progress.list("default")}
            out = {}
            for s in repos.sessions.list():
                logged = progress[s.session_id].last_logged_seq if s.session_id in progress else 0
                out[s.session_id] = s.durable_end_seq - max(logged, s.inherited_cut)
        return out

    def names(self, prefix: str = "") -> set[str]:
        try:
            path = shelves.resolve(shelves.lite_home(self.lite), "default") / db.DB_FILE
        except shelves.ShelfError:
            return set()
        if not path.exists():
            return set()
        with sqlite3.connect(path) as conn:
            rows = conn.execute("SELECT name FROM knowledge WHERE name LIKE ?", (prefix + "%",))
            return {row[0] for row in rows}

    def edges(self, tail: str) -> int:
        try:
            path = shelves.resolve(shelves.lite_home(self.lite), "default") / db.DB_FILE
        except shelves.ShelfError:
            return 0
        with sqlite3.connect(path) as conn:
            return int(conn.execute("SELECT count(*) FROM statement WHERE tail = ?",
                                    (tail,)).fetchone()[0])

    def dump(self) -> dict[str, Any]:
        with LiteStore("default", home=self.lite) as store:
            return store.dump()

    def settled(self, sessions: int) -> bool:
        lag = self.lag()
        with self.state.transaction() as repos:
            nodes_owed = [
                s.session_id for s in repos.sessions.list()
                if s.last_title_seq is not None and s.last_title_seq >= s.inherited_cut
                and not repos.progress.get("default", s.session_id).has_session_node
            ]
        return len(lag) == sessions and not any(lag.values()) and not nodes_owed

    def worker_logs(self) -> str:
        return "\n".join(
            (self.root / f"{name}.log").read_text(errors="replace")
            for name in self.procs if name.startswith("w")
        )


def clean_run_dump(home: Path, root: Path) -> dict[str, Any]:
    """The store a fresh embedded run over a copy of ``home`` produces."""
    shutil.copytree(home, root / "dsh")
    runtime = embedded_runtime(root, force_idle=True)
    runner = InProcessRunner(runtime)
    watcher = Watcher(runtime, runner.submit)
    watcher.poll_once()
    watcher.reconcile()
    runner.drain(timeout_s=60)
    runtime.close()
    with LiteStore("default", home=root / "lite") as store:
        return store.dump()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    root = tmp_path_factory.mktemp("distributed")
    database = f"h7_e2e_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(PG_ADMIN, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{database}"')
    queue = f"h7-e2e-{uuid.uuid4().hex[:8]}"
    subprocess.run([str(BIN / "memory-worker"), "demo-home", str(root / "dsh")], check=True,
                   capture_output=True)
    live = SessionLogWriter(root / "dsh", "g-live", CWD)
    first = live.turn("remember the build flag", "noted: --release")
    live.title("Build flags", first.user_seq)
    live.turn("and the target", "x86_64")
    live.flush()
    c = Cluster(root, f"postgresql://postgres@127.0.0.1:5432/{database}", queue)
    c.live = live  # type: ignore[attr-defined]
    try:
        c.start("daemon", "daemon")
        c.start_worker("w1")
        c.start_worker("w2")
        yield c
    finally:
        c.stop()
        redis.Redis(db=REDIS_DB).delete(queue)
        with psycopg.connect(PG_ADMIN, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')


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
    wait_for(lambda: {"msg-g-live-4", "msg-g-live-5"} <= cluster.names("msg-g-live-"), 10,
             "the appended turn's entries", every=0.02)
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
    with cluster.state.transaction() as repos:
        audit = repos.audit.retractions(session_id="g-live")
    assert [(a.entry, a.marker_seq, a.source_kind, a.outcome) for a in audit] == [
        (f"msg-g-live-{n}", marker, "dsh-rewind", "retracted") for n in (4, 5)
    ]
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
        return int(lease.owner.split(":")[1])

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
