"""The first ``run --once`` on a home that holds nothing yet, done without the runtime.

A run that finds no state database and an empty DSH sessions directory has nothing to read and
no watermark to compare: a state database made now holds no row, so no job is owed, no session
is known and no repair is pending. What the full run leaves behind is then only its files: the
state database made from the migrated schema (:mod:`worker.state.template`) and the store's shelf,
opened once. :func:`first_run_on_empty_home` makes exactly those, the same way, without importing
SQLAlchemy, the job stack or the watcher (about two thirds of such a run's start-up), and the
command prints the same progress and summary (``tests/run/test_run_once_lazy_imports.py``
compares the two paths' outputs, state databases and store files).

Anything it cannot vouch for takes the full path: a state database that exists (made by a
process that started at the same moment, too) or is not a plain SQLite file, ``migrations_dir``
set, log shipping, a store that is not hypatia-lite in process or is a PostgreSQL shelf, a
sessions directory with anything in it, a template not at the packaged head, a store that fails
to open (the full path then says why, in its own words).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from dsh_memory_worker.worker.settings import Settings


def first_run_on_empty_home(settings: Settings) -> bool:
    """Make the state database and open the store as a full ``run --once`` would on this empty
    home, and return True (the run had nothing else to do); False, having changed nothing, when
    the home is not one (see the module docstring)."""
    database = settings.state_file
    if (
        database is None
        or settings.shipping
        or settings.migrations_dir is not None
        or settings.store_transport != "lite"
        or settings.store_shelf_url
        or database.exists()
        or not _empty_directory(settings.sessions_root)
    ):
        return False
    return _create_state(database) and _open_store(settings)


def _empty_directory(path: Path) -> bool:
    try:
        with os.scandir(path) as entries:
            return next(entries, None) is None
    except OSError:  # missing, not a directory, unreadable: the full path says which
        return False


def _create_state(database: Path) -> bool:
    """The state database from the template at the packaged head, under the migration lock (as
    :func:`worker.state.migrate.upgrade_to_head` makes it); False when it exists by now."""
    from dsh_memory_worker.worker.state.revision_files import (
        MigrationsNotFound,
        find_migrations_dir,
        migration_lock,
        script_head,
    )
    from dsh_memory_worker.worker.state.template import create_from_template

    try:
        head = script_head(find_migrations_dir())
    except MigrationsNotFound:
        return False
    if head is None:
        return False
    try:
        database.parent.mkdir(parents=True, exist_ok=True)
        with migration_lock(database):
            return not database.exists() and create_from_template(database, head)
    except OSError:  # a data directory under a file, unwritable: the full path says which
        return False


def _open_store(settings: Settings) -> bool:
    """Open and close the configured shelf (creating hypatia-lite's home and shelf as the full
    path's store check does); False when it cannot be opened."""
    from dsh_memory_worker.memory.store.factory import open_store
    from dsh_memory_worker.worker.store_config import store_config

    try:
        store = open_store(store_config(settings, settings.store_shelf))
    except Exception:  # the full path opens it again and reports the error as it always has
        return False
    store.close()
    return True
