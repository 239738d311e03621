"""A new SQLite state database made from the template has exactly the schema Alembic makes, is
used only at the packaged head, and N processes creating it at once make one database."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from dsh_memory_worker.worker.state import template
from dsh_memory_worker.worker.state.database import StateDB
from dsh_memory_worker.worker.state.migrate import current_revision, upgrade
from dsh_memory_worker.worker.state.revision_files import PACKAGED_MIGRATIONS, script_head
from dsh_memory_worker.worker.state.template import (
    create_from_template,
    dump_schema,
    template_revision,
)

OPEN_AND_REPORT = """
import sys
from dsh_memory_worker.worker.state.database import StateDB
StateDB.open(sys.argv[1]).dispose()
print("alembic" in sys.modules)
"""


def _schema(database: Path) -> list[tuple[str, str, str, str | None]]:
    conn = sqlite3.connect(database)
    try:
        return sorted(conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_master"))
    finally:
        conn.close()


def test_the_template_is_the_schema_alembic_makes(tmp_path: Path) -> None:
    database = tmp_path / "alembic.db"
    upgrade(f"sqlite:///{database}")
    assert template.TEMPLATE.read_text(encoding="utf-8") == dump_schema(database), (
        "worker/state/schema_head.sql is not the schema of the packaged revisions: write it "
        "again with `.venv/bin/python -m dsh_memory_worker.worker.state.write_template`"
    )
    assert template_revision(template.TEMPLATE.read_text()) == script_head(PACKAGED_MIGRATIONS)


@pytest.mark.integration
def test_a_new_database_is_made_from_the_template_without_alembic(tmp_path: Path) -> None:
    database = tmp_path / "state" / "new.db"
    done = subprocess.run(
        [sys.executable, "-c", OPEN_AND_REPORT, f"sqlite:///{database}"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert done.stdout.strip() == "False"
    reference = tmp_path / "alembic.db"
    upgrade(f"sqlite:///{reference}")
    assert _schema(database) == _schema(reference)
    assert current_revision(f"sqlite:///{database}") == script_head(PACKAGED_MIGRATIONS)
    conn = sqlite3.connect(database)
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    finally:
        conn.close()
    state = StateDB(f"sqlite:///{database}")  # the repositories work on it
    try:
        with state.transaction() as repos:
            repos.audit.record("reset-progress", "reset", shelf="default", session_id="s-1")
        with state.read() as repos:
            assert [entry.session_id for entry in repos.audit.entries()] == ["s-1"]
    finally:
        state.dispose()
    # the database and its migration lock file (kept: waiters lock the same inode)
    assert sorted(p.name for p in database.parent.iterdir()) == ["new.db", "new.db.lock"]


def test_a_template_at_another_revision_is_not_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stale = tmp_path / "schema_head.sql"
    text = template.TEMPLATE.read_text(encoding="utf-8")
    stale.write_text(text.replace(template_revision(text) or "", "older_0", 1), encoding="utf-8")
    monkeypatch.setattr(template, "TEMPLATE", stale)
    assert not create_from_template(tmp_path / "never.db", script_head(PACKAGED_MIGRATIONS) or "")
    assert not (tmp_path / "never.db").exists()
    url = f"sqlite:///{tmp_path / 'alembic.db'}"
    StateDB.open(url).dispose()  # Alembic's path instead
    assert current_revision(url) == script_head(PACKAGED_MIGRATIONS)
