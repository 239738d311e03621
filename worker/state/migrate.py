"""Run the Alembic revisions in ``worker/state/migrations/`` programmatically.

The script directory ships inside the package (package data, so a wheel install has it); an
explicit ``migrations_dir`` (setting ``migrations_dir``) replaces it. Migrations take a lock first
(PostgreSQL advisory lock; SQLite: an exclusive ``flock`` on the database file's directory, then
``BEGIN IMMEDIATE``) so N workers starting at once migrate once. The directory lock is taken before
the first connection: on a brand-new file, SQLite's switch to WAL and the first schema write can
answer "database is locked" at once, without waiting out the busy timeout, to a second
connection that opened the file in the same instant.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path
from typing import Final

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, text

from worker.state.db import make_engine, normalize_url

# An arbitrary constant naming this project's migration lock in pg_advisory_xact_lock.
_PG_LOCK_ID = 0x6D775F6D6967  # "mw_mig"


#: The revisions shipped with the package (``[tool.setuptools.package-data]``).
PACKAGED_MIGRATIONS: Final = Path(__file__).resolve().parent / "migrations"


class MigrationsNotFound(RuntimeError):
    """No usable Alembic script directory; the message says where it looked and what to do."""


def find_migrations_dir(explicit: Path | None = None) -> Path:
    """The Alembic script directory (holding ``env.py`` and ``versions/`` with revisions)."""
    candidate = explicit if explicit is not None else PACKAGED_MIGRATIONS
    if not (candidate / "env.py").is_file():
        if explicit is not None:
            raise MigrationsNotFound(f"migrations_dir {explicit} has no env.py; unset "
                                     "MEMORY_WORKER_MIGRATIONS_DIR to use the packaged revisions")
        raise MigrationsNotFound(f"the packaged migrations ({candidate}) are missing: "
                                 "reinstall dsh-memory-worker")
    if not any((candidate / "versions").glob("*.py")):
        raise MigrationsNotFound(f"{candidate / 'versions'} holds no Alembic revision; "
                                 "reinstall dsh-memory-worker or fix migrations_dir")
    return candidate


def alembic_config(url: str, migrations_dir: Path | None = None) -> Config:
    """An Alembic config for ``url`` without reading ``alembic.ini``."""
    config = Config()
    config.set_main_option("script_location", str(find_migrations_dir(migrations_dir)))
    config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return config


@contextmanager
def _directory_lock(directory: Path) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``directory`` (a lock no SQLite connection takes, and one
    whose release cannot drop SQLite's own POSIX locks on the database file)."""
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the flock


def _sqlite_file_lock(url: str) -> AbstractContextManager[None]:
    parsed = normalize_url(url)
    database = parsed.database or ""
    if parsed.get_backend_name() != "sqlite" or not database or database == ":memory:" \
            or database.startswith("file:"):
        return nullcontext()
    directory = Path(database).expanduser().parent
    directory.mkdir(parents=True, exist_ok=True)
    return _directory_lock(directory)


@contextmanager
def locked_connection(url: str) -> Iterator[Connection]:
    """A connection inside one transaction that holds the migration lock."""
    with _sqlite_file_lock(url):
        engine = make_engine(url)
        try:
            with engine.begin() as conn:
                if conn.dialect.name == "postgresql":
                    conn.execute(text("SELECT pg_advisory_xact_lock(:id)"), {"id": _PG_LOCK_ID})
                yield conn
        finally:
            engine.dispose()


def _run(url: str, migrations_dir: Path | None, action: str, revision: str) -> None:
    config = alembic_config(url, migrations_dir)
    with locked_connection(url) as conn:
        config.attributes["connection"] = conn
        if action == "upgrade":
            command.upgrade(config, revision)
        else:
            command.downgrade(config, revision)


def upgrade(url: str, revision: str = "head", migrations_dir: Path | None = None) -> None:
    """Migrate ``url`` up to ``revision`` (default: the newest)."""
    _run(url, migrations_dir, "upgrade", revision)


def upgrade_to_head(url: str, migrations_dir: Path | None = None) -> None:
    """Migrate the database at ``url`` to the newest revision (safe to call on every start)."""
    upgrade(url, "head", migrations_dir)


def downgrade(url: str, revision: str, migrations_dir: Path | None = None) -> None:
    """Migrate ``url`` down to ``revision`` (``base`` removes every table)."""
    _run(url, migrations_dir, "downgrade", revision)


def current_revision(url: str) -> str | None:
    """The revision the database at ``url`` is at, or ``None`` when never migrated."""
    engine = make_engine(url)
    try:
        with engine.connect() as conn:
            return MigrationContext.configure(conn).get_current_revision()
    finally:
        engine.dispose()


def head_revision(migrations_dir: Path | None = None) -> str:
    """The newest revision in the script directory."""
    config = Config()
    config.set_main_option("script_location", str(find_migrations_dir(migrations_dir)))
    head = ScriptDirectory.from_config(config).get_current_head()
    assert head is not None, "the migrations directory has no revisions"
    return head


def revisions(migrations_dir: Path | None = None) -> list[str]:
    """Every revision id, oldest first."""
    config = Config()
    config.set_main_option("script_location", str(find_migrations_dir(migrations_dir)))
    script = ScriptDirectory.from_config(config)
    return [rev.revision for rev in reversed(list(script.walk_revisions()))]
