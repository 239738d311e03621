"""What the state database's hot path costs: the statements every job runs (session read,
progress read, lease acquire, watermark advance, failure clear, lease release), one transaction
per round, three ways:

- ``prepared``: the repositories as they are (``worker.state.prepared``: on SQLite the statements
  compiled once run on the driver's connection with SQLAlchemy's type conversions);
- ``core``: the same repositories with every hot statement through SQLAlchemy Core's
  ``Connection.execute`` (its compiled cache; what ``prepared`` does on PostgreSQL anyway);
- ``floor``: the same SQL typed out and run on the driver's own cursor (no SQL toolkit).

All three are measured in one run, interleaved batch by batch, on SQLite (a file in a temporary
directory) and on PostgreSQL (a throwaway database on 127.0.0.1:5432, created through the
``test`` database and dropped at the end; skipped when the server does not answer)::

    .venv/bin/python benchmarks/state_hot_path_bench.py [--rounds 3000]

It prints µs per round for each path and the ratios core / prepared and prepared / floor.
"""

from __future__ import annotations

import argparse
import datetime as dt
import gc
import secrets
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dsh_memory_worker.worker.state import StateDB, prepared

_PG_ADMIN = "host=127.0.0.1 port=5432 user=postgres dbname=test"
_SID = "s-bench"
_SHELF = "default"
_OWNER = "bench"


_PREPARED_FETCH = prepared.fetch


def _core_fetch(conn: Any, statement: Any, params: Any) -> list[tuple[Any, ...]]:
    return [tuple(row) for row in conn.execute(statement, params)]


def _core_round(db: StateDB) -> None:
    prepared.fetch = _core_fetch  # type: ignore[assignment]
    try:
        _round(db)
    finally:
        prepared.fetch = _PREPARED_FETCH


def _round(db: StateDB) -> None:
    """One job's state bookkeeping, as the runner does it: read, lease, advance, clear, release."""
    with db.transaction() as repos:
        assert repos.sessions.get(_SID) is not None
        progress = repos.progress.get(_SHELF, _SID)
        lease = repos.leases.acquire(f"session:{_SID}", _OWNER, 60)
        assert lease is not None
        assert repos.progress.advance(
            _SHELF,
            _SID,
            expected_version=progress.version,
            lease_token=lease.token,
            last_logged_seq=progress.last_logged_seq + 1,
        )
        repos.failures.clear("log_span", _SID)
        assert repos.leases.release(lease)


def _floor(db: StateDB) -> Callable[[], None]:
    """The same round's SQL on the driver's cursor (SQLAlchemy compiles it once, here)."""
    dialect = db.engine.dialect.name
    raw = db.engine.raw_connection()
    driver = raw.driver_connection
    assert driver is not None
    mark = "?" if dialect == "sqlite" else "%s"
    begin = "BEGIN IMMEDIATE" if dialect == "sqlite" else "BEGIN"
    lease_key = f"session:{_SID}"
    statements = [
        (
            "SELECT session_id, path, generation, project, header, inherited_cut, scan_offset, "
            "scan_seq, checkpoints, durable_end_seq, last_turn_end_seq, last_title_seq, "
            "title_text, last_activity_at, closed_at, forgotten FROM sessions "
            f"WHERE session_id = {mark}",
            lambda now: (_SID,),
        ),
        (
            "SELECT shelf, session_id, last_logged_seq, last_consolidated_seq, "
            "last_belong_to_index, has_session_node, pending_tokens, last_check_turn, version "
            f"FROM progress WHERE shelf = {mark} AND session_id = {mark}",
            lambda now: (_SHELF, _SID),
        ),
        (
            f"UPDATE leases SET owner = {mark}, token = leases.token + 1, acquired_at = {mark}, "
            f"expires_at = {mark} WHERE leases.key = {mark} AND (leases.owner IS NULL OR "
            f"leases.expires_at <= {mark}) RETURNING leases.token",
            lambda now: (_OWNER, now, now + 60, lease_key, now),
        ),
        (
            f"UPDATE progress SET last_logged_seq = last_logged_seq + 1, version = version + 1, "
            f"updated_at = {mark} WHERE shelf = {mark} AND session_id = {mark} AND EXISTS "
            f"(SELECT key FROM leases WHERE key = {mark} AND owner IS NOT NULL AND expires_at > "
            f"{mark}) RETURNING version",
            lambda now: (now, _SHELF, _SID, lease_key, now),
        ),
        (
            f"DELETE FROM failures WHERE task = {mark} AND session_id = {mark} RETURNING id",
            lambda now: ("log_span", _SID),
        ),
        (
            f"UPDATE leases SET owner = NULL, expires_at = NULL WHERE key = {mark} AND "
            f"owner = {mark} RETURNING token",
            lambda now: (lease_key, _OWNER),
        ),
    ]
    as_time: Callable[[float], object] = (
        (lambda t: dt.datetime.fromtimestamp(t, dt.UTC).replace(tzinfo=None).isoformat(sep=" "))
        if dialect == "sqlite"
        else (lambda t: dt.datetime.fromtimestamp(t, dt.UTC))
    )

    def run() -> None:
        now = time.time()
        cursor = driver.cursor()
        cursor.execute(begin)
        for sql, params in statements:
            args = tuple(as_time(v) if isinstance(v, float) else v for v in params(now))
            cursor.execute(sql, args)
            cursor.fetchall()
        cursor.execute("COMMIT")
        cursor.close()

    run.close = raw.close  # type: ignore[attr-defined]
    return run


