"""`memory-worker run --once` ends with its summary on ONE stderr line even when stderr is not
a terminal (no 80-column wrapping), so logs and scripts can grep it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from cli_fork import run_cli


@pytest.mark.integration
def test_summary_is_one_unwrapped_line(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "MEMORY_WORKER_DATA_DIR": str(tmp_path / "data"),
        "HYPATIA_LITE_HOME": str(tmp_path / "lite"),
    }
    for name in (
        "COLUMNS",
        "MEMORY_WORKER_LITE_HOME",
        "MEMORY_WORKER_STATE_URL",
        "MEMORY_WORKER_CONFIG",
    ):
        env.pop(name, None)
    laid = run_cli(["demo-home", str(tmp_path / "dsh")], env=env, timeout=60)
    assert laid.returncode == 0, laid.stderr
    done = run_cli(["run", "--once", "--dsh-home", str(tmp_path / "dsh")], env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines()[-1] == (
        "8 sessions, 551 new events; 28 entries written, 0 retracted, 19 edges; "
        "24 jobs done, 0 failed"
    )
