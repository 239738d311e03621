"""Durability that process-then-advance relies on: a hypatia-lite write is on disk before it
returns (its WAL file is fsynced after the commit, once the write lock is free, so another
process is not kept waiting for the disk; a delete is made durable by its truncating
checkpoint instead, which syncs the WAL and then the database file), and the SQLite state
database runs WAL with ``synchronous = NORMAL`` (a lost last transaction only makes watermarks
lag)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from dsh_memory_worker.memory.store.base import EntryWrite
from dsh_memory_worker.worker.state.database import StateDB
from hypatia_lite import db
from hypatia_lite.sqlitelib import sqlite3
from hypatia_lite.store import LiteStore

_NORMAL = 1


def test_the_shelf_runs_wal_and_commits_without_syncing_under_the_lock(tmp_path: Path) -> None:
    conn = db.connect(tmp_path / "shelf")
    try:
        assert conn.execute("PRAGMA synchronous").fetchone()[0] == _NORMAL
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        conn.close()


def test_every_write_fsyncs_the_wal_after_releasing_the_lock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = LiteStore(home=tmp_path / "lite", embedder=None)
    wal = str(store.path / db.DB_FILE) + "-wal"
    synced: list[tuple[str, bool]] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        other = sqlite3.connect(store.path / db.DB_FILE, timeout=0, isolation_level=None)
        try:
            other.execute("BEGIN IMMEDIATE")  # fails with "database is locked" under the lock
            other.execute("ROLLBACK")
            free = True
        except sqlite3.OperationalError:
            free = False
        finally:
            other.close()
        synced.append((os.readlink(f"/proc/self/fd/{fd}"), free))
        real_fsync(fd)

    monkeypatch.setattr(db.os, "fsync", fsync)
    try:
        store.write_batch([EntryWrite("msg-d-0", "durable", embed=False)])
        assert store.knowledge_create("note-d", "also durable", embed=False)
        assert synced == [(wal, True)] * 2
        assert store.knowledge_delete("note-d")
        assert synced == [(wal, True)] * 2  # the checkpoint synced it, under SQLite's control
        assert os.path.getsize(wal) == 0  # ... into the database file, then truncated the WAL
    finally:
        store.close()


def test_the_state_database_runs_wal_with_normal_sync(tmp_path: Path) -> None:
    state = StateDB.open(f"sqlite:///{tmp_path / 'state.db'}")
    try:
        with state.engine.connect() as conn:
            assert conn.exec_driver_sql("PRAGMA synchronous").scalar() == _NORMAL
            assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
    finally:
        state.dispose()
