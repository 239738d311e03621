"""`memory-worker forget` of an id the watcher never saw (a typo, or a session not scanned yet)
says so in one line instead of a silent "forgot 1 session(s)"; it still marks the id forgotten
(exit 0), as documented."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from cli_fork import run_cli


@pytest.mark.integration
def test_unseen_session_is_named_in_one_line(tmp_path: Path) -> None:
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

    def forget(*args: str) -> subprocess.CompletedProcess[str]:
        return run_cli(["forget", "s-typo", *args], env=env, timeout=60)

    dry = forget("--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert (
        "memory-worker forget: s-typo: not seen by the watcher and nothing of it in memory"
        in dry.stderr.splitlines()
    )
    real = forget()
    assert real.returncode == 0, real.stderr
    assert (
        "memory-worker forget: s-typo: not seen by the watcher and nothing of it in memory; "
        "marked forgotten, so it is never ingested"
    ) in real.stderr.splitlines()
    status = run_cli(["status", "--json"], env=env, timeout=60)
    assert '"forgotten": true' in status.stdout
    again = forget()  # now known (marked forgotten): no note
    assert again.returncode == 0, again.stderr
    assert "not seen by the watcher" not in again.stderr
