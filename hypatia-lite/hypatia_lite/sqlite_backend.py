"""The SQLite backend of a shelf: one ``hypatia.sqlite`` file in the shelf's directory.

A thin adapter over :mod:`hypatia_lite.db` (connection, schema, ``BEGIN IMMEDIATE`` writes,
lock retries), :mod:`hypatia_lite.fts` (FTS5 documents) and :mod:`hypatia_lite.purge`
(secure delete and the truncating WAL checkpoint after a purge).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from hypatia_lite import db, purge
from hypatia_lite.backend import Doc
from hypatia_lite.dialect import SQLITE
from hypatia_lite.fts import put_doc_rows, put_docs
from hypatia_lite.protocol import StoreError, TransientStoreError
from hypatia_lite.shelves import ShelfError
from hypatia_lite.sqlitelib import sqlite3

T = TypeVar("T")


class SqliteBackend:
    """A shelf in a SQLite file (see the module doc)."""

    dialect = SQLITE
    label = "SQLite"

    def __init__(self, conn: db.ShelfConnection, path: Path) -> None:
        self._conn: db.ShelfConnection | None = conn
        self.path = path

    @classmethod
    def open(cls, shelf: str, location: str) -> SqliteBackend:
        path = Path(location)
        try:
            return cls(db.connect(path), path)
        except sqlite3.Error as err:
            raise ShelfError(f"shelf error: cannot open shelf '{shelf}' at {path}: {err}") from err

    @property
    def conn(self) -> db.ShelfConnection:
        if self._conn is None:
            raise StoreError(f"hypatia-lite shelf at {self.path} is closed")
        return self._conn

    @contextmanager
    def write(self, *, purge_text: bool = False) -> Iterator[None]:
        with db.write(self.conn, purge_text=purge_text):
            yield

    def run(self, action: Callable[[], T]) -> T:
        try:
            return db.retry_locked(action)
        except sqlite3.Error as err:
            raise StoreError(f"storage error: SQLite error: {err}") from err

    def insert_new(self, sql: str, rows: list[tuple[Any, ...]], key: str) -> set[str]:
        # ``BEGIN IMMEDIATE`` keeps other writers out: every row the caller found absent inserts
        if self.conn.executemany(sql, rows).rowcount != len(rows):
            raise TransientStoreError("storage error: rows changed during a batch write; try again")
        return {str(row[0]) for row in rows}

    def put_docs(self, docs: Iterable[Doc]) -> None:
        put_docs(self.conn, docs)

    def put_doc_rows(self, rows: list[tuple[str, ...]]) -> None:
        put_doc_rows(self.conn, rows)

    def close(self) -> None:
        if self._conn is None:
            return
        if self._conn.checkpoint_owed:  # a purge's checkpoint was blocked: try again
            with contextlib.suppress(sqlite3.Error):  # still owed in ``meta``: the next
                purge.after_purge(self._conn, True)  # open of the shelf does it
        self._conn.close()
        self._conn = None
