"""An unreachable state database is one line and exit 2, without SQLAlchemy's
"(Background on this error at: https://sqlalche.me/…)" link."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from worker.commands.common import db_error_line

BIN = Path(sys.executable).parent / "memory-worker"


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
    done = subprocess.run([str(BIN), "status"], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    lines = done.stderr.splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(
        "memory-worker: cannot open the state database: "
        "(psycopg.OperationalError) connection failed: "
    )
    assert "Connection refused" in lines[0]
    assert "Background on this error" not in lines[0] and lines[0].endswith("?")
