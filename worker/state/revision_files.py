"""The Alembic revision files and the migration lock, read without SQLAlchemy or Alembic.

Where the packaged revisions are (:data:`PACKAGED_MIGRATIONS`), the one head their files name
(:func:`script_head`, read as text) and the directory lock a SQLite state database is created or
migrated under (:func:`migration_lock`). :mod:`worker.state.migrate` builds on them; a first run on
an empty home (:mod:`worker.run.empty_home`) uses them to make the state database from the
template without importing SQLAlchemy.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Final

#: The import name the top-level ``migrations/`` folder installs under (see ``setup.py``).
MIGRATIONS_PACKAGE: Final = "dsh_memory_worker.migrations"


def packaged_migrations() -> Path:
    """The shipped Alembic script directory: the installed (or editable-mapped) package
    :data:`MIGRATIONS_PACKAGE`, else ``migrations/`` beside ``worker/`` in a checkout that is
    only on ``sys.path``. Nothing is imported: the package's location is looked up."""
    import importlib.util

    spec = importlib.util.find_spec(MIGRATIONS_PACKAGE)
    if spec is not None and spec.submodule_search_locations:
        return Path(next(iter(spec.submodule_search_locations))).resolve()
    return Path(__file__).resolve().parents[2] / "migrations"


#: The revisions shipped with the distribution.
PACKAGED_MIGRATIONS: Final = packaged_migrations()


class MigrationsNotFound(RuntimeError):
    """No usable Alembic script directory; the message says where it looked and what to do."""


def find_migrations_dir(explicit: Path | None = None) -> Path:
    """The Alembic script directory (holding ``env.py`` and ``versions/`` with revisions)."""
    candidate = explicit if explicit is not None else PACKAGED_MIGRATIONS
    if not (candidate / "env.py").is_file():
        if explicit is not None:
            raise MigrationsNotFound(
                f"migrations_dir {explicit} has no env.py; unset "
                "MEMORY_WORKER_MIGRATIONS_DIR to use the packaged revisions"
            )
        raise MigrationsNotFound(
            f"the packaged migrations ({candidate}) are missing: reinstall dsh-memory-worker"
        )
    if not any((candidate / "versions").glob("*.py")):
        raise MigrationsNotFound(
            f"{candidate / 'versions'} holds no Alembic revision; "
            "reinstall dsh-memory-worker or fix migrations_dir"
        )
    return candidate


def migration_lock_file(database: Path) -> Path:
    """The lock file the SQLite state database ``database`` is created and migrated under:
    ``<database>.lock`` beside it (a file no SQLite connection opens, so releasing its lock
    cannot drop SQLite's own POSIX locks on the database file)."""
    return database.with_name(database.name + ".lock")


@contextmanager
def migration_lock(database: Path) -> Iterator[None]:
    """Hold the exclusive lock of :func:`migration_lock_file` (``filelock``: ``flock`` on Unix;
    the file stays after release, so every waiter locks the same inode)."""
    from filelock import FileLock

    with FileLock(migration_lock_file(database)):
        yield


_REVISION = re.compile(r"^revision(?:\s*:\s*str)?\s*=\s*[\"']([^\"']+)[\"']\s*$", re.M)
_DOWN = re.compile(r"^down_revision(?:\s*:[^=]*)?\s*=\s*(?:None|[\"']([^\"']+)[\"'])\s*$", re.M)


def script_head(migrations_dir: Path) -> str | None:
    """The one head of the revision files in ``migrations_dir/versions``, read as text (each
    file's ``revision = "…"`` and ``down_revision = "…" | None``); None when a file does not
    read that way (a merge, a tuple) or there is not exactly one head."""
    revisions: set[str] = set()
    parents: set[str] = set()
    for path in sorted((migrations_dir / "versions").glob("*.py")):
        source = path.read_text(encoding="utf-8")
        revision, down = _REVISION.findall(source), _DOWN.findall(source)
        if len(revision) != 1 or len(down) != 1:
            return None
        revisions.add(revision[0])
        if down[0]:
            parents.add(down[0])
    heads = revisions - parents
    return heads.pop() if len(heads) == 1 else None
