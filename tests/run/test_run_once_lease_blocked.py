"""A killed ``run --once`` does not block the next one: its session lease (owner on this host,
process gone) is taken over at once, and the rerun ends with exit 0 and a store identical to a
clean run. A lease a live process holds is waited for ``lease_wait_s`` and then named: one line
by session, ``not finished: <session>`` in the summary, exit 1, and ``status`` shows it as the
job's last failure until a later run finishes the session."""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from cli_fork import run_cli
from conftest import REPO

from dsh_memory_worker.worker.state import StateDB, session_lease_key
from hypatia_lite.store import LiteStore

sys.path.insert(0, str(REPO / "benchmarks"))
from worker_dshgen import conversation

pytestmark = pytest.mark.integration

BIN = Path(sys.executable).parent / "memory-worker"


def _env(root: Path, **extra: str) -> dict[str, str]:
    env = {
        **os.environ,
        "MEMORY_WORKER_DATA_DIR": str(root / "data"),
        "HYPATIA_LITE_HOME": str(root / "lite"),
        "COLUMNS": "250",
        **extra,
    }
    for name in (
        "MEMORY_WORKER_LITE_HOME",
        "MEMORY_WORKER_STATE_URL",
        "MEMORY_WORKER_CONFIG",
        "MEMORY_WORKER_MODEL_ROUTES",
    ):
        env.pop(name, None)
    return env


def _argv(root: Path, *args: str) -> list[str]:
    return [str(BIN), *args, "--dsh-home", str(root / "dsh")]


def _run(root: Path, **extra: str) -> subprocess.CompletedProcess[str]:
    return run_cli(_argv(root, "run", "--once")[1:], env=_env(root, **extra), timeout=300)


def _dump(root: Path) -> dict[str, Any]:
    with LiteStore("default", home=root / "lite") as store:
        return store.dump()


def _held_by(root: Path, pid: int) -> bool:
    try:
        with sqlite3.connect(root / "data" / "state.db", timeout=0.05) as conn:
            rows = conn.execute("SELECT owner FROM leases WHERE owner IS NOT NULL").fetchall()
    except sqlite3.Error:
        return False
    return any(owner.split(":")[2:3] == [str(pid)] for (owner,) in rows)


def _home(root: Path) -> None:
    for i in range(3):
        conversation(root / "dsh", f"kill-{i}", f"/home/dev/lease-{i % 2}", 400, batch_turns=50)


def test_a_killed_run_once_does_not_block_the_next(tmp_path: Path) -> None:
    clean, killed = tmp_path / "clean", tmp_path / "killed"
    _home(clean)
    shutil.copytree(clean / "dsh", killed / "dsh")
    assert _run(clean).returncode == 0

    proc = subprocess.Popen(
        _argv(killed, "run", "--once"),
        env=_env(killed),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 120
    while not _held_by(killed, proc.pid):
        assert proc.poll() is None, "run --once finished before it could be killed mid-job"
        assert time.monotonic() < deadline, "run --once never took a session lease"
        time.sleep(0.005)
    os.kill(proc.pid, signal.SIGKILL)
    assert proc.wait(timeout=30) == -signal.SIGKILL
    assert _held_by(killed, proc.pid)  # the dead process's lease is still in the table

    started = time.monotonic()
    rerun = _run(killed)
    assert rerun.returncode == 0, rerun.stderr
    assert "not finished" not in rerun.stderr
    assert "0 failed" in rerun.stderr
    assert time.monotonic() - started < 120  # not lease_ttl_s (300 s)
    assert _dump(killed) == _dump(clean)


def test_a_lease_held_by_a_live_process_is_named_and_recorded(tmp_path: Path) -> None:
    conversation(tmp_path / "dsh", "held", "/home/dev/held", 3)
    conversation(tmp_path / "dsh", "free", "/home/dev/held", 3)
    (tmp_path / "data").mkdir(parents=True)
    state = StateDB.open(f"sqlite:///{tmp_path / 'data' / 'state.db'}")
    holder = "daemon:other-host/1:4242:0badf00d"  # another host: trusted until it expires
    with state.transaction() as repos:
        lease = repos.leases.acquire(session_lease_key("held"), holder, 3600)
    assert lease is not None

    blocked = _run(tmp_path, MEMORY_WORKER_LEASE_WAIT_S="0.3")
    assert blocked.returncode == 1
    lines = [line for line in blocked.stderr.splitlines() if "not finished" in line]
    until = f"{lease.expires_at.astimezone(dt.UTC):%Y-%m-%d %H:%M:%S} UTC"
    assert len(lines) == 2, blocked.stderr
    assert lines[0].endswith(
        f"log_span held not finished: could not get its lease: the session's lease is held by "
        f"{holder} until {until}; the next run or reconcile tries again"
    )
    assert lines[1].endswith(
        "1 failed; not finished: held (why: the lines above, or `memory-worker status`)"
    )
    assert {row["name"] for row in _dump(tmp_path)["knowledge"]} >= {
        f"msg-free-{i}" for i in range(6)
    }
    assert not any(row["name"].startswith("msg-held-") for row in _dump(tmp_path)["knowledge"])

    shown = run_cli(["status", "--json"], env=_env(tmp_path), timeout=120)
    rows = {row["session_id"]: row for row in json.loads(shown.stdout)["sessions"]}
    assert rows["held"]["lease"]["owner"] == holder
    assert rows["held"]["last_failure"]["task"] == "log_span"
    assert rows["held"]["last_failure"]["error"] == (
        f"could not get its lease: the session's lease is held by {holder} until {until}"
    )
    assert rows["free"]["last_failure"] is None

    with state.transaction() as repos:
        assert repos.leases.release(lease)
    state.dispose()
    after = _run(tmp_path)
    assert after.returncode == 0, after.stderr
    assert {f"msg-held-{i}" for i in range(6)} <= {
        row["name"] for row in _dump(tmp_path)["knowledge"]
    }
    shown = run_cli(["status", "--json"], env=_env(tmp_path), timeout=120)
    rows = {row["session_id"]: row for row in json.loads(shown.stdout)["sessions"]}
    assert rows["held"]["last_failure"] is None and rows["held"]["lag"] == 0
