"""Shared pieces of the fault suite: a DSH home to fault, ``run --once`` as a process, full
store dumps, the names a run summary gives as not finished, and the number of kills to make
(``MEMORY_WORKER_FAULT_KILLS`` scales the suite up for longer runs; CI uses the defaults)."""

from __future__ import annotations

import os
import random
import re
import shutil
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cli_fork import run_cli
from conftest import REPO

from hypatia_lite.store import LiteStore

sys.path.insert(0, str(REPO / "benchmarks"))
from worker_dshgen import conversation

BIN = Path(sys.executable).parent / "memory-worker"
LITE = Path(sys.executable).parent / "hypatia-lite"
#: (session id, project, turns): sizes that make some jobs long enough to be killed mid-way.
SESSIONS = [(f"f-{i}", f"/home/dev/fault-{i % 2}", 30 + 30 * i) for i in range(4)]


def children(pid: int) -> list[int]:
    """The pids of ``pid``'s child processes (none once it is gone)."""
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return []
    return [int(p) for p in text.split()]


def kills(default: int) -> int:
    """How many kills a test makes: ``default`` × ``MEMORY_WORKER_FAULT_KILLS`` / 20 when that
    variable is set (20 = the CI total), else ``default``."""
    scale = os.environ.get("MEMORY_WORKER_FAULT_KILLS")
    return default if not scale else max(default, default * int(scale) // 20)


def rng() -> random.Random:
    """Random points, reproducible with ``MEMORY_WORKER_FAULT_SEED``."""
    return random.Random(int(os.environ.get("MEMORY_WORKER_FAULT_SEED", "1207")))


def lay_home(
    root: Path, like: Path | None = None, sessions: list[tuple[str, str, int]] = SESSIONS
) -> None:
    """The fault home under ``root/dsh`` (a copy of ``like``'s, so clean and faulted runs read the
    same bytes)."""
    if like is not None:
        shutil.copytree(like / "dsh", root / "dsh")
        return
    for sid, cwd, turns in sessions:
        conversation(root / "dsh", sid, cwd, turns, title=f"Fault {sid}", batch_turns=20)


def env(root: Path, **extra: str) -> dict[str, str]:
    out = {
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
        if name not in extra:
            out.pop(name, None)
    return out


def run_once_argv(root: Path, *args: str) -> list[str]:
    return [str(BIN), "run", "--once", *args, "--dsh-home", str(root / "dsh")]


def run_once(root: Path, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
    """``run --once`` over ``root`` to its end: a process of its own, forked from the
    pre-imported server (``cli_fork``); a test that signals the run uses :func:`run_once_argv`."""
    return run_cli(run_once_argv(root, *args)[1:], env=env(root, **extra), timeout=600)


def dump(root: Path) -> dict[str, Any]:
    with LiteStore("default", home=root / "lite") as store:
        return store.dump()


def clean_run(root: Path) -> dict[str, Any]:
    """Lay the home under ``root``, run it once without faults, return the full store dump."""
    lay_home(root)
    done = run_once(root)
    assert done.returncode == 0, done.stderr
    return dump(root)


_NOT_FINISHED = re.compile(r"; not finished: (.*) \(why: ")


def not_finished(stderr: str) -> set[str]:
    """The sessions a ``run --once`` summary names as not finished."""
    found = _NOT_FINISHED.search(stderr)
    return set(found.group(1).split(", ")) if found else set()


_LAGGING = (
    "SELECT s.session_id FROM sessions AS s LEFT JOIN progress AS p "
    "ON p.session_id = s.session_id AND p.shelf = 'default' "
    "WHERE s.durable_end_seq > {most}(coalesce(p.last_logged_seq, 0), s.inherited_cut)"
)


def lagging(root: Path) -> set[str]:
    """Sessions whose log the state database says is not fully logged (SQLite state)."""
    with sqlite3.connect(root / "data" / "state.db") as conn:
        rows = conn.execute(_LAGGING.format(most="max")).fetchall()
    return {sid for (sid,) in rows}


def pg_lagging(url: str) -> set[str]:
    """The same on a PostgreSQL state database at ``url``."""
    import psycopg

    with psycopg.connect(url) as conn:
        rows = conn.execute(_LAGGING.format(most="greatest")).fetchall()
    return {sid for (sid,) in rows}


def wait_for(condition: Callable[[], object], seconds: float, what: str) -> None:
    """Poll ``condition`` until it is true; fail naming ``what`` after ``seconds``."""
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)
