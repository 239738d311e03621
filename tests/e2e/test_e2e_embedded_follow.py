"""End to end, embedded and following: `memory-worker run` (no --once) writes a finished turn
within seconds of its `turn/end`, leaves an open turn alone until it ends, survives a DSH home
that appears only after it started, and stops cleanly on SIGTERM."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cluster_support import BIN, wait_for
from cluster_support import lite_names as names
from conftest import REPO

sys.path.insert(0, str(REPO / "benchmarks"))
from worker_dshgen import SessionLogWriter

pytestmark = pytest.mark.integration


def test_run_follows_the_dsh_home_until_stopped(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "MEMORY_WORKER_DATA_DIR": str(tmp_path / "data"),
        "MEMORY_WORKER_LITE_HOME": str(tmp_path / "lite"),
        "MEMORY_WORKER_POLL_INTERVAL_S": "0.2",
    }
    env.pop("MEMORY_WORKER_STATE_URL", None)
    errors = tmp_path / "stderr.txt"
    with errors.open("w") as sink:
        proc = subprocess.Popen(
            [str(BIN / "memory-worker"), "run", "--dsh-home", str(tmp_path / "dsh")],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=sink,
        )
    try:
        # The home does not exist yet: one warning, then it keeps polling.
        wait_for(
            lambda: "has no sessions directory" in errors.read_text(), 20, "the warning", every=0.05
        )
        log = SessionLogWriter(tmp_path / "dsh", "s-follow", "/home/dev/proj")
        log.turn("first question", "first answer")
        log.flush()
        started = time.monotonic()
        wait_for(
            lambda: {"msg-s-follow-0", "msg-s-follow-1"} <= names(tmp_path / "lite"),
            10,
            "the first turn",
            every=0.05,
        )
        assert time.monotonic() - started < 5
        log.open_turn("a turn still running")
        log.flush()
        time.sleep(1.0)
        assert "msg-s-follow-2" not in names(tmp_path / "lite")
        log.close_turn("done now")
        log.flush()
        wait_for(
            lambda: {"msg-s-follow-2", "msg-s-follow-3"} <= names(tmp_path / "lite"),
            10,
            "the finished turn",
            every=0.05,
        )
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=20)
    err = errors.read_text()
    assert proc.returncode == 0, err
    missing = [ln for ln in err.splitlines() if "has no sessions directory" in ln]
    assert len(missing) == 1
    assert "stopped; 4 entries written" in err
