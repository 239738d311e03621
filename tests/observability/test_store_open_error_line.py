"""A hypatia-lite home the worker cannot create (here: under /proc) is one line and
exit 2 from `run --once`, like any other store that cannot be opened, not a traceback."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from cli_fork import run_cli


@pytest.mark.integration
def test_uncreatable_lite_home_is_one_line(tmp_path: Path) -> None:
    home = Path("/proc/dsh-memory-worker-no-such-dir/lite")
    (tmp_path / "dsh" / "sessions").mkdir(parents=True)
    env = {
        **os.environ,
        "MEMORY_WORKER_DATA_DIR": str(tmp_path / "data"),
        "HYPATIA_LITE_HOME": str(home),
    }
    for name in ("MEMORY_WORKER_LITE_HOME", "MEMORY_WORKER_STATE_URL", "MEMORY_WORKER_CONFIG"):
        env.pop(name, None)
    done = run_cli(["run", "--once", "--dsh-home", str(tmp_path / "dsh")], env=env, timeout=60)
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "memory-worker: cannot open the store: [Errno 2] No such file or directory: "
        "'/proc/dsh-memory-worker-no-such-dir'"
    ]


@pytest.mark.integration
def test_reconsolidate_wait_checks_the_store_first(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "MEMORY_WORKER_DATA_DIR": str(tmp_path / "data"),
        "HYPATIA_LITE_HOME": "/proc/dsh-memory-worker-no-such-dir/lite",
    }
    for name in ("MEMORY_WORKER_LITE_HOME", "MEMORY_WORKER_STATE_URL", "MEMORY_WORKER_CONFIG"):
        env.pop(name, None)
    done = run_cli(["reconsolidate", "s-1", "--wait"], env=env, timeout=60)
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "memory-worker: cannot open the store: [Errno 2] No such file or directory: "
        "'/proc/dsh-memory-worker-no-such-dir'"
    ]
