"""Engines and sessions for the state database (SQLite or PostgreSQL, same behaviour).

SQLite: WAL journal, a busy timeout, foreign keys on, and every writing transaction opened with
``BEGIN IMMEDIATE`` so a read-then-conditional-write cannot interleave with another process's
write. Read-only transactions (``StateDB.read``) run on a second engine with a deferred ``BEGIN``
and ``query_only``: under WAL they read a snapshot without waiting for writers (a busy wait costs
milliseconds, and ``run --once --jobs N`` processes took turns on every read).

``synchronous = NORMAL``: a commit survives a crash of the process; an OS crash or power
loss may drop the last few transactions (never a middle one: WAL recovery keeps a prefix). That
is safe for process-then-advance: the store's writes are durable before a watermark advance
commits (a hypatia-lite write fsyncs its WAL before it returns), so a lost advance leaves the
watermark behind the store — the span is written again, idempotently — never ahead of it.

PostgreSQL: psycopg 3; conditional ``UPDATE … WHERE version = :v`` re-checks the row under its
lock, which is what the repositories rely on.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.engine.url import URL
from sqlalchemy.exc import ArgumentError

from dsh_memory_worker.worker.state.disk_full import remember_sqlite_path
from dsh_memory_worker.worker.state.lock_wait import LockWaits
from dsh_memory_worker.worker.state.prepared import driver_execute, observed

SQLITE_BUSY_TIMEOUT_MS = 30_000


class StateURLError(ValueError):
    """The state URL cannot be used; the message is one line."""


def normalize_url(url: str) -> URL:
    """Parse ``url``; ``postgres://`` and ``postgresql://`` use the psycopg 3 driver."""
    try:
        parsed = make_url(url)
    except ArgumentError as exc:
        raise StateURLError(f"state URL {url!r} is not a database URL: {exc}") from None
    if parsed.drivername in ("postgres", "postgresql"):
        parsed = parsed.set(drivername="postgresql+psycopg")
    if parsed.get_backend_name() not in ("sqlite", "postgresql"):
        raise StateURLError(
            f"state URL backend {parsed.get_backend_name()!r} is not supported "
            "(use sqlite:///path or postgresql://...)"
        )
    return parsed


def _sqlite_setup(engine: Engine, *, read_only: bool = False) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        # Let SQLAlchemy's "begin" event issue BEGIN itself (pysqlite's own is deferred).
        dbapi_conn.isolation_level = None
        cursor = dbapi_conn.cursor()
        cursor.execute(f"PRAGMA busy_timeout = {SQLITE_BUSY_TIMEOUT_MS}")
        cursor.execute("PRAGMA journal_mode = WAL")
        cursor.execute("PRAGMA synchronous = NORMAL")
        cursor.execute("PRAGMA foreign_keys = ON")
        cursor.execute("PRAGMA secure_delete = ON")  # overwritten text is zeroed (state.purge)
        if read_only:
            cursor.execute("PRAGMA query_only = ON")
        cursor.close()

    # Writers take the write lock up front; readers (WAL) never wait for a writer.
    begin = "BEGIN" if read_only else "BEGIN IMMEDIATE"
    # A writer's wait for another process's lock is said, not silent (worker.state.lock_wait).
    waits = None if read_only else LockWaits(engine.url.database or "state database")

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Any) -> None:
        with waits.waiting() if waits is not None else contextlib.nullcontext():
            if observed(conn):
                conn.exec_driver_sql(begin)  # a listener sees every statement, BEGIN included
            else:
                driver_execute(conn, begin)


def make_engine(url: str, *, read_only: bool = False) -> Engine:
    """An engine for ``url``; creates the SQLite file's directory when it is missing.

    ``read_only`` (SQLite): transactions that cannot write (``query_only``) and begin with a
    deferred ``BEGIN`` that never waits for a writer. A PostgreSQL engine is never read-only:
    :meth:`StateDB.read` borrows the main engine's pool for ``READ ONLY`` transactions."""
    parsed = normalize_url(url)
    if parsed.get_backend_name() == "sqlite":
        database = parsed.database or ""
        if database and database != ":memory:" and not database.startswith("file:"):
            Path(database).expanduser().parent.mkdir(parents=True, exist_ok=True)
            remember_sqlite_path(str(Path(database).expanduser()))  # to name a full disk
        engine = create_engine(
            parsed, connect_args={"timeout": SQLITE_BUSY_TIMEOUT_MS / 1000}, pool_pre_ping=False
        )
        _sqlite_setup(engine, read_only=read_only)
        return engine
    try:
        return create_engine(parsed, pool_pre_ping=True, pool_size=5, max_overflow=5)
    except ImportError as exc:
        raise StateURLError(
            f"state URL driver {parsed.drivername!r} is not installed ({exc.name}); "
            "install the distributed extra: pip install 'dsh-memory-worker[distributed]'"
        ) from None
