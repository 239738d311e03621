"""Under a slow store the lease is renewed on time and a re-done span resumes from what is
written. The ``cli`` store is hypatia-lite behind a wrapper script that sleeps before every
create it is told to slow; with ``lease_ttl_s`` 5 s (its floor) the batch of five entry creates
takes longer than the lease, yet the job finishes in one attempt (the heartbeat renews it
independent of batches) and every entry and ``belongTo`` edge is created exactly once. A
``run --once`` killed with SIGKILL between two edge creates, then run again, sends only the edges
still missing and converges on a clean run's store."""

from __future__ import annotations

import os
import shutil
import signal
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from cli_fork import run_cli, start_cli
from conftest import REPO

from hypatia_lite.store import LiteStore

sys.path.insert(0, str(REPO / "benchmarks"))
from worker_dshgen import conversation

pytestmark = pytest.mark.integration

BIN = Path(sys.executable).parent / "memory-worker"
#: The lease (``lease_ttl_s``'s floor) and the sleep before each entry create: the five creates
#: of one batch take longer than the lease.
LEASE_TTL_S = 5
SLOW_S = 1.1
LITE = Path(sys.executable).parent / "hypatia-lite"
SID = "slow-1"
WRAPPER = """#!/bin/sh
echo "sleeping $1 $2 $3 $4" >> "$SLOW_CALLS"
case " $SLOW_COMMANDS " in *" $1 "*|*" $1:$2 "*) sleep "$SLOW_S" ;; esac
echo "start $1 $2 $3 $4" >> "$SLOW_CALLS"
exec "$SLOW_LITE" "$@"
"""


def _setup(root: Path, turns: int, like: Path | None = None) -> Path:
    if like is None:
        conversation(root / "dsh", SID, "/home/dev/slow", turns, title="Slow store")
    else:
        shutil.copytree(like / "dsh", root / "dsh")
    wrapper = root / "slow-hypatia"
    wrapper.write_text(WRAPPER)
    wrapper.chmod(0o755)
    return wrapper


def _env(root: Path, slow_s: float, commands: str) -> dict[str, str]:
    """``commands``: the calls the wrapper sleeps before, each a command (every call of it) or
    ``command:first-argument`` (that one call)."""
    env = {
        **os.environ,
        "MEMORY_WORKER_DATA_DIR": str(root / "data"),
        "HYPATIA_LITE_HOME": str(root / "lite"),
        "MEMORY_WORKER_STORE_TRANSPORT": "cli",
        "MEMORY_WORKER_STORE_BINARY": str(root / "slow-hypatia"),
        "MEMORY_WORKER_LEASE_TTL_S": str(LEASE_TTL_S),
        "SLOW_S": str(slow_s),
        "SLOW_COMMANDS": commands,
        "SLOW_CALLS": str(root / "calls.log"),
        "SLOW_LITE": str(LITE),
        "COLUMNS": "200",
    }
    for name in (
        "MEMORY_WORKER_LITE_HOME",
        "MEMORY_WORKER_STATE_URL",
        "MEMORY_WORKER_CONFIG",
        "MEMORY_WORKER_MODEL_ROUTES",
    ):
        env.pop(name, None)
    return env


def _argv(root: Path) -> list[str]:
    return [str(BIN), "run", "--once", "--dsh-home", str(root / "dsh")]


def _calls(root: Path) -> list[str]:
    path = root / "calls.log"
    return path.read_text().splitlines() if path.exists() else []


def _started(root: Path, command: str) -> Counter[str]:
    """How often each ``command`` call was issued (the feature probe ``--help`` left out)."""
    return Counter(
        line.split(" ", 2)[2]
        for line in _calls(root)
        if line.startswith(f"start {command} ") and " --help" not in line
    )


def _dump(root: Path) -> dict[str, Any]:
    with LiteStore("default", home=root / "lite") as store:
        return store.dump()


def _edge(ordinal: int) -> str:
    return f"msg-{SID}-{ordinal} belongTo session-{SID}"


def test_a_span_longer_than_the_lease_finishes_in_one_attempt(tmp_path: Path) -> None:
    _setup(tmp_path, 2)
    started = time.monotonic()
    done = run_cli(_argv(tmp_path)[1:], env=_env(tmp_path, SLOW_S, "knowledge-create"), timeout=300)
    took = time.monotonic() - started
    assert done.returncode == 0, done.stderr
    assert "lost" not in done.stderr and "0 failed" in done.stderr
    assert took > 5 * SLOW_S > LEASE_TTL_S  # the five entry creates alone outlast the lease
    entries = _started(tmp_path, "knowledge-create")
    assert entries.pop(f"session-{SID} --shelf default") == 1
    assert entries == Counter({f"msg-{SID}-{i} --shelf default": 1 for i in range(4)})
    assert _started(tmp_path, "statement-create") == Counter({_edge(i): 1 for i in range(4)})


def test_a_killed_run_resends_only_the_missing_edges(tmp_path: Path) -> None:
    clean = tmp_path / "clean"
    _setup(clean, 3)
    assert run_cli(_argv(clean)[1:], env=_env(clean, 0, ""), timeout=300).returncode == 0

    root = tmp_path / "killed"
    _setup(root, 3, like=clean)
    # Only the third edge's call sleeps: the window the kill lands in (the first two go at once).
    proc = start_cli(_argv(root)[1:], env=_env(root, 1.5, f"statement-create:msg-{SID}-2"))
    third = f"sleeping statement-create {_edge(2)}"
    deadline = time.monotonic() + 180
    while not (_calls(root) and _calls(root)[-1] == third):
        assert proc.poll() is None, "run --once ended before its third edge"
        assert time.monotonic() < deadline, "run --once never reached its third edge"
        time.sleep(0.01)
    os.kill(proc.pid, signal.SIGKILL)  # while the third edge's call sleeps: two are written
    assert proc.wait(timeout=30) == -signal.SIGKILL
    assert _started(root, "statement-create") == Counter({_edge(0): 1, _edge(1): 1})

    again = run_cli(_argv(root)[1:], env=_env(root, 0, ""), timeout=300)
    assert again.returncode == 0, again.stderr
    assert _started(root, "statement-create") == Counter({_edge(i): 1 for i in range(6)})
    assert _dump(root) == _dump(clean)
