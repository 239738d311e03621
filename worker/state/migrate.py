"""Run the Alembic revisions in the top-level ``migrations/`` programmatically.

The script directory ships in the wheel as the package ``dsh_memory_worker.migrations``
(``setup.py`` maps the top-level folder to that name; ``packaged_migrations`` finds it
installed, editable or in a plain checkout:
:mod:`worker.state.revision_files`); an explicit ``migrations_dir`` (setting
``migrations_dir``) replaces it. Migrations take a lock first
(PostgreSQL advisory lock; SQLite: an exclusive ``flock`` on the database file's directory, then
``BEGIN IMMEDIATE``) so N workers starting at once migrate once. The directory lock is taken before
the first connection: on a brand-new file, SQLite's switch to WAL and the first schema write can
answer "database is locked" at once, without waiting out the busy timeout, to a second
connection that opened the file in the same instant.

A database already at the newest revision is not touched by Alembic: :func:`upgrade_to_head`
reads ``alembic_version`` with one query and compares it with the head found in the revision
files (:func:`script_head`), so a process that starts on a migrated database never imports
Alembic (and Mako; about 8 MB of a follower's memory). Anything unusual — a revision file it
cannot read, a merge, a missing table, a SQLite file that does not exist yet — takes Alembic's
path as before. A SQLite state database that does not exist yet is created from the migrated
schema (:mod:`worker.state.template`) when that is at the packaged head, again without Alembic.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import Connection, text

if TYPE_CHECKING:
    from alembic.config import Config

from dsh_memory_worker.worker.state.db import make_engine, normalize_url
from dsh_memory_worker.worker.state.revision_files import (
    PACKAGED_MIGRATIONS,
    find_migrations_dir,
    migration_lock,
    script_head,
)

# An arbitrary constant naming this project's migration lock in pg_advisory_xact_lock.
_PG_LOCK_ID = 0x6D775F6D6967  # "mw_mig"
#: The key in Alembic's ``config.attributes`` where revisions count the stored rows they rewrote
#: (:func:`note_rewritten_rows`); :func:`upgrade` reads it.
REWRITTEN_ROWS = "memory_worker.rewritten_rows"


def alembic_config(url: str, migrations_dir: Path | None = None) -> Config:
    """An Alembic config for ``url`` without reading ``alembic.ini``."""
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(find_migrations_dir(migrations_dir)))
    config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return config


def _sqlite_file(url: str) -> tuple[str, bool] | None:
    """The database file of a SQLite ``url`` and whether the URL has a query; ``None`` for
    another backend, an in-memory database or a ``file:`` URI."""
    parsed = normalize_url(url)
    database = parsed.database or ""
    if (
        parsed.get_backend_name() != "sqlite"
        or not database
        or database == ":memory:"
        or database.startswith("file:")
    ):
        return None
    return database, bool(parsed.query)


def _sqlite_file_lock(url: str) -> AbstractContextManager[None]:
    found = _sqlite_file(url)
    if found is None:
        return nullcontext()
    database = found[0]
    path = Path(database).expanduser()
    path.parent.mkdir(parents=True, exist_ok=True)
    return migration_lock(path)


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


def note_rewritten_rows(rows: int) -> None:
    """Called by a revision's ``upgrade()`` that rewrote ``rows`` stored rows in place (0004:
    work units' names): the old text is still in the table files, and :func:`upgrade` tells its
    caller so (``StateDB.open`` then makes the files forget it: :mod:`worker.state.purge`)."""
    from alembic import op

    config = op.get_context().config
    if config is not None and rows:
        config.attributes[REWRITTEN_ROWS] = config.attributes.get(REWRITTEN_ROWS, 0) + rows


def _run(url: str, migrations_dir: Path | None, action: str, revision: str) -> int:
    from alembic import command

    config = alembic_config(url, migrations_dir)
    with locked_connection(url) as conn:
        config.attributes["connection"] = conn
        if action == "upgrade":
            command.upgrade(config, revision)
        else:
            command.downgrade(config, revision)
    return int(config.attributes.get(REWRITTEN_ROWS, 0))


def upgrade(url: str, revision: str = "head", migrations_dir: Path | None = None) -> bool:
    """Migrate ``url`` up to ``revision`` (default: the newest). True when a revision it ran
    rewrote stored rows (:func:`note_rewritten_rows`): their old text is still in the files."""
    return _run(url, migrations_dir, "upgrade", revision) > 0


def upgrade_to_head(url: str, migrations_dir: Path | None = None) -> bool:
    """Migrate the database at ``url`` to the newest revision (safe to call on every start;
    a database already there is only read, without Alembic: see the module docstring). True
    when a revision rewrote stored rows (the caller purges); False when none did, also when a
    new database was created."""
    directory = find_migrations_dir(migrations_dir)
    if _at_head(url, directory) or _from_template(url, directory):
        return False
    return upgrade(url, "head", migrations_dir)


def _from_template(url: str, migrations_dir: Path) -> bool:
    """Create a new SQLite state database from the migrated schema
    (:mod:`worker.state.template`) when its revision is the packaged head; under the migration
    lock, so of N processes starting at once one creates it and the others find it at head."""
    if migrations_dir != PACKAGED_MIGRATIONS:
        return False
    found = _sqlite_file(url)
    if found is None or found[1]:
        return False
    database = found[0]
    head = script_head(migrations_dir)
    if head is None:
        return False
    from dsh_memory_worker.worker.state.template import create_from_template

    path = Path(database).expanduser()
    with _sqlite_file_lock(url):
        if path.exists():
            return _at_head(url, migrations_dir)
        return create_from_template(path, head)


def _at_head(url: str, migrations_dir: Path) -> bool:
    """True when the database at ``url`` exists and ``alembic_version`` holds exactly the
    head of :func:`script_head`; False (let Alembic look) on anything else."""
    head = script_head(migrations_dir)
    if head is None:
        return False
    parsed = normalize_url(url)
    database = parsed.database or ""
    if parsed.get_backend_name() == "sqlite" and (
        not database
        or database == ":memory:"
        or database.startswith("file:")
        or not Path(database).expanduser().is_file()
    ):
        return False  # a new file is created under the migration lock, not here
    engine = make_engine(url)
    try:
        with engine.connect() as conn:
            rows = conn.execute(text("SELECT version_num FROM alembic_version")).all()
    except Exception:  # no table, no database, no server: Alembic's path says what is wrong
        return False
    finally:
        engine.dispose()
    return [row[0] for row in rows] == [head]


def downgrade(url: str, revision: str, migrations_dir: Path | None = None) -> None:
    """Migrate ``url`` down to ``revision`` (``base`` removes every table)."""
    _run(url, migrations_dir, "downgrade", revision)


def current_revision(url: str) -> str | None:
    """The revision the database at ``url`` is at, or ``None`` when never migrated."""
    from alembic.runtime.migration import MigrationContext

    engine = make_engine(url)
    try:
        with engine.connect() as conn:
            return MigrationContext.configure(conn).get_current_revision()
    finally:
        engine.dispose()


def head_revision(migrations_dir: Path | None = None) -> str:
    """The newest revision in the script directory."""
    from alembic.config import Config
    from alembic.script import ScriptDirectory

    config = Config()
    config.set_main_option("script_location", str(find_migrations_dir(migrations_dir)))
    head = ScriptDirectory.from_config(config).get_current_head()
    assert head is not None, "the migrations directory has no revisions"
    return head


def revisions(migrations_dir: Path | None = None) -> list[str]:
    """Every revision id, oldest first."""
    from alembic.config import Config
    from alembic.script import ScriptDirectory

    config = Config()
    config.set_main_option("script_location", str(find_migrations_dir(migrations_dir)))
    script = ScriptDirectory.from_config(config)
    return [rev.revision for rev in reversed(list(script.walk_revisions()))]
