"""``StateDB``: one engine, short transactions, every repository bound to the same connection.

The repositories run Core statements on a plain ``Connection``: they read and write columns,
never ORM objects, and an ORM ``Session`` around them cost about 1 ms a transaction for nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import Connection, Engine

from worker.state.audit import AuditRepo
from worker.state.db import make_engine
from worker.state.failures import FailureRepo
from worker.state.leases import Clock, LeaseRepo
from worker.state.model_calls import ModelCallRepo
from worker.state.models import utcnow
from worker.state.progress import ProgressRepo
from worker.state.provenance import ProvenanceRepo
from worker.state.purge import MIGRATED_TABLES, PURGED_TABLES, after_purge
from worker.state.sessions import SessionRepo


@dataclass(frozen=True)
class Repos:
    """The repositories of one transaction."""

    conn: Connection
    sessions: SessionRepo
    progress: ProgressRepo
    leases: LeaseRepo
    audit: AuditRepo
    failures: FailureRepo
    model_calls: ModelCallRepo
    provenance: ProvenanceRepo


class StateDB:
    """The state database at ``url`` (SQLite or PostgreSQL)."""

    def __init__(self, url: str, *, clock: Clock = utcnow) -> None:
        self.url = url
        self.engine: Engine = make_engine(url)
        self._read_engine: Engine | None = None
        self._clock = clock
        self._purge_owed = False

    @classmethod
    def open(
        cls,
        url: str,
        *,
        migrate: bool = True,
        migrations_dir: Path | None = None,
        clock: Clock = utcnow,
    ) -> StateDB:
        """Open ``url``, first migrating it to the newest revision unless ``migrate`` is False."""
        if migrate:
            # Start-up time: Alembic is imported only by a process that migrates.
            from worker.state.migrate import upgrade_to_head

            if upgrade_to_head(url, migrations_dir):
                db = cls(url, clock=clock)
                # A revision may rewrite stored names (0004: work units' slugs): the old text
                # leaves the files as after any purge.
                db._purge_owed = not after_purge(db.engine, MIGRATED_TABLES)
                return db
        return cls(url, clock=clock)

    @contextmanager
    def transaction(self) -> Iterator[Repos]:
        """One short transaction: committed when the block ends, rolled back on an error."""
        with self.engine.begin() as conn:
            yield self._repos(conn)
        if self._purge_owed and self.engine.dialect.name == "sqlite":
            self.after_purge()  # a checkpoint attempt is cheap; a VACUUM FULL is not

    def after_purge(self) -> bool:
        """Call once a transaction that overwrote stored text (``scrub_title``) has committed:
        the old text leaves the database files (:mod:`worker.state.purge`). True when done; when
        another connection blocked it, it is tried again at the end of this object's next
        transaction (SQLite), at the next ``after_purge`` and at ``dispose``."""
        self._purge_owed = not after_purge(self.engine, PURGED_TABLES)
        return not self._purge_owed

    @contextmanager
    def read(self) -> Iterator[Repos]:
        """One short read-only transaction (a consistent snapshot; a write in it fails). On
        SQLite it does not take the write lock, so it never waits for another process."""
        if self._read_engine is None:
            self._read_engine = (
                make_engine(self.url, read_only=True)
                if self.engine.dialect.name == "sqlite"
                # Same pool as the writers; READ ONLY is reset when a connection goes back.
                else self.engine.execution_options(postgresql_readonly=True)
            )
        with self._read_engine.begin() as conn:
            yield self._repos(conn)

    def _repos(self, conn: Connection) -> Repos:
        clock = self._clock
        return Repos(
            conn=conn,
            sessions=SessionRepo(conn, clock),
            progress=ProgressRepo(conn, clock),
            leases=LeaseRepo(conn, clock),
            audit=AuditRepo(conn, clock),
            failures=FailureRepo(conn, clock),
            model_calls=ModelCallRepo(conn, clock),
            provenance=ProvenanceRepo(conn, clock),
        )

    def dispose(self) -> None:
        if self._purge_owed:
            self.after_purge()
        self.engine.dispose()
        if self._read_engine is not None and self._read_engine.pool is not self.engine.pool:
            self._read_engine.dispose()
