"""A ``hypatia`` child of the ``cli`` store dies with the worker: ``run --once`` stopped with
SIGTERM, SIGINT or SIGKILL while a store call hangs leaves no store process behind (the call
runs in its own session, so only the kernel's parent-death signal or the worker itself can stop
it). The hanging call is a wrapper script that records its pid and ``exec``s ``sleep``."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import REPO

from dsh_memory_worker.worker.state.owners import process_is_gone

sys.path.insert(0, str(REPO / "benchmarks"))
from worker_dshgen import conversation

pytestmark = pytest.mark.integration

BIN = Path(sys.executable).parent / "memory-worker"
LITE = Path(sys.executable).parent / "hypatia-lite"
WRAPPER = """#!/bin/sh
case "$1" in
  knowledge-create) echo $$ >> "$HANG_PIDS"; exec sleep 300 ;;
esac
exec "$HANG_LITE" "$@"
"""


def _wait(condition: object, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT, signal.SIGKILL])
def test_a_hanging_store_call_dies_with_run_once(tmp_path: Path, signum: int) -> None:
    conversation(tmp_path / "dsh", "hang-1", "/home/dev/hang", 2)
    wrapper = tmp_path / "hang-hypatia"
    wrapper.write_text(WRAPPER)
    wrapper.chmod(0o755)
    pids = tmp_path / "pids"
    env = {
        **os.environ,
        "MEMORY_WORKER_DATA_DIR": str(tmp_path / "data"),
        "HYPATIA_LITE_HOME": str(tmp_path / "lite"),
        "MEMORY_WORKER_STORE_TRANSPORT": "cli",
        "MEMORY_WORKER_STORE_BINARY": str(wrapper),
        "MEMORY_WORKER_STORE_TIMEOUT_S": "600",
        "HANG_PIDS": str(pids),
        "HANG_LITE": str(LITE),
    }
    for name in (
        "MEMORY_WORKER_LITE_HOME",
        "MEMORY_WORKER_STATE_URL",
        "MEMORY_WORKER_CONFIG",
        "MEMORY_WORKER_MODEL_ROUTES",
    ):
        env.pop(name, None)
    worker = subprocess.Popen(
        [str(BIN), "run", "--once", "--dsh-home", str(tmp_path / "dsh")],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait(lambda: pids.exists() and pids.read_text().strip(), 120, "the hanging store call")
        child = int(pids.read_text().split()[0])
        _wait(lambda: _comm(child) == "sleep", 30, "the store call to exec sleep")
        assert os.getsid(child) != os.getsid(worker.pid)  # its own session
        os.kill(worker.pid, signum)
        worker.wait(timeout=60)
        _wait(lambda: process_is_gone(child), 30, f"store child {child} to die")
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait(timeout=30)
        if pids.exists():
            for pid in pids.read_text().split():
                if not process_is_gone(int(pid)):
                    os.kill(int(pid), signal.SIGKILL)


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""
