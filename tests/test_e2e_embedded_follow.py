"""End to end, embedded and following: `memory-worker run` (no --once) writes a finished turn
within seconds of its `turn/end`, leaves an open turn alone until it ends, survives a DSH home
that appears only after it started, and stops cleanly on SIGTERM."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO

from memory.store.lite import db, shelves

sys.path.insert(0, str(REPO / "benchmarks"))
from worker_dshgen import SessionLogWriter

pytestmark = pytest.mark.integration
BIN = Path(sys.executable).parent


def names(lite: Path) -> set[str]:
    try:
        path = shelves.resolve(shelves.lite_home(lite), "default") / db.DB_FILE
    except shelves.ShelfError:
        return set()
    if not path.exists():
        return set()
    with sqlite3.connect(path) as conn:
        return {row[0] for row in conn.execute("SELECT name FROM knowledge")}


def wait_for(check: Callable[[], Any], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.05)


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
            env=env, stdout=subprocess.DEVNULL, stderr=sink,
        )
    try:
        # The home does not exist yet: one warning, then it keeps polling.
        wait_for(lambda: "has no sessions directory" in errors.read_text(), 20, "the warning")
        log = SessionLogWriter(tmp_path / "dsh", "s-follow", "/home/dev/proj")
        log.turn("first question", "first answer")
        log.flush()
        started = time.monotonic()
        wait_for(lambda: {"msg-s-follow-0", "msg-s-follow-1"} <= names(tmp_path / "lite"), 10,
                 "the first turn")
        assert time.monotonic() - started < 5
        log.open_turn("a turn still running")
        log.flush()
        time.sleep(1.0)
        assert "msg-s-follow-2" not in names(tmp_path / "lite")
        log.close_turn("done now")
        log.flush()
        wait_for(lambda: {"msg-s-follow-2", "msg-s-follow-3"} <= names(tmp_path / "lite"), 10,
                 "the finished turn")
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=20)
    err = errors.read_text()
    assert proc.returncode == 0, err
    missing = [ln for ln in err.splitlines() if "has no sessions directory" in ln]
    assert len(missing) == 1
    assert "stopped; 4 entries written" in err
