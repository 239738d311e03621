"""An unreachable state database is one line and exit 2, without SQLAlchemy's
"(Background on this error at: https://sqlalche.me/…)" link."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from cli_fork import run_cli

from dsh_memory_worker.worker.commands.common import db_error_line


def test_background_link_is_dropped() -> None:
    text = (
        "(psycopg.OperationalError) connection failed: refused\n"
        "(Background on this error at: https://sqlalche.me/e/21/e3q8)"
    )
    assert db_error_line(Exception(text)) == "(psycopg.OperationalError) connection failed: refused"


@pytest.mark.integration
def test_unreachable_postgres_is_one_clean_line(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "MEMORY_WORKER_DATA_DIR": str(tmp_path / "data"),
        "MEMORY_WORKER_STATE_URL": "postgresql://root@127.0.0.1:1/nothing",
    }
    env.pop("MEMORY_WORKER_CONFIG", None)
    done = run_cli(["status"], env=env, timeout=60)
    assert done.returncode == 2
    lines = done.stderr.splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(
        "memory-worker: cannot open the state database: "
        "(psycopg.OperationalError) connection failed: "
    )
    assert "Connection refused" in lines[0]
    assert "Background on this error" not in lines[0] and lines[0].endswith("?")
