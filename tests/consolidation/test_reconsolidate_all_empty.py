"""`memory-worker reconsolidate --all` before any session was seen says so (exit 0) instead
of printing nothing."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from cli_fork import run_cli


@pytest.mark.integration
def test_all_with_no_sessions_says_so(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "MEMORY_WORKER_DATA_DIR": str(tmp_path / "data"),
        "HYPATIA_LITE_HOME": str(tmp_path / "lite"),
    }
    for name in ("MEMORY_WORKER_LITE_HOME", "MEMORY_WORKER_STATE_URL", "MEMORY_WORKER_CONFIG"):
        env.pop(name, None)
    done = run_cli(["reconsolidate", "--all"], env=env, timeout=60)
    assert done.returncode == 0
    assert done.stderr.splitlines() == [
        "no sessions seen yet (run `memory-worker run` or `daemon`)"
    ]
