"""`memory-worker reconsolidate SESSION --wait` whose consolidation fails retryably (model
endpoint down) ends with one line naming the session as not finished, exit 1, and the request
stays recorded (asking again reports `busy`) — not a silent `0/1` bar."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from cli_fork import run_cli

IMAGE = "44444444-4444-4444-8444-444444444444"


@pytest.mark.integration
def test_unfinished_wait_is_named(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "MEMORY_WORKER_DATA_DIR": str(tmp_path / "data"),
        "HYPATIA_LITE_HOME": str(tmp_path / "lite"),
        "COLUMNS": "200",
    }
    for name in (
        "MEMORY_WORKER_LITE_HOME",
        "MEMORY_WORKER_STATE_URL",
        "MEMORY_WORKER_CONFIG",
        "MEMORY_WORKER_MODEL_ROUTES",
    ):
        env.pop(name, None)

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return run_cli(args, env=env, timeout=120)

    assert cli("demo-home", str(tmp_path / "dsh")).returncode == 0
    assert cli("run", "--once", "--dsh-home", str(tmp_path / "dsh")).returncode == 0
    env.update(
        {
            "DK": "k",
            "MEMORY_WORKER_MODEL_TIMEOUT_S": "1",
            "MEMORY_WORKER_RETRY_BACKOFF_S": "0.1",
            "MEMORY_WORKER_BROKER_URL": "redis://127.0.0.1:1/0",
            "MEMORY_WORKER_MODEL_ROUTES": json.dumps(
                [{"base_url": "http://127.0.0.1:1/v1", "model": "m", "api_key_env": "DK"}]
            ),
        }
    )
    waited = cli("reconsolidate", IMAGE, "--wait")
    assert waited.returncode == 1
    lines = waited.stderr.splitlines()
    assert lines[0] == f"{IMAGE}: queued [0, 16)"
    assert lines[-1] == (
        f"{IMAGE}: not finished — the consolidation failed (see the warning "
        "above); the request stays recorded"
    )
    again = cli("reconsolidate", IMAGE)
    assert again.stderr.splitlines()[0] == (
        f"{IMAGE}: busy — a queued request already covers [0, 16)"
    )
