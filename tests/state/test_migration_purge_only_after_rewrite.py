"""``StateDB.open`` rewrites the files of ``audit`` and ``provenance`` (PostgreSQL: ``VACUUM
FULL``) only when an upgrade rewrote rows of theirs (revision ``stable_unit_ids_1`` renaming work
units an older worker wrote): not when it creates a fresh database, not when an old database had
nothing to rename. A ``VACUUM FULL`` gives a table a new file (``pg_relation_filenode``), which is
what is observed here."""

from __future__ import annotations

import psycopg
import pytest
from sqlalchemy import create_engine, text
from state_db_support import PG_HOST, PG_PORT, PG_USER, throwaway_pg_database
from typer.testing import CliRunner

from dsh_memory_worker.worker.cli import _register, app
from dsh_memory_worker.worker.state.database import StateDB
from dsh_memory_worker.worker.state.db import normalize_url
from dsh_memory_worker.worker.state.migrate import current_revision, head_revision, upgrade

pytestmark = pytest.mark.integration

TABLES = ("audit", "provenance")
OLD_NAME = "wu-lesson-reply-a-quoted-secret-0a1b2c3d"


def _files(url: str) -> dict[str, tuple[int, int]]:
    """Each table's oid and the file it lives in (a new table's file is named by its oid)."""
    engine = create_engine(normalize_url(url))
    try:
        with engine.connect() as conn:
            return {
                table: tuple(  # type: ignore[misc]
                    conn.execute(
                        text(
                            "SELECT oid::bigint, pg_relation_filenode(oid) FROM pg_class "
                            "WHERE oid = CAST(:t AS regclass)"
                        ),
                        {"t": table},
                    ).one()
                )
                for table in TABLES
            }
    finally:
        engine.dispose()


def _insert_old_rows(url: str, name: str) -> None:
    engine = create_engine(normalize_url(url))
    try:
        with engine.begin() as conn:
            conn.execute(
                text(
                    "INSERT INTO audit (action, outcome, shelf, session_id, subject, at) VALUES "
                    "('repair-work-unit', 'retracted', 'default', 's-1', :n, "
                    "'2026-12-01 00:00:00')"
                ),
                {"n": name},
            )
            conn.execute(
                text(
                    "INSERT INTO provenance (shelf, name, kind, session_id, route, model, "
                    "prompt_version, written_at) VALUES ('default', :n, 'work-unit', 's-1', "
                    "'r', 'm', 'p', '2026-12-01 00:00:00')"
                ),
                {"n": name},
            )
    finally:
        engine.dispose()


def test_a_fresh_database_is_not_vacuumed() -> None:
    with throwaway_pg_database() as url:
        StateDB.open(url).dispose()
        assert current_revision(url) == head_revision()
        files = _files(url)
        # Created by the upgrade and never rewritten: each table still in the file of its oid.
        assert {table: oid for table, (oid, _) in files.items()} == {
            table: node for table, (_, node) in files.items()
        }


def test_an_old_database_with_nothing_to_rename_is_not_vacuumed() -> None:
    with throwaway_pg_database() as url:
        upgrade(url, "shipping_1")  # the schema an older worker left
        _insert_old_rows(url, "sum-s-1-0-6")  # no work unit: nothing for 0004 to rewrite
        before = _files(url)
        StateDB.open(url).dispose()
        assert current_revision(url) == head_revision()
        assert _files(url) == before


def test_an_old_database_with_units_to_rename_is_vacuumed() -> None:
    with throwaway_pg_database() as url:
        upgrade(url, "shipping_1")
        _insert_old_rows(url, OLD_NAME)
        before = _files(url)
        StateDB.open(url).dispose()
        after = _files(url)
        assert current_revision(url) == head_revision()
        assert {t: oid for t, (oid, _) in after.items()} == {
            t: oid for t, (oid, _) in before.items()
        }
        changed = [t for t in TABLES if after[t][1] != before[t][1]]
        assert changed == list(TABLES)  # both rewritten into new files
        engine = create_engine(normalize_url(url))
        with engine.connect() as conn:
            subjects = conn.execute(text("SELECT subject FROM audit")).scalars().all()
        engine.dispose()
        assert len(subjects) == 1 and subjects[0].startswith("wu-*-0a1b2c3d-"), subjects


def test_a_rename_purge_another_connection_blocked_is_done_at_dispose() -> None:
    """The migration's purge is owed when a lock keeps it from running, and what is owed is the
    renamed tables' purge (not only the purged sessions' tables)."""
    with throwaway_pg_database() as url:
        upgrade(url, "shipping_1")
        _insert_old_rows(url, OLD_NAME)
        before = _files(url)
        dbname = url.rsplit("/", 1)[1]
        with psycopg.connect(
            f"host={PG_HOST} port={PG_PORT} user={PG_USER} dbname={dbname}"
        ) as reader:
            reader.execute("LOCK TABLE audit IN ACCESS SHARE MODE")  # a long read, say
            db = StateDB.open(url)  # the rename commits; the VACUUM FULL waits 5 s, gives up
            assert _files(url)["audit"] == before["audit"]
            reader.rollback()
        db.dispose()  # the owed purge: both renamed tables rewritten now
        after = _files(url)
        assert [t for t in TABLES if after[t][1] != before[t][1]] == list(TABLES)


def test_the_migrate_command_purges_what_it_renamed_and_nothing_else() -> None:
    """``memory-worker migrate`` (the compose ``migrate`` service) runs the renaming revision
    ahead of the workers, which then find the database at head: the command purges itself."""
    _register()
    runner = CliRunner()
    with throwaway_pg_database() as url:
        env = {"MEMORY_WORKER_STATE_URL": url, "MEMORY_WORKER_CONFIG": ""}
        upgrade(url, "shipping_1")
        _insert_old_rows(url, OLD_NAME)
        before = _files(url)
        result = runner.invoke(app, ["migrate", "upgrade", "stable_unit_ids_1"], env=env)
        assert result.exit_code == 0, result.output
        renamed = _files(url)
        assert [t for t in TABLES if renamed[t][1] != before[t][1]] == list(TABLES)
        result = runner.invoke(app, ["migrate"], env=env)  # 0005: renames nothing
        assert result.exit_code == 0, result.output
        assert result.output.strip() == f"{url}: now at {head_revision()}"
        assert _files(url) == renamed
