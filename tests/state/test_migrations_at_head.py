"""A state database already at the newest revision opens without Alembic; any other state
still goes through Alembic (a new file, an older revision, an unreadable revision file)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from dsh_memory_worker.worker.state.migrate import (
    current_revision,
    downgrade,
    head_revision,
    revisions,
    upgrade_to_head,
)
from dsh_memory_worker.worker.state.revision_files import PACKAGED_MIGRATIONS, script_head

OPEN_AND_REPORT = """
import sys
from dsh_memory_worker.worker.state.database import StateDB
StateDB.open(sys.argv[1])
print("alembic" in sys.modules, "mako" in sys.modules)
"""


def _opened_with_alembic(url: str) -> bool:
    done = subprocess.run(
        [sys.executable, "-c", OPEN_AND_REPORT, url],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    alembic, mako = done.stdout.split()
    return alembic == "True" or mako == "True"


def test_the_head_read_from_the_files_is_alembics() -> None:
    assert script_head(PACKAGED_MIGRATIONS) == head_revision()


@pytest.mark.integration
def test_a_database_at_head_opens_without_alembic(empty_url: str) -> None:
    # A new database: Alembic creates the schema on PostgreSQL; a new SQLite file is made from
    # the migrated schema (worker.state.template, tests/state/test_state_template.py).
    assert _opened_with_alembic(empty_url) == (not empty_url.startswith("sqlite"))
    assert current_revision(empty_url) == head_revision()
    assert not _opened_with_alembic(empty_url)  # at head: one query, no Alembic


@pytest.mark.integration
def test_an_older_database_is_still_upgraded(empty_url: str) -> None:
    upgrade_to_head(empty_url)
    downgrade(empty_url, revisions()[-2])
    assert _opened_with_alembic(empty_url)
    assert current_revision(empty_url) == head_revision()


def test_revision_files_it_cannot_read_leave_the_work_to_alembic(tmp_path: Path) -> None:
    versions = tmp_path / "versions"
    versions.mkdir()
    (versions / "a.py").write_text('revision = "a"\ndown_revision = None\n')
    (versions / "b.py").write_text('revision = "b"\ndown_revision = "a"\n')
    assert script_head(tmp_path) == "b"
    (versions / "c.py").write_text('revision = "c"\ndown_revision = ("a", "b")\n')
    assert script_head(tmp_path) is None  # a merge: Alembic decides
    (versions / "c.py").write_text('revision = "c"\ndown_revision = "a"\n')
    assert script_head(tmp_path) is None  # two heads
