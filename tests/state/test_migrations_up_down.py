"""Every Alembic revision goes up and down on SQLite and PostgreSQL, and head matches the models."""

from __future__ import annotations

import re
import threading
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import inspect
from typer.testing import CliRunner

from dsh_memory_worker.worker.cli import _register, app
from dsh_memory_worker.worker.state.db import make_engine
from dsh_memory_worker.worker.state.migrate import (
    current_revision,
    downgrade,
    head_revision,
    revisions,
    upgrade,
    upgrade_to_head,
)
from dsh_memory_worker.worker.state.models import Base
from dsh_memory_worker.worker.state.revision_files import MigrationsNotFound, find_migrations_dir

REPO = Path(__file__).resolve().parents[2]
TABLES = {
    "sessions",
    "progress",
    "leases",
    "retractions",
    "audit",
    "failures",
    "model_calls",
    "provenance",
    "shipped_logs",
    "log_segments",
}


def _tables(url: str) -> set[str]:
    engine = make_engine(url)
    try:
        return set(inspect(engine).get_table_names()) - {"alembic_version"}
    finally:
        engine.dispose()


def test_the_chain_is_linear_and_starts_with_the_initial_schema() -> None:
    chain = revisions()
    assert chain[0] == "0001"
    assert chain[-1] == head_revision()
    assert len(chain) == len(set(chain))
    # Every revision file of the top-level migrations/ is in the chain the next test walks.
    files = (REPO / "migrations" / "versions").glob("*.py")
    declared = [
        re.search(r'^revision(?:: str)? = "([^"]+)"', path.read_text(encoding="utf-8"), re.M)
        for path in files
    ]
    assert sorted(m.group(1) for m in declared if m) == sorted(chain)
    assert len(declared) == len(chain)


def test_every_revision_up_then_down(empty_url: str) -> None:
    chain = revisions()
    assert current_revision(empty_url) is None
    for rev in chain:
        upgrade(empty_url, rev)
        assert current_revision(empty_url) == rev
    assert _tables(empty_url) == TABLES
    for index in range(len(chain) - 1, -1, -1):
        target = chain[index - 1] if index > 0 else "base"
        downgrade(empty_url, target)
        assert current_revision(empty_url) == (None if target == "base" else target)
    assert _tables(empty_url) == set()
    # And back up again: a downgrade leaves nothing behind that blocks the next upgrade.
    upgrade_to_head(empty_url)
    assert current_revision(empty_url) == head_revision()


def test_head_schema_matches_the_models(empty_url: str) -> None:
    upgrade_to_head(empty_url)
    engine = make_engine(empty_url)
    try:
        with engine.connect() as conn:
            context = MigrationContext.configure(conn, opts={"compare_type": True})
            diffs = compare_metadata(context, Base.metadata)
    finally:
        engine.dispose()
    assert diffs == []


def test_upgrade_to_head_twice_is_a_no_op(empty_url: str) -> None:
    upgrade_to_head(empty_url)
    upgrade_to_head(empty_url)
    assert current_revision(empty_url) == head_revision()
    assert _tables(empty_url) == TABLES


def test_workers_starting_together_migrate_once(empty_url: str) -> None:
    errors: list[BaseException] = []
    barrier = threading.Barrier(3)

    def start() -> None:
        barrier.wait()
        try:
            upgrade_to_head(empty_url)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=start) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert errors == []
    assert current_revision(empty_url) == head_revision()


def test_migrations_are_found_from_the_checkout_and_explicitly(tmp_path: Path) -> None:
    packaged = REPO / "migrations"
    assert find_migrations_dir() == packaged
    assert find_migrations_dir(packaged) == packaged
    with pytest.raises(MigrationsNotFound, match=f"{tmp_path} has no env.py"):
        find_migrations_dir(tmp_path)


def test_migrate_command_upgrades_reports_and_downgrades(tmp_path: Path) -> None:
    from state_db_support import sqlite_url

    _register()
    url = sqlite_url(tmp_path)
    env = {"MEMORY_WORKER_STATE_URL": url, "MEMORY_WORKER_CONFIG": ""}
    runner = CliRunner()
    result = runner.invoke(app, ["migrate", "current"], env=env)
    assert result.exit_code == 0, result.output
    assert result.output.strip() == f"{url}: at base (empty); newest is {head_revision()}"
    result = runner.invoke(app, ["migrate"], env=env)
    assert result.exit_code == 0, result.output
    assert result.output.strip() == f"{url}: now at {head_revision()}"
    result = runner.invoke(app, ["migrate", "downgrade"], env=env)
    assert result.exit_code == 2
    result = runner.invoke(app, ["migrate", "downgrade", "base"], env=env)
    assert result.exit_code == 0, result.output
    assert result.output.strip() == f"{url}: now at base (empty)"
    assert _tables(url) == set()


def test_migrate_command_masks_a_password_and_rejects_unknown_backends() -> None:
    _register()
    runner = CliRunner()
    result = runner.invoke(
        app,
        ["migrate", "current"],
        env={"MEMORY_WORKER_STATE_URL": "mysql://u:hunter2@db/x", "MEMORY_WORKER_CONFIG": ""},
    )
    assert result.exit_code == 2
    assert "backend 'mysql' is not supported" in result.output
    assert "hunter2" not in result.output


@pytest.mark.integration
def test_migrate_command_reports_an_unreachable_database_in_one_line() -> None:
    _register()
    url = "postgresql://postgres:pw@127.0.0.1:1/nothing"
    result = CliRunner().invoke(
        app, ["migrate"], env={"MEMORY_WORKER_STATE_URL": url, "MEMORY_WORKER_CONFIG": ""}
    )
    assert result.exit_code == 2
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1
    assert lines[0].startswith(
        "memory-worker: migrating postgresql://postgres:***@127.0.0.1:1/nothing failed: "
    )
    assert "pw@" not in result.output
