"""Cluster throughput: messages/s through ``memory-worker daemon`` + 1 and 2 Celery
``memory-worker worker --pool solo`` processes (Redis broker, state in PostgreSQL), on the SQLite
shelf and on a PostgreSQL shelf, all four runs in one invocation.

One DSH home of ``--sessions`` titled sessions × ``--turns`` chat turns (2 messages per turn) is
generated once and copied into each run's directory. Each run gets a fresh throwaway PostgreSQL
state database (a copy of one migrated once per invocation: ``CREATE DATABASE … TEMPLATE``), a
fresh Celery queue on Redis database 4, and, for the PostgreSQL shelf, a fresh
shelf database (``MEMORY_WORKER_STORE_SHELF_URL`` + ``MEMORY_WORKER_STORE_SHELF``). The workers
are started first and waited for (Celery's ``ready`` line); the clock then starts with the
daemon's launch (its start-up is inside the figure; ``first_entry_seconds`` records when the
first entry appeared, and ``after_first_messages_per_s`` is the rate from then on, start-up
excluded) and stops when every expected ``msg-*`` entry is in the store (counted in
the shelf file, or in ``hypatia_lite.knowledge``). Everything is stopped and dropped afterwards.
Log shipping is off: daemon and workers share this machine's DSH home.

.venv/bin/python benchmarks/cluster_bench.py [--sessions 20] [--turns 20]
    [--out benchmarks/out/cluster_bench.json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import psycopg
import redis

sys.path.insert(0, str(Path(__file__).resolve().parent))

from worker_dshgen import conversation

from dsh_memory_worker.worker.state.database import StateDB
from hypatia_lite import db, shelves
from hypatia_lite.sqlitelib import sqlite3

BIN = Path(sys.executable).parent
OUT = Path(__file__).resolve().parent / "out"
PG_ADMIN = "postgresql://postgres@127.0.0.1:5432/postgres"
PG_BASE = "postgresql://postgres@127.0.0.1:5432"
REDIS_DB = 4
SHELF = "team"  # a PostgreSQL shelf needs a name other than ``default``
TIMEOUT_S = 1800.0


def generate(home: Path, sessions: int, turns: int) -> None:
    for i in range(sessions):
        conversation(
            home,
            f"cb-{i:04d}",
            f"/home/dev/project-{i % 7}",
            turns,
            compressed=True,
            title=f"Cluster benchmark session {i}",
            batch_turns=4,
        )


def _create_db(prefix: str, template: str | None = None) -> str:
    name = f"{prefix}_{uuid.uuid4().hex[:8]}"
    copy = f' TEMPLATE "{template}"' if template else ""
    with psycopg.connect(PG_ADMIN, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"{copy}')
    return name


def _migrated_state_db() -> str:
    """A state database migrated to the head (Alembic, once): each run's state database is a
    copy of it."""
    name = _create_db("cb_state_template")
    try:
        StateDB.open(f"{PG_BASE}/{name}").dispose()
    except BaseException:
        _drop_db(name)
        raise
    return name


def _drop_db(name: str) -> None:
    with psycopg.connect(PG_ADMIN, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def sqlite_count(lite: Path) -> int:
    """``msg-*`` entries in the ``default`` shelf of ``lite`` (0 until the shelf exists)."""
    try:
        path = shelves.resolve(shelves.lite_home(lite), "default") / db.DB_FILE
    except shelves.ShelfError:
        return 0
    if not path.exists():  # connecting would create an empty file the workers then open
        return 0
    with sqlite3.connect(path) as conn:
        try:
            row = conn.execute("SELECT count(*) FROM knowledge WHERE name LIKE 'msg-%'").fetchone()
        except sqlite3.OperationalError as exc:  # a worker is creating the shelf right now
            if "no such table" in str(exc):
                return 0
            raise
    return int(row[0])


def pg_count(url: str) -> int:
    """``msg-*`` entries in the PostgreSQL shelf at ``url`` (0 until its tables exist)."""
    with psycopg.connect(url, autocommit=True) as conn:
        try:
            row = conn.execute(
                "SELECT count(*) FROM hypatia_lite.knowledge WHERE name LIKE 'msg-%'"
            ).fetchone()
        except psycopg.errors.UndefinedTable:
            return 0
    return int(row[0]) if row else 0


def _wait_ready(log: Path, deadline: float) -> None:
    while "ready" not in log.read_text(errors="replace"):
        if time.monotonic() > deadline:
            raise SystemExit(f"worker not ready: {log.read_text(errors='replace')[-2000:]}")
        time.sleep(0.05)


def one_run(
    store: str, workers: int, source: Path, base: Path, expected: int, state_template: str
) -> dict[str, Any]:
    root = base / f"{store}-{workers}"
    shutil.copytree(source, root / "dsh")
    state_db = _create_db("cb_state", template=state_template)
    shelf_db = _create_db("cb_shelf") if store == "postgresql" else None
    queue = f"cb-{uuid.uuid4().hex[:8]}"
    env = {
        **os.environ,
        "MEMORY_WORKER_STATE_URL": f"{PG_BASE}/{state_db}",
        "MEMORY_WORKER_BROKER_URL": f"redis://127.0.0.1:6379/{REDIS_DB}",
        "MEMORY_WORKER_LITE_HOME": str(root / "lite"),
        "MEMORY_WORKER_DSH_HOME": str(root / "dsh"),
        "MEMORY_WORKER_DATA_DIR": str(root / "data"),
        "MEMORY_WORKER_POLL_INTERVAL_S": "0.2",
        "MEMORY_WORKER_LOG_LEVEL": "INFO",
    }
    if shelf_db is not None:
        env["MEMORY_WORKER_STORE_SHELF_URL"] = f"{PG_BASE}/{shelf_db}"
        env["MEMORY_WORKER_STORE_SHELF"] = SHELF
    procs: list[subprocess.Popen[bytes]] = []

    def start(name: str, *args: str) -> Path:
        log = root / f"{name}.log"
        procs.append(
            subprocess.Popen(
                [str(BIN / "memory-worker"), *args, "--queue", queue],
                env=env,
                stdout=log.open("wb"),
                stderr=subprocess.STDOUT,
            )
        )
        return log

    def count() -> int:
        return pg_count(f"{PG_BASE}/{shelf_db}") if shelf_db else sqlite_count(root / "lite")

    try:
        # Migrated before anything starts (a copy of the migrated template: at the head already).
        StateDB.open(env["MEMORY_WORKER_STATE_URL"]).dispose()
        deadline = time.monotonic() + 120
        logs = [
            start(f"w{i}", "worker", "--pool", "solo", "--name", f"w{i}@{queue}")
            for i in range(workers)
        ]
        for log in logs:
            _wait_ready(log, deadline)
        started = time.perf_counter()
        start("daemon", "daemon")
        limit = time.monotonic() + TIMEOUT_S
        written, first = 0, None
        while written < expected:
            if time.monotonic() > limit:
                raise SystemExit(f"{store} × {workers}: {written}/{expected} after {TIMEOUT_S} s")
            for proc in procs:
                if proc.poll() is not None:
                    raise SystemExit(f"{store} × {workers}: a process exited ({proc.args})")
            time.sleep(0.05)
            written = count()
            if written and first is None:
                first = time.perf_counter() - started
        seconds = time.perf_counter() - started
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        client = redis.Redis(db=REDIS_DB)  # the queue and every key kombu named after it
        client.delete(queue, *client.scan_iter(match=f"*{queue}*"))
        _drop_db(state_db)
        if shelf_db is not None:
            _drop_db(shelf_db)
    return {
        "store": store,
        "workers": workers,
        "messages": written,
        "seconds": seconds,
        "messages_per_s": written / seconds,
        "first_entry_seconds": first,
        "after_first_messages_per_s": (written - 1) / max(seconds - (first or 0), 1e-9),
    }


def machine() -> dict[str, Any]:
    return {
        "cpus": os.cpu_count(),
        "nproc": int(subprocess.run(["nproc"], capture_output=True, text=True).stdout.strip() or 0),
        "loadavg_before": list(os.getloadavg()),
        "platform": platform.platform(),
        "python": platform.python_version(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=20)
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--out", type=Path, default=OUT / "cluster_bench.json")
    global REDIS_DB
    parser.add_argument(
        "--redis-db",
        type=int,
        default=REDIS_DB,
        help=f"Redis database of the broker (default {REDIS_DB})",
    )
    args = parser.parse_args()
    REDIS_DB = args.redis_db
    expected = args.sessions * args.turns * 2
    info = machine()
    print(
        f"machine: {info['nproc']} cores (nproc; shared), load average "
        f"{' '.join(f'{x:.2f}' for x in info['loadavg_before'])} — daemon, workers, PostgreSQL "
        "and Redis all share these cores, so 2 workers cannot get 2 free cores"
    )
    runs = []
    with tempfile.TemporaryDirectory(prefix="cluster-bench-") as tmp:
        base = Path(tmp)
        generate(base / "source", args.sessions, args.turns)
        template = _migrated_state_db()
        try:
            for store in ("sqlite", "postgresql"):
                for workers in (1, 2):
                    run = one_run(store, workers, base / "source", base, expected, template)
                    runs.append(run)
                    print(
                        f"  {store} × {workers}: {run['messages']} messages in "
                        f"{run['seconds']:.2f} s",
                        flush=True,
                    )
        finally:
            _drop_db(template)
    info["loadavg_after"] = list(os.getloadavg())
    rate = {(r["store"], r["workers"]): r["messages_per_s"] for r in runs}
    ratios = {
        "two_over_one": {s: rate[(s, 2)] / rate[(s, 1)] for s in ("sqlite", "postgresql")},
        "postgresql_over_sqlite": {
            str(w): rate[("postgresql", w)] / rate[("sqlite", w)] for w in (1, 2)
        },
    }
    print(f"\n{args.sessions} sessions × {args.turns} turns = {expected} messages per run")
    print(
        f"{'store':<11} {'workers':>7} {'messages':>8} {'seconds':>8} {'msg/s':>8} "
        f"{'1st entry s':>11} {'msg/s after 1st':>15}"
    )
    for r in runs:
        print(
            f"{r['store']:<11} {r['workers']:>7} {r['messages']:>8} {r['seconds']:>8.2f} "
            f"{r['messages_per_s']:>8.1f} {r['first_entry_seconds']:>11.2f} "
            f"{r['after_first_messages_per_s']:>15.1f}"
        )
    for s, v in ratios["two_over_one"].items():
        print(f"2 workers / 1 worker, {s}: {v:.2f}×")
    for w, v in ratios["postgresql_over_sqlite"].items():
        print(f"PostgreSQL / SQLite, {w} worker(s): {v:.2f}×")
    print(f"({info['nproc']} cores shared by the daemon, the workers, PostgreSQL and Redis)")
    result = {
        "sessions": args.sessions,
        "turns": args.turns,
        "expected_messages": expected,
        "machine": info,
        "runs": runs,
        "ratios": ratios,
        "shipping": False,
        "redis_db": REDIS_DB,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
