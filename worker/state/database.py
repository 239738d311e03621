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

from dsh_memory_worker.worker.state.audit import AuditRepo
from dsh_memory_worker.worker.state.db import make_engine
from dsh_memory_worker.worker.state.failures import FailureRepo
from dsh_memory_worker.worker.state.leases import Clock, LeaseRepo
from dsh_memory_worker.worker.state.model_calls import ModelCallRepo
from dsh_memory_worker.worker.state.models import utcnow
from dsh_memory_worker.worker.state.progress import ProgressRepo
from dsh_memory_worker.worker.state.provenance import ProvenanceRepo
from dsh_memory_worker.worker.state.purge import MIGRATED_TABLES, PURGED_TABLES, after_purge
from dsh_memory_worker.worker.state.sessions import SessionRepo


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
        #: Tables whose purge another connection kept from finishing (tried again later).
        self._purge_owed: tuple[str, ...] = ()

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
            from dsh_memory_worker.worker.state.migrate import upgrade_to_head

            if upgrade_to_head(url, migrations_dir):
                db = cls(url, clock=clock)
                # A revision rewrote stored names (0004: work units' slugs): the old text leaves
                # the files as after any purge. Only then: on PostgreSQL it is a VACUUM FULL.
                db.after_rewrite()
                return db
        return cls(url, clock=clock)

    @contextmanager
    def transaction(self) -> Iterator[Repos]:
        """One short transaction: committed when the block ends, rolled back on an error."""
        with self.engine.begin() as conn:
            yield self._repos(conn)
        if self._purge_owed and self.engine.dialect.name == "sqlite":
            self._purge(())  # a checkpoint attempt is cheap; a VACUUM FULL is not

    def after_purge(self) -> bool:
        """Call once a transaction that overwrote stored text (``scrub_title``) has committed:
        the old text leaves the database files (:mod:`worker.state.purge`). True when done; when
        another connection blocked it, it is tried again at the end of this object's next
        transaction (SQLite), at the next ``after_purge`` and at ``dispose``."""
        return self._purge(PURGED_TABLES)

    def after_rewrite(self) -> bool:
        """Call after an upgrade whose revisions rewrote stored rows (:func:`upgrade` of
        :mod:`worker.state.migrate` said so): the old text of the renamed rows leaves the files
        of ``audit`` and ``provenance``. Owed like :meth:`after_purge` when blocked."""
        return self._purge(MIGRATED_TABLES)

    def _purge(self, tables: tuple[str, ...]) -> bool:
        """Purge ``tables`` and those still owed; what is not done stays owed."""
        tables = tuple(dict.fromkeys((*self._purge_owed, *tables)))
        if not tables:
            return True
        done = after_purge(self.engine, tables)
        self._purge_owed = () if done else tables
        return done

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
            self._purge(())
        self.engine.dispose()
        if self._read_engine is not None and self._read_engine.pool is not self.engine.pool:
            self._read_engine.dispose()
