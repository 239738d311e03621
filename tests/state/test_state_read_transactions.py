"""``StateDB.read``: a read-only snapshot that cannot write and, on SQLite, never waits for a
writer (``run --once --jobs N`` processes otherwise took turns on every read)."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest
from sqlalchemy.exc import DBAPIError

from dsh_memory_worker.worker.state import StateDB


def test_a_read_sees_committed_rows_and_refuses_to_write(state_db: StateDB) -> None:
    with state_db.transaction() as repos:
        repos.sessions.upsert_scan(
            "s-read", path="/logs/s-read", scan_offset=10, scan_seq=3, durable_end_seq=3
        )
    with state_db.read() as repos:
        found = repos.sessions.get("s-read")
        assert found is not None and found.durable_end_seq == 3
        assert repos.progress.find("default", "s-read") is None
    with pytest.raises(DBAPIError, match=r"(?i)read.only|readonly"), state_db.read() as repos:
        repos.sessions.mark_closed("s-read")
    with state_db.read() as repos:
        still = repos.sessions.get("s-read")
        assert still is not None and still.closed_at is None
    # On PostgreSQL reads borrow the writers' pool: a connection back from a read writes again.
    for _ in range(12):
        with state_db.read() as repos:
            repos.sessions.get("s-read")
    for _ in range(12):
        with state_db.transaction() as repos:
            assert repos.sessions.mark_closed("s-read")


def test_a_sqlite_read_does_not_wait_for_another_processes_write(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'state.db'}"
    db = StateDB.open(url)
    try:
        with db.transaction() as repos:
            repos.sessions.upsert_scan(
                "s-busy", path="/logs/s-busy", scan_offset=1, scan_seq=1, durable_end_seq=1
            )
        # Another connection (as another process would) holds the write lock, uncommitted.
        other = sqlite3.connect(tmp_path / "state.db", isolation_level=None)
        other.execute("BEGIN IMMEDIATE")
        other.execute("UPDATE sessions SET durable_end_seq = 99 WHERE session_id = 's-busy'")
        started = time.monotonic()
        with db.read() as repos:
            seen = repos.sessions.get("s-busy")
        waited = time.monotonic() - started
        other.execute("ROLLBACK")
        other.close()
        assert seen is not None and seen.durable_end_seq == 1  # the committed snapshot
        # A writing transaction would have waited for the lock (busy timeout 30 s).
        assert waited < 1.0
    finally:
        db.dispose()
