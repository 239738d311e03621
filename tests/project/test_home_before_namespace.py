"""A state database and a shelf written before the packages moved under ``dsh_memory_worker``
(tests/fixtures/home-before-namespace: 8 demo sessions, 36 entries, 40 edges, summaries from the
echo model) open unchanged with today's code: ``status`` reads every session's watermarks as the
old code reported them, ``run --once`` over the same logs writes nothing, the shelf's rows are
byte-for-byte what they were, and the state database stays at its Alembic revision."""

from __future__ import annotations

import json
import sqlite3
import tarfile
from pathlib import Path

import pytest
from cli_fork import run_cli
from conftest import REPO

from dsh_memory_worker.worker.state.migrate import head_revision

pytestmark = pytest.mark.integration

FIXTURE = REPO / "tests" / "fixtures" / "home-before-namespace"
#: The per-session fields the old code's ``status --json`` printed that depend on the state
#: database alone (not on where the home now lies, the clock or the model routes).
KEPT = (
    "session_id",
    "project",
    "durable_end_seq",
    "inherited_cut",
    "last_logged_seq",
    "last_consolidated_seq",
    "last_belong_to_index",
    "has_session_node",
    "closed",
    "forgotten",
    "retractions_pending",
    "last_failure",
    "recorded",
)


def _shelf_rows(lite: Path) -> list[tuple[object, ...]]:
    """Every row of the default shelf's knowledge and statement tables, in id order."""
    with sqlite3.connect(lite / "default" / "hypatia.sqlite") as conn:
        rows = [("K", *r) for r in conn.execute("SELECT * FROM knowledge ORDER BY id")]
        rows += [("S", *r) for r in conn.execute("SELECT * FROM statement ORDER BY id")]
    return rows


def test_a_home_written_before_the_namespace_opens_unchanged(tmp_path: Path) -> None:
    with tarfile.open(FIXTURE / "home.tar.gz") as archive:
        archive.extractall(tmp_path, filter="data")
    before = _shelf_rows(tmp_path / "lite")
    assert sum(r[0] == "K" for r in before) == 36
    assert sum(r[0] == "S" for r in before) == 40
    env = {
        "HOME": str(tmp_path),
        "PATH": "/usr/bin:/bin",
        "MEMORY_WORKER_CONFIG": "",
        "MEMORY_WORKER_DATA_DIR": str(tmp_path / "data"),
        "MEMORY_WORKER_LITE_HOME": str(tmp_path / "lite"),
        "HYPATIA_LITE_HOME": str(tmp_path / "lite"),
        "MEMORY_WORKER_DSH_HOME": str(tmp_path / "dsh"),
    }

    status = run_cli(["status", "--json"], env=env, cwd=tmp_path, timeout=300)
    assert status.returncode == 0, status.stderr
    old = json.loads((FIXTURE / "status.json").read_text())
    new = json.loads(status.stdout)
    assert [{k: s[k] for k in KEPT} for s in new["sessions"]] == [
        {k: s[k] for k in KEPT} for s in old["sessions"]
    ]
    assert new["total"]["sessions"] == 8 and new["total"]["durable_end_seq"] == 551

    once = run_cli(["run", "--once"], env=env, cwd=tmp_path, timeout=300)
    assert once.returncode == 0, once.stderr
    assert "0 entries written, 0 retracted, 0 edges" in once.stderr, once.stderr
    assert _shelf_rows(tmp_path / "lite") == before
    with sqlite3.connect(tmp_path / "data" / "state.db") as conn:
        assert conn.execute("SELECT version_num FROM alembic_version").fetchall() == [
            (head_revision(),)
        ]
