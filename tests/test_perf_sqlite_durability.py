"""Durability settings that process-then-advance relies on: the hypatia-lite shelf commits
with ``synchronous = FULL`` (durable before the watermark advance), the SQLite state database
runs WAL with ``synchronous = NORMAL`` (a lost last transaction only makes watermarks lag)."""

from __future__ import annotations

from pathlib import Path

from memory.store.lite import db
from worker.state.database import StateDB

_FULL, _NORMAL = 2, 1


def test_the_shelf_commits_synchronously_in_wal(tmp_path: Path) -> None:
    conn = db.connect(tmp_path / "shelf")
    try:
        assert conn.execute("PRAGMA synchronous").fetchone()[0] == _FULL
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        conn.close()


def test_the_state_database_runs_wal_with_normal_sync(tmp_path: Path) -> None:
    state = StateDB.open(f"sqlite:///{tmp_path / 'state.db'}")
    try:
        with state.engine.connect() as conn:
            assert conn.exec_driver_sql("PRAGMA synchronous").scalar() == _NORMAL
            assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
    finally:
        state.dispose()