def _seed(db: StateDB) -> None:
    with db.transaction() as repos:
        repos.sessions.upsert_scan(
            _SID, path="/logs/s", scan_offset=0, scan_seq=0, durable_end_seq=0
        )
        repos.progress.get(_SHELF, _SID)
        lease = repos.leases.acquire(f"session:{_SID}", _OWNER, 60)
        assert lease is not None
        repos.leases.release(lease)


def _measure(name: str, db: StateDB, rounds: int) -> None:
    _seed(db)
    floor = _floor(db)
    paths: dict[str, Callable[[], None]] = {
        "prepared": lambda: _round(db),
        "core": lambda: _core_round(db),
        "floor": floor,
    }
    for _ in range(200):  # warm all three: compiled cache, pages, the pool
        for fn in paths.values():
            fn()
    times: dict[str, list[float]] = {label: [] for label in paths}
    batch = max(rounds // 10, 1)
    gc.disable()
    try:
        for _ in range(10):  # interleaved batches: every path sees the same machine load
            for label, fn in paths.items():
                start = time.perf_counter()
                for _ in range(batch):
                    fn()
                times[label].append((time.perf_counter() - start) / batch * 1e6)
    finally:
        gc.enable()
        floor.close()  # type: ignore[attr-defined]
    us = {label: statistics.median(values) for label, values in times.items()}
    print(
        f"[{name}] one job's state round (6 statements + BEGIN/COMMIT), median of 10 batches "
        f"of {batch}: prepared {us['prepared']:.0f} µs, core {us['core']:.0f} µs, "
        f"floor {us['floor']:.0f} µs; core / prepared {us['core'] / us['prepared']:.2f}, "
        f"prepared / floor {us['prepared'] / us['floor']:.2f}"
    )


@contextmanager
def _pg_url() -> Iterator[str | None]:
    try:
        import psycopg

        admin = psycopg.connect(_PG_ADMIN, autocommit=True, connect_timeout=3)
    except Exception as exc:  # no server, no driver: say so and measure SQLite only
        print(f"[postgresql] skipped: {' '.join(str(exc).split())[:120]}")
        yield None
        return
    name = f"mw_bench_{secrets.token_hex(4)}"
    admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield f"postgresql://postgres@127.0.0.1:5432/{name}"
    finally:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        db = StateDB.open(f"sqlite:///{tmp}/state.db")
        try:
            _measure("sqlite", db, args.rounds)
        finally:
            db.dispose()
    with _pg_url() as url:
        if url is not None:
            db = StateDB.open(url)
            try:
                _measure("postgresql", db, args.rounds)
            finally:
                db.dispose()


if __name__ == "__main__":
    main()
