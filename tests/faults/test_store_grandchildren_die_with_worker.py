"""A ``cli`` store call's whole process group dies with ``run --once`` (issue 22, item 5).

The hanging call is a shell that starts a child of its own (``sleep 300 &``) and waits: the
kernel's parent-death signal reaches only the shell, so the grandchild needs the worker's reaper
(``memory.store.reaper``). After SIGTERM, SIGINT or SIGKILL of the worker no process of the call
survives, checked by pid; SIGTERM and SIGINT end the run with the same summary line."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest
from fault_support import BIN, LITE, env, wait_for
from store_contract.fake_binary import alive
from worker_dshgen import conversation

pytestmark = pytest.mark.integration

WRAPPER = """#!/bin/sh
case "$1" in
  knowledge-create)
    echo $$ >> "$HANG_PIDS"
    sleep 300 &
    echo $! >> "$HANG_PIDS"
    wait
    exit 0 ;;
esac
exec "$HANG_LITE" "$@"
"""


def _pids(path: Path) -> list[int]:
    return [int(p) for p in path.read_text().split()] if path.exists() else []


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT, signal.SIGKILL])
def test_no_process_of_a_hanging_store_call_outlives_run_once(tmp_path: Path, signum: int) -> None:
    conversation(tmp_path / "dsh", "grand-1", "/home/dev/grand", 2)
    wrapper = tmp_path / "hang-hypatia"
    wrapper.write_text(WRAPPER)
    wrapper.chmod(0o755)
    pids = tmp_path / "pids"
    worker = subprocess.Popen(
        [str(BIN), "run", "--once", "--dsh-home", str(tmp_path / "dsh")],
        env=env(
            tmp_path,
            MEMORY_WORKER_STORE_TRANSPORT="cli",
            MEMORY_WORKER_STORE_BINARY=str(wrapper),
            MEMORY_WORKER_STORE_TIMEOUT_S="600",
            HANG_PIDS=str(pids),
            HANG_LITE=str(LITE),
        ),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for(lambda: len(_pids(pids)) >= 2, 120, "the hanging store call and its child")
        shell, grandchild = _pids(pids)[:2]
        assert alive(shell) and alive(grandchild)
        os.kill(worker.pid, signum)
        _, stderr = worker.communicate(timeout=60)
        wait_for(
            lambda: not alive(shell) and not alive(grandchild),
            30,
            f"store call {shell} and its child {grandchild} to die",
        )
        if signum != signal.SIGKILL:
            summary = stderr.strip().splitlines()[-1]
            name = signal.Signals(signum).name
            assert summary.startswith(f"stopped by {name}: "), stderr
            assert summary.endswith(
                "not finished: grand-1 (why: the lines above, or `memory-worker status`)"
            ), stderr
            assert worker.returncode == 1
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait(timeout=30)
        for pid in _pids(pids):
            if alive(pid):
                os.kill(pid, signal.SIGKILL)
