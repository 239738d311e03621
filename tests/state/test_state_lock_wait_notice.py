"""A write that waits for another process's lock on the SQLite state database says so, in one
line, instead of waiting in silence (issue 22, item 9): a second connection holds the lock for a
few seconds while ``run --once`` needs it; the run says ``waiting for the state database lock
(<path>), N s`` once, says when it got it, and finishes (exit 0)."""

from __future__ import annotations

import sqlite3
import subprocess
import threading
from pathlib import Path

import pytest
from fault_support import env, run_once, run_once_argv
from worker_dshgen import conversation

pytestmark = pytest.mark.integration


def test_a_held_state_lock_is_said_once_then_the_run_finishes(tmp_path: Path) -> None:
    conversation(tmp_path / "dsh", "lock-1", "/home/dev/lock", 2)
    first = run_once(tmp_path)  # creates and migrates the state database
    assert first.returncode == 0, first.stderr
    conversation(tmp_path / "dsh", "lock-2", "/home/dev/lock", 2)  # work that must be written
    state = tmp_path / "data" / "state.db"
    locker = sqlite3.connect(state, isolation_level=None, check_same_thread=False)
    locker.execute("BEGIN IMMEDIATE")
    run = subprocess.Popen(
        run_once_argv(tmp_path),
        env=env(tmp_path),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: list[str] = []
    said = threading.Event()

    def _read() -> None:
        assert run.stderr is not None
        for line in run.stderr:
            lines.append(line)
            if "waiting for the state database lock" in line:
                said.set()

    reader = threading.Thread(target=_read, daemon=True)
    reader.start()
    try:
        # The lock is held until the run says it waits (or gives up waiting for that: 120 s).
        said.wait(120)
    finally:
        locker.execute("COMMIT")
        locker.close()
    code = run.wait(timeout=120)
    reader.join(timeout=30)
    stderr = "".join(lines)
    assert code == 0, stderr
    waiting = [line for line in lines if "waiting for the state database lock" in line]
    assert len(waiting) == 1, stderr
    assert f"waiting for the state database lock ({state}), 2 s" in waiting[0]
    got = [line for line in lines if "got the state database lock" in line]
    assert len(got) == 1, stderr
