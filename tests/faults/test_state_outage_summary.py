"""A PostgreSQL state database that goes away mid-run ends ``run --once`` with one line about it,
the per-session summary naming every session not finished, and exit 1 (issue 22, item 9) — not
exit 2 and one line. The outage is real and limited to a throwaway database of the shared server:
new connections refused (``ALLOW_CONNECTIONS false``) and every open one terminated. Once the
database is back, the next run ends with exit 0 and the clean run's store."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import psycopg
import pytest
from fault_support import (
    clean_run,
    dump,
    env,
    lay_home,
    not_finished,
    pg_lagging,
    run_once,
    run_once_argv,
)
from state_db_support import PG_ADMIN_DSN, throwaway_pg_database

pytestmark = pytest.mark.integration


def _allow(name: str, allowed: bool) -> None:
    with psycopg.connect(PG_ADMIN_DSN, autocommit=True) as admin:
        admin.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS {str(allowed).lower()}')
        if not allowed:
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = %s AND pid <> pg_backend_pid()",
                (name,),
            )


def _logged(url: str) -> bool:
    """A first span is logged (the watermark moved)."""
    try:
        with psycopg.connect(url) as conn:
            row = conn.execute("SELECT count(*) FROM progress WHERE last_logged_seq > 0").fetchone()
    except psycopg.Error:  # the tables are not made yet
        return False
    return row is not None and row[0] > 0


def test_a_state_outage_mid_run_ends_with_the_summary_and_exit_1(tmp_path: Path) -> None:
    clean = clean_run(tmp_path / "clean")
    root = tmp_path / "outage"
    lay_home(root, like=tmp_path / "clean")
    with throwaway_pg_database() as url:
        name = url.rsplit("/", 1)[1]
        extra = {"MEMORY_WORKER_STATE_URL": url, "MEMORY_WORKER_RETRY_BACKOFF_S": "0.1"}
        proc = subprocess.Popen(
            run_once_argv(root),
            env=env(root, **extra),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            deadline = time.monotonic() + 120
            while not _logged(url):  # the run is past its start and writing
                assert proc.poll() is None and time.monotonic() < deadline
                time.sleep(0.02)
            assert proc.poll() is None, "the run ended before the outage"
            _allow(name, False)
            _out, stderr = proc.communicate(timeout=600)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=30)
            _allow(name, True)
        assert proc.returncode == 1, stderr
        lines = stderr.strip().splitlines()
        failed = [line for line in lines if "the state database failed" in line]
        assert len(failed) == 1, stderr
        summary = lines[-1]
        assert summary.startswith("4 sessions, "), stderr
        named = not_finished(summary)
        # Every session whose log is not fully logged is named (and the ones never reached).
        assert named and pg_lagging(url) <= named, stderr
        again = run_once(root, **extra)
        assert again.returncode == 0, again.stderr
        assert pg_lagging(url) == set()
        assert dump(root) == clean
