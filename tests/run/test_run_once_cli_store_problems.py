"""`memory-worker run --once` with the `cli` transport: a store binary that is not installed is
one line and exit 2 at start (not every job failing and retrying), and when jobs do fail and are
retried the progress bar counts jobs, not attempts (`N/N`, never `45/15`)."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest
from cli_fork import run_cli


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {
        **os.environ,
        "MEMORY_WORKER_DATA_DIR": str(tmp_path / "data"),
        "HYPATIA_LITE_HOME": str(tmp_path / "lite"),
        "MEMORY_WORKER_STORE_TRANSPORT": "cli",
        **extra,
    }
    for name in (
        "MEMORY_WORKER_LITE_HOME",
        "MEMORY_WORKER_STATE_URL",
        "MEMORY_WORKER_CONFIG",
        "COLUMNS",
    ):
        env.pop(name, None)
    return env


def _run(tmp_path: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    home = tmp_path / "dsh"
    if not home.exists():
        laid = run_cli(["demo-home", str(home)], env=env, timeout=60)
        assert laid.returncode == 0, laid.stderr
    return run_cli(["run", "--once", "--dsh-home", str(home)], env=env, timeout=120)


@pytest.mark.integration
def test_missing_binary_is_one_line_at_start(tmp_path: Path) -> None:
    done = _run(tmp_path, _env(tmp_path, MEMORY_WORKER_STORE_BINARY="no-such-hypatia-binary"))
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "memory-worker: cannot open the store: the cli transport's binary "
        "'no-such-hypatia-binary' was not found (set store_binary / MEMORY_WORKER_STORE_BINARY)"
    ]


@pytest.mark.integration
def test_progress_counts_jobs_not_attempts(tmp_path: Path) -> None:
    done = _run(
        tmp_path,
        _env(tmp_path, MEMORY_WORKER_STORE_BINARY="false", MEMORY_WORKER_RETRY_BACKOFF_S="0.1"),
    )
    assert done.returncode == 1
    assert "failed (will retry)" in done.stderr  # jobs really were retried
    bars = [m.groups() for m in re.finditer(r"writing memory \S+ (\d+)/(\d+)", done.stderr)]
    summary = re.search(r"(\d+) jobs done, (\d+) failed", done.stderr)
    assert bars and summary is not None
    jobs = int(summary.group(1)) + int(summary.group(2))
    assert bars[-1] == (str(jobs), str(jobs))


@pytest.mark.integration
def test_celery_worker_refuses_a_missing_binary_before_starting(tmp_path: Path) -> None:
    env = _env(
        tmp_path,
        MEMORY_WORKER_STORE_TRANSPORT="mcp",
        MEMORY_WORKER_STORE_BINARY="no-such-hypatia-binary",
        MEMORY_WORKER_BROKER_URL="redis://127.0.0.1:1/0",
    )
    done = run_cli(["worker", "--pool", "solo"], env=env, timeout=60)
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "memory-worker: cannot open the store: the mcp transport's binary "
        "'no-such-hypatia-binary' was not found (set store_binary / MEMORY_WORKER_STORE_BINARY)"
    ]
