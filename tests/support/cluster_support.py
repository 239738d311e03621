"""Shared by the distributed end-to-end tests: a cluster of real ``memory-worker daemon`` /
``worker`` processes (Celery on Redis, state in a throwaway PostgreSQL database), its store and
state read back, and polling until a condition holds."""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
import redis

from dsh_memory_worker.worker.state.database import StateDB
from hypatia_lite import db, shelves
from hypatia_lite.sqlitelib import sqlite3
from hypatia_lite.store import LiteStore

BIN = Path(sys.executable).parent
PG_ADMIN = "postgresql://postgres@127.0.0.1:5432/postgres"


def clean_run_dump(home: Path, root: Path) -> dict[str, Any]:
    """The store a fresh embedded run over a copy of ``home`` produces (under ``root``)."""
    from pipeline_support import dump, process
    from worker_dshgen import embedded_runtime

    shutil.copytree(home, root / "dsh")
    runtime = embedded_runtime(root, force_idle=True)
    process(runtime, consolidation=False)
    runtime.close()
    return dump(root)


def wait_for(check: Callable[[], Any], timeout: float, what: str, every: float = 0.1) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(every)


def lite_names(lite: Path, prefix: str = "") -> set[str]:
    """The entry names starting with ``prefix`` in the ``default`` shelf of the hypatia-lite home
    ``lite``, read with plain SQLite while worker processes write it; empty until the shelf's
    database file exists."""
    try:
        path = shelves.resolve(shelves.lite_home(lite), "default") / db.DB_FILE
    except shelves.ShelfError:
        return set()
    if not path.exists():
        return set()
    with sqlite3.connect(path) as conn:
        try:
            rows = conn.execute("SELECT name FROM knowledge WHERE name LIKE ?", (prefix + "%",))
        except sqlite3.OperationalError as exc:  # a worker is creating the shelf right now
            if "no such table" in str(exc):
                return set()
            raise
        return {row[0] for row in rows}


