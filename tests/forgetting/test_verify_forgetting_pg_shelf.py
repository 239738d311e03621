"""``verify-forgetting`` on a hypatia-lite shelf stored in PostgreSQL (the local server): the
tables are searched through queries (every row and the full-text index, so a planted leak is
named), and the one line about raw bytes says why there are none to scan and what a query cannot
see (dead row versions, the WAL) and what the purge does about it — never that the store is not
hypatia-lite."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from canary_support import embedded_runtime
from cli_fork import run_cli
from lite_pg_support import pg_home
from pipeline_support import process

from dsh_memory_worker.worker.commands.demo_home import lay_out_fixtures
from hypatia_lite.store import LiteStore

pytestmark = pytest.mark.integration

FIXTURES = Path(__file__).parents[1] / "fixtures" / "dsh"
V4 = "7d3c1f0e-2b6a-4c59-9e1d-5a8f3b2c4d10"
WITHDRAWN_TEXT = "The session is read-only, so I cannot edit files now."


def _verify(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORY_WORKER_")}
    env.update(
        {
            "MEMORY_WORKER_DSH_HOME": str(root / "dsh"),
            "MEMORY_WORKER_DATA_DIR": str(root / "data"),
            "MEMORY_WORKER_LITE_HOME": str(root / "lite"),
            "COLUMNS": "400",
        }
    )
    return run_cli(["verify-forgetting", "--shelf", "pg", *args], env=env, timeout=300)


def test_a_postgresql_shelf_is_searched_by_its_tables_and_says_so(tmp_path: Path) -> None:
    with pg_home(tmp_path / "lite") as url:
        lay_out_fixtures(FIXTURES, tmp_path / "dsh")
        runtime = embedded_runtime(tmp_path, force_idle=True, store_shelf="pg")
        try:
            process(runtime, consolidation=False)
        finally:
            runtime.close()
        clean = _verify(tmp_path)
        report = json.loads(_verify(tmp_path, "--json").stdout)
        with LiteStore("pg", home=tmp_path / "lite") as store:
            store.knowledge_create("planted-note", f"Note: {WITHDRAWN_TEXT}")
        leaked = _verify(tmp_path)

    assert clean.returncode == 0, clean.stderr
    assert clean.stdout.startswith("0 leaks in 2 withdrawn messages and 0 forgotten sessions")
    note = (
        f"memory-worker verify-forgetting: shelf 'pg' is a PostgreSQL shelf ({url}): it has "
        "no files here, so its tables (knowledge, statement, docs) were searched through "
        "queries — every row and the full-text index. Dead row versions (MVCC) are not "
        "visible to a query, and PostgreSQL's WAL (pg_wal), archives and backups may hold "
        "deleted text until they are recycled; hypatia-lite rewrites the three tables with "
        "VACUUM FULL after every delete or update (owed and retried when blocked), the WAL "
        "is the database's retention"
    )
    assert clean.stderr.strip().splitlines() == [note]
    assert "not hypatia-lite" not in clean.stderr + leaked.stderr
    assert report["bytes_skipped"] == note.removeprefix("memory-worker verify-forgetting: ")
    assert report["entries_searched"] == 28 and report["statements_searched"] == 19
    assert "full-text search" in report["places"]
    assert not any(place.startswith("file ") and "lite" in place for place in report["places"])

    assert leaked.returncode == 1, leaked.stderr
    lines = leaked.stdout.splitlines()
    assert lines[0] == (
        f"leak: entry planted-note (query): session {V4}, msg-{V4}-5 (seq 49, "
        'withdrawn): "the session is read only" — not explained: no legitimate '
        "source: not an entry the worker derives from a kept message"
    )
    assert all(line.startswith("leak: entry planted-note (") for line in lines)
    assert leaked.stderr.strip().splitlines()[-1] == note
