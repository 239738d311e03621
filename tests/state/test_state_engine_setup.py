"""State URLs are normalised and SQLite is set up for several processes (WAL, busy timeout)."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import text

from dsh_memory_worker.worker.state.db import StateURLError, make_engine, normalize_url


@pytest.mark.parametrize(
    ("url", "driver"),
    [
        ("postgres://u:p@db:5432/x", "postgresql+psycopg"),
        ("postgresql://u:p@db:5432/x", "postgresql+psycopg"),
        ("postgresql+psycopg://u:p@db:5432/x", "postgresql+psycopg"),
        ("sqlite:////tmp/state.db", "sqlite"),
    ],
)
def test_urls_get_the_installed_driver(url: str, driver: str) -> None:
    assert normalize_url(url).drivername == driver


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("mysql://u@db/x", "state URL backend 'mysql' is not supported"),
        ("postgresql+psycopg2://u@db/x", r"driver 'postgresql\+psycopg2' is not installed"),
        ("no url at all", "is not a database URL"),
    ],
)
def test_unusable_urls_are_one_line_errors(url: str, message: str) -> None:
    with pytest.raises(StateURLError, match=message) as info:
        make_engine(url)
    assert "\n" not in str(info.value)


def test_sqlite_gets_wal_busy_timeout_and_immediate_transactions(tmp_path: Path) -> None:
    db_file = tmp_path / "nested" / "dir" / "state.db"
    engine = make_engine(f"sqlite:///{db_file}")
    try:
        with engine.begin() as conn:
            assert conn.execute(text("PRAGMA journal_mode")).scalar() == "wal"
            assert conn.execute(text("PRAGMA busy_timeout")).scalar() == 30000
            assert conn.execute(text("PRAGMA foreign_keys")).scalar() == 1
            conn.execute(text("CREATE TABLE t (x INTEGER)"))
        assert db_file.is_file()  # the missing directories were created
        # A transaction holds the write lock from its first statement (BEGIN IMMEDIATE):
        # a second connection cannot start a write while the first is open, even after reads.
        other = make_engine(f"sqlite:///{db_file}")
        with engine.connect() as first:
            first.begin()
            first.execute(text("SELECT count(*) FROM t")).scalar()
            raw = other.raw_connection()
            try:
                raw.driver_connection.execute("PRAGMA busy_timeout = 50")  # type: ignore[union-attr]
                with pytest.raises(Exception, match="database is locked"):
                    raw.driver_connection.execute("BEGIN IMMEDIATE")  # type: ignore[union-attr]
            finally:
                raw.close()
            first.rollback()
        other.dispose()
    finally:
        engine.dispose()