class Cluster:
    def __init__(self, root: Path, state_url: str, queue: str, redis_db: int) -> None:
        self.root = root
        self.state_url = state_url
        self.queue = queue
        self.home = root / "dsh"
        self.lite = root / "lite"
        self.env = {
            **os.environ,
            "MEMORY_WORKER_STATE_URL": state_url,
            "MEMORY_WORKER_BROKER_URL": f"redis://127.0.0.1:6379/{redis_db}",
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
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
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
        return lite_names(self.lite, prefix)

    def edges(self, tail: str) -> int:
        try:
            path = shelves.resolve(shelves.lite_home(self.lite), "default") / db.DB_FILE
        except shelves.ShelfError:
            return 0
        if not path.exists():  # (connecting would create an empty file the workers then open)
            return 0
        with sqlite3.connect(path) as conn:
            try:
                return int(
                    conn.execute(
                        "SELECT count(*) FROM statement WHERE tail = ?", (tail,)
                    ).fetchone()[0]
                )
            except sqlite3.OperationalError as exc:  # a worker is creating the shelf right now
                if "no such table" in str(exc):
                    return 0
                raise

    def dump(self) -> dict[str, Any]:
        with LiteStore("default", home=self.lite) as store:
            return store.dump()

    def settled(self, sessions: int) -> bool:
        lag = self.lag()
        with self.state.transaction() as repos:
            nodes_owed = [
                s.session_id
                for s in repos.sessions.list()
                if s.last_title_seq is not None
                and s.last_title_seq >= s.inherited_cut
                and not repos.progress.get("default", s.session_id).has_session_node
            ]
        return len(lag) == sessions and not any(lag.values()) and not nodes_owed

    def worker_logs(self) -> str:
        return "\n".join(
            (self.root / f"{name}.log").read_text(errors="replace")
            for name in self.procs
            if name.startswith("w")
        )


@contextmanager
def throwaway_cluster(
    root: Path, prefix: str, redis_db: int, env: Mapping[str, str] | None = None
) -> Iterator[Cluster]:
    """A :class:`Cluster` under ``root`` on a new PostgreSQL database ``<prefix>_<hex>`` and a new
    Celery queue ``<prefix, dashed>-<hex>`` on Redis database ``redis_db``, with ``env`` added to
    its processes' environment (``MEMORY_WORKER_BROKER_URL`` there may name RabbitMQ instead). On
    exit its processes are stopped, the queue is deleted and the database dropped."""
    database = f"{prefix}_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(PG_ADMIN, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{database}"')
    queue = f"{prefix.replace('_', '-')}-{uuid.uuid4().hex[:8]}"
    cluster = Cluster(root, f"postgresql://postgres@127.0.0.1:5432/{database}", queue, redis_db)
    cluster.env.update(env or {})
    try:
        yield cluster
    finally:
        cluster.stop()
        broker = cluster.env["MEMORY_WORKER_BROKER_URL"]
        if broker.startswith("amqp"):
            from kombu import Connection

            with Connection(broker) as connection:
                connection.default_channel.queue_delete(queue)
        else:
            redis.Redis(db=redis_db).delete(queue)
        with psycopg.connect(PG_ADMIN, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')


def start_prefork(cluster: Cluster, name: str) -> subprocess.Popen[bytes]:
    """A prefork Celery worker ``name`` with two pool processes."""
    return cluster.start(
        name,
        "worker",
        "--pool",
        "prefork",
        "--concurrency",
        "2",
        "--name",
        f"{name}@{cluster.queue}",
    )


def leased_pids(cluster: Cluster) -> set[int]:
    """The pids of the Celery processes holding a session lease now."""
    with cluster.state.transaction() as repos:
        owners = [
            repos.leases.holder(f"session:{sid}")
            for sid in (s.session_id for s in repos.sessions.list())
        ]
    return {
        int(lease.owner.split(":")[2])
        for lease in owners
        if lease is not None and lease.owner.startswith("celery:")
    }


def serving(cluster: Cluster, name: str) -> bool:
    """Whether worker ``name`` has received a task since it was ready (Celery checks once, right
    after start-up, that no pool process died, and gives up if one did)."""
    text = (cluster.root / f"{name}.log").read_text(errors="replace")  # Cluster.start's log
    ready = text.find(" ready.")
    return ready >= 0 and " received" in text[ready:]


def kill_pool_child(cluster: Cluster, name: str, points: random.Random) -> None:
    """SIGKILL a pool process of the worker ``name`` (one holding a session lease when there is
    one) and wait until its main process has replaced it."""
    from fault_support import children

    main = cluster.procs[name].pid
    wait_for(lambda: serving(cluster, name), 90, f"{name} to serve tasks")
    pool = wait_for(lambda: children(main), 60, "the pool processes")
    busy = [pid for pid in pool if pid in leased_pids(cluster)]
    victim = busy[0] if busy else pool[points.randrange(len(pool))]
    os.kill(victim, signal.SIGKILL)
    wait_for(
        lambda: victim not in children(main) and len(children(main)) == 2, 60, "a new pool process"
    )


def grow(writer: Any, turns: int, tag: int) -> None:
    """``turns`` more chat turns in the log of ``writer`` (a ``worker_dshgen.SessionLogWriter``)."""
    for i in range(turns):
        writer.turn(f"step {tag}.{i}: what next?", f"step {tag}.{i}: do the next thing")
    writer.flush()


def titled_sessions(home: Path, prefix: str, count: int, turns: int) -> list[Any]:
    """``count`` titled sessions ``<prefix>-<i>`` of ``turns`` turns in two projects, their
    writers kept open to grow."""
    from worker_dshgen import SessionLogWriter

    writers = []
    for i in range(count):
        writer = SessionLogWriter(home, f"{prefix}-{i}", f"/home/dev/dist-{i % 2}")
        first = writer.turn("start the work", "started")
        writer.title(f"Distributed {i}", first.user_seq)
        grow(writer, turns, 0)
        writers.append(writer)
    return writers


def reach_kill_point(
    cluster: Cluster,
    writers: list[Any],
    grown: list[Any],
    points: random.Random,
    number: int,
    timeout: float = 120,
) -> None:
    """Grow each of ``grown`` by 20-80 turns, then wait for a random point: a random number of
    entries written since the last kill, or every entry the logs hold so far, whichever comes
    first."""
    for writer in grown:
        grow(writer, points.randint(20, 80), number + 1)
    goal = min(
        len(cluster.names("msg-")) + points.randint(10, 150), sum(2 * w.turn_no for w in writers)
    )
    wait_for(
        lambda: len(cluster.names("msg-")) >= goal, timeout, f"kill point {number}", every=0.02
    )
