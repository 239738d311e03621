"""The PostgreSQL backend of a shelf (psycopg 3, imported only when such a shelf is opened).

One autocommit connection per store: a read is one statement, a write one short transaction.
Writers of one shelf — in any process, on any machine — run in parallel; the protocol logic's
get-before-create semantics hold as on SQLite (where ``BEGIN IMMEDIATE`` serialises them)
because every create is ``INSERT … ON CONFLICT DO NOTHING`` on a unique key (a racer waits for
the first writer's commit, then does nothing), a batch learns which rows *it* inserted from
``RETURNING`` (:meth:`PgBackend.insert_new`), and an update is a compare-and-swap on the row.
Readers never wait for writers (MVCC). Only schema creation takes the shelf's advisory lock.
A lost connection, a deadlock, a serialization failure or a lock timeout is retried a few times
(with a new connection when the old one broke) before it surfaces as a ``TransientStoreError``;
other database errors are one-line ``StoreError`` s (``storage error: PostgreSQL error: …``).
Purges: :mod:`hypatia_lite.pg.purge`.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from functools import lru_cache
from typing import TYPE_CHECKING, Any, TypeVar

from hypatia_lite import retry
from hypatia_lite.backend import Doc, first_line
from hypatia_lite.dialect import PG_FTS_CONFIG, POSTGRESQL, pg_words
from hypatia_lite.fts import doc_row
from hypatia_lite.pg import url as pg_url
from hypatia_lite.protocol import StoreError, TransientStoreError
from hypatia_lite.shelves import ShelfError

if TYPE_CHECKING:
    import psycopg

T = TypeVar("T")
_RETRIES = 6
#: 0.05 s before the second try, doubling (a reconnect after each pause when the link broke).
_BACKOFF = retry.Backoff(0.05, cap=1.0)
_UPSERT_DOC = (
    "INSERT INTO docs(catalog, key, fts_key, fts_data, fts_tags, fts_synonyms)"
    " VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (catalog, key) DO UPDATE SET"
    " fts_key = excluded.fts_key, fts_data = excluded.fts_data,"
    " fts_tags = excluded.fts_tags, fts_synonyms = excluded.fts_synonyms"
)


def _driver(shelf: str) -> Any:
    try:
        import psycopg
    except ImportError as err:
        raise ShelfError(
            f"shelf error: shelf '{shelf}' is stored in PostgreSQL, which needs the psycopg "
            "driver: pip install 'hypatia-lite[postgresql]'"
        ) from err
    return psycopg


@lru_cache(maxsize=512)
def _placeholders(sql: str) -> str:
    """``?`` placeholders (the protocol logic's spelling) as psycopg's ``%s``."""
    return sql.replace("%", "%%").replace("?", "%s")


def lock_key(schema: str) -> int:
    """The advisory-lock key of a shelf (a signed 64-bit number derived from its schema)."""
    digest = hashlib.sha256(f"hypatia-lite:{schema}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


class PgConnection:
    """sqlite3-style ``execute`` / ``executemany`` over a psycopg connection."""

    def __init__(self, raw: psycopg.Connection[Any]) -> None:
        self.raw = raw

    def execute(self, sql: str, parameters: Sequence[Any] = (), /) -> Any:
        if not parameters:
            return self.raw.execute(sql.replace("%", "%%") if "%" in sql else sql, ())
        return self.raw.execute(_placeholders(sql), tuple(parameters))

    def executemany(self, sql: str, parameters: Iterable[Sequence[Any]], /) -> Any:
        cur = self.raw.cursor()
        cur.executemany(_placeholders(sql), [tuple(p) for p in parameters])
        return cur


class PgBackend:
    """A shelf in a PostgreSQL schema (see the module doc)."""

    dialect = POSTGRESQL
    label = "PostgreSQL"

    def __init__(self, shelf: str, url: str, schema: str, location: str) -> None:
        self.shelf, self.url, self.schema, self.location = shelf, url, schema, location
        self._psycopg = _driver(shelf)
        self._key = lock_key(schema)
        self._conn: PgConnection | None = None
        self.vacuum_owed = False

    @classmethod
    def open(cls, shelf: str, location: str) -> PgBackend:
        try:
            url, schema = pg_url.split(location)
        except ValueError as err:
            raise ShelfError(f"shelf error: {err}") from err
        backend = cls(shelf, url, schema, location)
        try:
            backend._connect()
            backend._create()
            backend._finish_owed()
        except backend._psycopg.Error as err:
            backend.close()
            raise ShelfError(
                f"shelf error: cannot open shelf '{shelf}' at {pg_url.redact(location)}: "
                f"{first_line(err)}"
            ) from err
        return backend

    # ------------------------------------------------------------------------- connection

    def _connect(self) -> None:
        raw = self._psycopg.connect(self.url, autocommit=True, connect_timeout=10)
        raw.execute(f'SET search_path TO "{self.schema}"')
        self._conn = PgConnection(raw)

    def _create(self) -> None:
        from hypatia_lite.pg import schema

        raw = self.conn.raw
        found = raw.execute("SELECT to_regclass(%s)", (f'"{self.schema}".meta',)).fetchone()
        if found is not None and found[0] is not None:
            return
        with raw.transaction():
            raw.execute("SELECT pg_advisory_xact_lock(%s)", (self._key,))
            raw.execute(f'CREATE SCHEMA IF NOT EXISTS "{self.schema}"')
            config = raw.execute(
                "SELECT 1 FROM pg_ts_config c JOIN pg_namespace n ON n.oid = c.cfgnamespace"
                " WHERE n.nspname = %s AND c.cfgname = %s",
                (self.schema, PG_FTS_CONFIG),
            ).fetchone()
            if config is None:
                raw.execute(schema.FTS_CONFIG)
            raw.execute(schema.TABLES)

    def _finish_owed(self) -> None:
        from hypatia_lite.pg import purge

        if purge.is_owed(self.conn.raw):
            self.vacuum_owed = purge.vacuum(self.conn.raw, True)

    @property
    def conn(self) -> PgConnection:
        if self._conn is None:
            raise StoreError(f"hypatia-lite shelf '{self.shelf}' is closed")
        return self._conn

    # ---------------------------------------------------------------------------- protocol

    @contextmanager
    def write(self, *, purge_text: bool = False) -> Iterator[None]:
        raw = self.conn.raw
        with raw.transaction():
            yield
        if purge_text or self.vacuum_owed:
            from hypatia_lite.pg import purge

            try:
                self.vacuum_owed = purge.vacuum(raw, self.vacuum_owed)
            except self._psycopg.Error:  # never let a retry run the committed write again:
                self.vacuum_owed = True  # owed here (and in ``meta`` when it got that far)

    def run(self, action: Callable[[], T]) -> T:
        errors = self._psycopg
        try:
            return retry.call(
                action,
                times=_RETRIES,
                backoff=_BACKOFF,
                # lost connection, deadlock, lock timeout
                retry_on=lambda err: isinstance(err, errors.OperationalError),
                between=self._reconnect_if_broken,
            )
        except errors.OperationalError as err:
            raise TransientStoreError(
                f"storage error: PostgreSQL error: {first_line(err)}"
            ) from err
        except errors.Error as err:
            raise StoreError(f"storage error: PostgreSQL error: {first_line(err)}") from err

    def _reconnect_if_broken(self) -> None:
        if self._conn is not None and not self._conn.raw.broken and not self._conn.raw.closed:
            return
        with contextlib.suppress(Exception):
            if self._conn is not None:
                self._conn.raw.close()
        with contextlib.suppress(self._psycopg.OperationalError):  # the next attempt says so
            self._connect()

    def insert_new(self, sql: str, rows: list[tuple[Any, ...]], key: str) -> set[str]:
        cur = self.conn.raw.cursor()
        cur.executemany(_placeholders(f"{sql} RETURNING {key}"), rows, returning=True)
        new: set[str] = set()
        while True:
            new.update(str(found[0]) for found in cur.fetchall())
            if not cur.nextset():
                return new

    def put_docs(self, docs: Iterable[Doc]) -> None:
        self.put_doc_rows([doc_row(catalog, key, content) for catalog, key, content in docs])

    def put_doc_rows(self, rows: list[tuple[str, ...]]) -> None:
        if rows:
            self.conn.raw.cursor().executemany(
                _UPSERT_DOC, [(r[0], r[1], *(pg_words(c) for c in r[2:])) for r in rows]
            )

    def close(self) -> None:
        if self._conn is None:
            return
        if self.vacuum_owed:  # still owed in ``meta``: the next open of the shelf does it
            from hypatia_lite.pg import purge

            with contextlib.suppress(self._psycopg.Error):
                self.vacuum_owed = purge.vacuum(self._conn.raw, True)
        self._conn.raw.close()
        self._conn = None
