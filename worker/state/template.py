"""A new SQLite state database made from the migrated schema, without running Alembic.

``schema_head.sql`` (beside this module, package data) is the schema the Alembic revisions
produce on SQLite — every ``CREATE`` statement SQLite keeps in ``sqlite_master``, in order, and the
``alembic_version`` row — headed by the revision it is at. A first run on a fresh home creates its
state database from it (:func:`create_from_template`: a temporary file, then a rename, under the
migration lock) instead of importing Alembic and running every revision: about a third of a
first run's start-up. It is used only when its revision is exactly the head of the packaged
revisions; any other case (an older template, ``migrations_dir`` set, PostgreSQL) runs Alembic.

After adding a revision, write the template again (``tests/state/test_state_template.py`` fails
until then, and says so)::

    .venv/bin/python -m dsh_memory_worker.worker.state.write_template
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import tempfile
from pathlib import Path
from typing import Final

#: The schema at the head revision (see the module docstring).
TEMPLATE: Final = Path(__file__).resolve().with_name("schema_head.sql")
_HEADER: Final = "-- state database schema at alembic revision "


def dump_schema(database: Path) -> str:
    """The template text of the SQLite database at ``database`` (migrated by Alembic)."""
    conn = sqlite3.connect(database)
    try:
        ((revision,),) = conn.execute("SELECT version_num FROM alembic_version").fetchall()
        statements = [
            sql
            for (sql,) in conn.execute(
                "SELECT sql FROM sqlite_master WHERE sql IS NOT NULL ORDER BY rowid"
            )
        ]
    finally:
        conn.close()
    lines = [
        f"{_HEADER}{revision}",
        "-- written by `python -m dsh_memory_worker.worker.state.write_template`; do not edit",
    ]
    lines += [f"{sql};" for sql in statements]
    lines.append(f"INSERT INTO alembic_version (version_num) VALUES ('{revision}');")
    return "\n".join(lines) + "\n"


def template_revision(text: str) -> str | None:
    """The revision a template text is at (its first line), or None."""
    first = text.split("\n", 1)[0]
    return first[len(_HEADER) :].strip() or None if first.startswith(_HEADER) else None


def create_from_template(database: Path, head: str) -> bool:
    """Create the state database ``database`` from the template when the template is at
    ``head``; False (nothing created) when it is not or cannot be read. The caller holds the
    migration lock and has checked that ``database`` does not exist."""
    try:
        text = TEMPLATE.read_text(encoding="utf-8")
    except OSError:
        return False
    if template_revision(text) != head:
        return False
    database.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=database.parent, prefix=f".{database.name}.", suffix=".new")
    os.close(fd)
    try:
        conn = sqlite3.connect(tmp, isolation_level=None)
        try:
            conn.executescript(f"BEGIN;\n{text}COMMIT;")
            conn.execute("PRAGMA journal_mode = WAL")  # what every engine sets on connect
        finally:
            conn.close()
        os.replace(tmp, database)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        for suffix in ("-wal", "-shm", "-journal"):
            with contextlib.suppress(OSError):
                os.unlink(tmp + suffix)
        raise
    return True
