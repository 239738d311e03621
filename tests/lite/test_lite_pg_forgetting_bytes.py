"""Deleted means gone from the bytes, on a PostgreSQL shelf: after ``knowledge_delete``,
``statement_delete`` and a ``knowledge_update`` that replaces text — in process and over the
``hypatia-lite`` CLI — no form of the removed text is left in any file of the shelf's tables,
their TOAST tables or their indexes (MVCC's dead tuples, the GIN index's keys); a purge that
another connection's lock kept from its ``VACUUM FULL`` is owed, recorded, and done by the next
open of the shelf. Every check greps the raw bytes of the relation files after a CHECKPOINT."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest
from bytes_support import leaks, present, token
from lite_pg_support import SHELF, admin_dsn, pg_home, shelf_table_files

from dsh_memory_worker.memory.store.base import EntryWrite
from hypatia_lite.pg import purge, vacuum
from hypatia_lite.store import LiteStore

pytestmark = pytest.mark.integration
BIN = Path(sys.executable).parent / "hypatia-lite"


def _filler(store: LiteStore, count: int) -> None:
    store.write_batch(
        [
            EntryWrite(
                f"msg-fill-{i}",
                f"filler message {i} about the weather",
                tags=("message",),
                embed=False,
            )
            for i in range(count)
        ]
    )


def _cli(home: Path, *argv: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HYPATIA_LITE_")}
    done = subprocess.run(
        [str(BIN), *argv, "--shelf", SHELF],
        capture_output=True,
        text=True,
        env={**env, "HYPATIA_LITE_HOME": str(home)},
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_deletes_and_updates_leave_no_dead_tuple(tmp_path: Path) -> None:
    home = tmp_path / "home"
    gone, edge, old, kept = (token(f"pg-{n}") for n in ("gone", "edge", "old", "kept"))
    with pg_home(home) as url, LiteStore(SHELF, home=home) as store:
        _filler(store, 50)
        assert store.knowledge_create("msg-gone-1", f"question {gone} here", tags=[gone])
        assert store.statement_create("msg-gone-1", "belongTo", "session-x", data=edge)
        assert store.knowledge_create("wu-x-1", f"first {old} version", tags=["work-unit"])
        assert store.knowledge_create("msg-kept-1", f"answer {kept} here", tags=["message"])
        assert present(shelf_table_files(url), [gone, edge, old, kept]) == {gone, edge, old, kept}

        assert store.knowledge_delete("msg-gone-1") is True
        assert store.statement_delete("msg-gone-1", "belongTo", "session-x") is True
        assert store.knowledge_update("wu-x-1", data="second version") is True

        files = shelf_table_files(url)
        assert len(files) >= 15  # heaps, TOAST tables and every index of the four tables
        assert leaks(files, [gone, edge, old]) == []
        assert present(files, [kept]) == {kept}
        assert store.search_rows(gone) == [] and store.search_rows(old) == []
        assert [r["key"] for r in store.search_rows(kept)] == ["msg-kept-1"]
        entry = store.knowledge_get("wu-x-1")
        assert entry is not None and entry.content.data == "second version"
        assert len(store.dump()["knowledge"]) == 52


def test_cli_delete_leaves_no_dead_tuple(tmp_path: Path) -> None:
    home = tmp_path / "home"
    gone, kept = token("pg-cli-gone"), token("pg-cli-kept")
    with pg_home(home) as url:
        with LiteStore(SHELF, home=home) as store:
            _filler(store, 20)
        _cli(home, "knowledge-create", "msg-cli-1", f"--data=ask {gone} now", "--tags", "message")
        _cli(home, "knowledge-create", "msg-cli-2", f"--data=ask {kept} now", "--tags", "message")
        assert present(shelf_table_files(url), [gone, kept]) == {gone, kept}
        assert _cli(home, "knowledge-delete", "msg-cli-1") == "Deleted knowledge: msg-cli-1\n"
        assert leaks(shelf_table_files(url), [gone]) == []
        assert present(shelf_table_files(url), [kept]) == {kept}
        assert _cli(home, "search", gone) == "No results found.\n"


def _shelf_saying(home: Path, label: str, gone: str, kept: str) -> LiteStore:
    """The shelf, some filler, and ``msg-<label>-1`` saying ``gone``, ``msg-<label>-2`` ``kept``."""
    store = LiteStore(SHELF, home=home)
    _filler(store, 20)
    assert store.knowledge_create(f"msg-{label}-1", f"say {gone}", tags=["message"])
    assert store.knowledge_create(f"msg-{label}-2", f"say {kept}", tags=["message"])
    return store


def test_a_blocked_purge_is_owed_and_done_by_the_next_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(vacuum, "LOCK_TIMEOUT", "200ms")
    home = tmp_path / "home"
    gone, kept = token("pg-owed-gone"), token("pg-owed-kept")
    with pg_home(home) as url:
        store = _shelf_saying(home, "owed", gone, kept)
        with psycopg.connect(admin_dsn(url)) as reader:  # a transaction that holds a lock
            reader.execute("SELECT count(*) FROM hypatia_lite.docs").fetchone()
            assert store.knowledge_delete("msg-owed-1") is True
            backend = store.backend
            assert getattr(backend, "vacuum_owed", None) is True
            owed = reader.execute(
                "SELECT v FROM hypatia_lite.meta WHERE k = %s", (purge.OWED_VACUUM,)
            ).fetchone()
            # MVCC: the dead tuple is still in the files while the purge is owed
            assert present(shelf_table_files(url), [gone]) == {gone}
            store.close()  # tries again, still blocked: stays owed in ``meta``
            reader.rollback()
        assert owed == ("1",)
        assert present(shelf_table_files(url), [gone]) == {gone}
        with LiteStore(SHELF, home=home) as again:  # the next open does the owed purge
            assert getattr(again.backend, "vacuum_owed", None) is False
            assert (
                again.conn.execute(
                    "SELECT count(*) FROM meta WHERE k = ?", (purge.OWED_VACUUM,)
                ).fetchone()[0]
                == 0
            )
        assert leaks(shelf_table_files(url), [gone]) == []
        assert present(shelf_table_files(url), [kept]) == {kept}


def test_dead_rows_a_snapshot_keeps_make_the_purge_owed_until_it_ends(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A snapshot of another connection (here a REPEATABLE READ transaction; on a busy server
    also a backend starting up) keeps the deleted row version alive through ``VACUUM FULL``:
    the purge sees it in the rewrite's report, tries again, and stays owed until a rewrite
    removes it — here the close after the snapshot ended."""
    monkeypatch.setattr(vacuum, "KEPT_PAUSE_S", 0.01)
    home = tmp_path / "home"
    gone, kept = token("pg-snap-gone"), token("pg-snap-kept")
    with pg_home(home) as url:
        store = _shelf_saying(home, "snap", gone, kept)
        with psycopg.connect(admin_dsn(url)) as reader:
            reader.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            reader.execute("SELECT count(*) FROM pg_class").fetchone()  # takes the snapshot
            assert store.knowledge_delete("msg-snap-1") is True
            assert getattr(store.backend, "vacuum_owed", None) is True
            assert present(shelf_table_files(url), [gone]) == {gone}
            reader.rollback()
        store.close()  # the snapshot is gone: the owed purge runs and removes it
        assert leaks(shelf_table_files(url), [gone]) == []
        assert present(shelf_table_files(url), [kept]) == {kept}
        with LiteStore(SHELF, home=home) as again:
            assert getattr(again.backend, "vacuum_owed", None) is False
