"""The state database forgets a scrubbed title in its files: ``SessionRepo.scrub_title``
overwrites ``sessions.title_text`` and ``StateDB.after_purge`` removes the old row versions —
on PostgreSQL the dead tuple MVCC leaves in the table's file (``VACUUM FULL``; the bytes are
there after the ``UPDATE`` alone), on SQLite the old page images in the WAL (a truncating
checkpoint; a reader that blocks it makes the end of the next transaction do it). Every check
greps the raw bytes of the database files."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest
from bytes_support import leaks, pg_table_file, present, token
from state_db_support import sqlite_url, throwaway_pg_database

from dsh_memory_worker.worker.state import StateDB
from hypatia_lite.pg import vacuum


def _titled(db: StateDB, *titles: tuple[str, str]) -> None:
    with db.transaction() as repos:
        for sid, title in titles:
            repos.sessions.upsert_scan(
                sid,
                path=f"/logs/{sid}.jsonl",
                scan_offset=10,
                scan_seq=3,
                durable_end_seq=3,
                title=(2, title),
            )


@pytest.mark.integration
def test_postgresql_vacuums_the_dead_tuple_of_a_scrubbed_title() -> None:
    doomed, kept = token("pg-title-doomed"), token("pg-title-kept")
    with throwaway_pg_database() as url:
        db = StateDB.open(url)
        try:
            _titled(db, ("s-1", f"about {doomed}"), ("s-2", f"about {kept}"))
            assert present([pg_table_file(url)], [doomed, kept]) == {doomed, kept}
            with db.transaction() as repos:
                assert repos.sessions.scrub_title("s-1")
            with db.read() as repos:
                one, two = repos.sessions.get("s-1"), repos.sessions.get("s-2")
            assert one is not None and (one.title_text, one.last_title_seq) == (None, None)
            assert two is not None and two.title_text == f"about {kept}"
            # MVCC: the UPDATE left the old tuple, text and all, in the table's file.
            assert present([pg_table_file(url)], [doomed]) == {doomed}
            assert db.after_purge()
            assert leaks([pg_table_file(url)], [doomed]) == []
            assert present([pg_table_file(url)], [kept]) == {kept}
        finally:
            db.dispose()


@pytest.mark.integration
def test_postgresql_title_a_snapshot_still_sees_is_purged_once_the_snapshot_ends(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Another connection's snapshot taken before the scrub keeps the old tuple alive through
    ``VACUUM FULL`` (which copies it into the new file): ``after_purge`` reads that in the
    rewrite's report, tries again, and reports False; ``dispose`` after the snapshot ended
    removes it. (A backend starting up on a busy server holds such a horizon for a moment.)"""
    monkeypatch.setattr(vacuum, "KEPT_PAUSE_S", 0.01)
    doomed, kept = token("pg-snap-title-doomed"), token("pg-snap-title-kept")
    with throwaway_pg_database() as url:
        db = StateDB.open(url)
        try:
            _titled(db, ("s-1", f"about {doomed}"), ("s-2", f"about {kept}"))
            with psycopg.connect(url) as reader:
                reader.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
                reader.execute("SELECT count(*) FROM pg_class").fetchone()  # the snapshot, no lock
                with db.transaction() as repos:
                    assert repos.sessions.scrub_title("s-1")
                assert db.after_purge() is False
                assert present([pg_table_file(url)], [doomed]) == {doomed}
                reader.rollback()
        finally:
            db.dispose()  # the snapshot is gone: the owed purge runs
        assert leaks([pg_table_file(url)], [doomed]) == []
        assert present([pg_table_file(url)], [kept]) == {kept}


def _files(root: Path) -> list[Path]:
    base = root / "state.db"
    return [p for p in (base, Path(f"{base}-wal"), Path(f"{base}-shm")) if p.exists()]


def test_sqlite_checkpoint_blocked_by_a_reader_is_done_by_the_next_transaction(
    tmp_path: Path,
) -> None:
    doomed, kept, other = (token(f"sqlite-title-{n}") for n in ("doomed", "kept", "other"))
    db = StateDB.open(sqlite_url(tmp_path))
    try:
        _titled(db, ("s-1", f"about {doomed}"), ("s-2", f"about {kept}"))
        assert present(_files(tmp_path), [doomed]) == {doomed}
        reader = db.engine.raw_connection()  # a connection holding an old snapshot
        try:
            cursor = reader.cursor()
            cursor.execute("BEGIN")
            cursor.execute("SELECT count(*) FROM sessions")
            with db.transaction() as repos:
                repos.sessions.scrub_title("s-1")
            assert not db.after_purge()  # blocked: the WAL keeps the old page image
            assert present(_files(tmp_path), [doomed]) == {doomed}
            cursor.execute("COMMIT")
            cursor.close()
        finally:
            reader.close()
        _titled(db, ("s-3", f"about {other}"))  # its end retries the owed checkpoint
        assert leaks(_files(tmp_path), [doomed]) == []
        assert present(_files(tmp_path), [kept, other]) == {kept, other}
        with db.read() as repos:
            scrubbed = repos.sessions.get("s-1")
        assert scrubbed is not None and scrubbed.title_text is None
    finally:
        db.dispose()
