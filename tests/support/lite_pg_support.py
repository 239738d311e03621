"""PostgreSQL shelves for the ``test_lite_pg_*`` tests: a home whose shelf ``pg`` lives in a
throwaway database of the local server, and the files of that shelf's tables for byte scans."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg
from state_db_support import PG_ADMIN_DSN, throwaway_pg_database

from hypatia_lite import shelves
from hypatia_lite.pg.url import DEFAULT_SCHEMA

SHELF = "pg"


@contextmanager
def pg_home(home: Path, shelf: str = SHELF) -> Iterator[str]:
    """Connect ``home``'s shelf ``shelf`` to a new database; yields the database URL."""
    with throwaway_pg_database() as url:
        shelves.connect(home, url, shelf)
        yield url


def admin_dsn(url: str) -> str:
    """A libpq DSN of the database at ``url`` for the test's own inspection queries."""
    return PG_ADMIN_DSN.replace("dbname=postgres", f"dbname={url.rsplit('/', 1)[1]}")


def shelf_table_files(url: str, schema: str = DEFAULT_SCHEMA) -> list[Path]:
    """Every file of the shelf's tables, their TOAST tables and all their indexes, after a
    CHECKPOINT wrote dirty pages to disk (the server is local: its data directory is
    readable here)."""
    with psycopg.connect(admin_dsn(url), autocommit=True) as conn:
        conn.execute("CHECKPOINT")
        data = conn.execute("SHOW data_directory").fetchone()
        rows = conn.execute(
            "WITH t AS (SELECT c.oid, c.reltoastrelid FROM pg_class c JOIN pg_namespace n"
            " ON n.oid = c.relnamespace WHERE n.nspname = %s AND c.relkind = 'r'),"
            " rels AS (SELECT oid FROM t UNION SELECT reltoastrelid FROM t"
            " WHERE reltoastrelid <> 0)"
            " SELECT pg_relation_filepath(r.oid) FROM rels r"
            " UNION SELECT pg_relation_filepath(i.indexrelid) FROM pg_index i"
            " WHERE i.indrelid IN (SELECT oid FROM rels)",
            (schema,),
        ).fetchall()
    assert data is not None and rows
    base = Path(data[0])
    return sorted(base / r[0] for r in rows if (base / r[0]).exists())
