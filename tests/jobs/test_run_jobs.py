"""`memory-worker run --once --jobs N` writes exactly what `--jobs 1` writes: the same store
(names, contents, edges) and the same watermarks, on the shipped fixtures plus generated
sessions; a second run writes nothing; a child process killed with SIGKILL in the middle of a
job is named on one line and its sessions are finished by the final pass; `--jobs 0` and
`--jobs` without `--once` are one line and exit 2."""

from __future__ import annotations

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
from pipeline_support import cli_env, dump

sys.path.insert(0, str(REPO / "benchmarks"))
from worker_dshgen import conversation

pytestmark = pytest.mark.integration

BIN = Path(sys.executable).parent / "memory-worker"
#: Generated sessions on top of the fixtures: (session id, project, turns, titled).
GENERATED = [(f"gen-{i}", f"/home/dev/jobs-{i % 3}", 60 + 40 * i, i % 2 == 0) for i in range(6)]


def _run(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(["run", *args, "--dsh-home", str(root / "dsh")], env=cli_env(root), timeout=180)


def _watermarks(root: Path) -> dict[str, Any]:
    """Every session's scan facts and watermarks, and the recorded failures."""
    with sqlite3.connect(root / "data" / "state.db") as conn:
        sessions = conn.execute(
            "SELECT session_id, scan_offset, scan_seq, durable_end_seq, last_turn_end_seq, "
            "inherited_cut, title_text, closed_at IS NOT NULL FROM sessions ORDER BY session_id"
        ).fetchall()
        progress = conn.execute(
            "SELECT shelf, session_id, last_logged_seq, last_consolidated_seq, "
            "last_belong_to_index, has_session_node, pending_tokens, last_check_turn "
            "FROM progress ORDER BY shelf, session_id"
        ).fetchall()
        failures = conn.execute("SELECT task, session_id, last_error FROM failures").fetchall()
    return {"sessions": sessions, "progress": progress, "failures": failures}


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A DSH home: the shipped fixtures (`demo-home`) plus six generated sessions of 60-260
    turns in three projects, half of them titled."""
    root = tmp_path_factory.mktemp("jobs-home")
    laid = run_cli(["demo-home", str(root / "dsh")], env=cli_env(root), timeout=120)
    assert laid.returncode == 0, laid.stderr
    for sid, cwd, turns, titled in GENERATED:
        conversation(
            root / "dsh",
            sid,
            cwd,
            turns,
            compressed=True,
            batch_turns=5,
            title=f"Generated session {sid}" if titled else None,
        )
    return root / "dsh"


def _copy(home: Path, root: Path) -> Path:
    shutil.copytree(home, root / "dsh")
    return root


@pytest.fixture(scope="module")
def serial(home: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """`run --once` (one process) on its own copy of the home: the reference."""
    root = _copy(home, tmp_path_factory.mktemp("jobs-1"))
    done = _run(root, "--once", "--jobs", "1")
    assert done.returncode == 0, done.stderr
    return {"root": root, "run": done, "dump": dump(root), "watermarks": _watermarks(root)}


def test_jobs_2_writes_exactly_what_jobs_1_writes(
    home: Path, serial: dict[str, Any], tmp_path: Path
) -> None:
    expected_names = {f"msg-{sid}-{n}" for sid, _, turns, _ in GENERATED for n in range(2 * turns)}
    assert expected_names <= {row["name"] for row in serial["dump"]["knowledge"]}
    root = _copy(home, tmp_path)
    first = _run(root, "--once", "--jobs", "2")
    assert first.returncode == 0, first.stderr
    assert dump(root) == serial["dump"]
    assert _watermarks(root) == serial["watermarks"]
    assert serial["watermarks"]["failures"] == []
    assert first.stderr.strip().splitlines()[-1] == serial["run"].stderr.strip().splitlines()[-1]
    assert (
        serial["run"].stderr.strip().splitlines()[-1].startswith(f"{8 + len(GENERATED)} sessions, ")
    )
    assert "memory-worker: process" not in first.stderr  # no child lost

    again = _run(root, "--once", "--jobs", "2")
    assert again.returncode == 0, again.stderr
    assert again.stderr.strip().splitlines()[-1] == (
        f"{8 + len(GENERATED)} sessions, 0 new events; 0 entries written, 0 retracted, "
        "0 edges; 0 jobs done, 0 failed"
    )
    assert dump(root) == serial["dump"]
    assert _watermarks(root) == serial["watermarks"]


def test_jobs_needs_a_positive_count_and_once(tmp_path: Path) -> None:
    env = cli_env(tmp_path)
    done = {
        args: run_cli(["run", *args, "--dsh-home", str(tmp_path / "dsh")], env=env, timeout=120)
        for args in (("--once", "--jobs", "0"), ("--jobs", "2"))
    }
    zero = done[("--once", "--jobs", "0")]
    assert zero.returncode == 2
    assert zero.stderr == "memory-worker: --jobs must be 1 or more (got 0)\n"
    follow = done[("--jobs", "2")]
    assert follow.returncode == 2
    assert follow.stderr == (
        "memory-worker: --jobs needs --once (following a DSH home runs in one process)\n"
    )
    assert not (tmp_path / "data").exists()  # nothing was opened


def _child_holding_a_lease(state_db: Path, parent: int) -> int | None:
    """The pid of a child of ``parent`` that holds a session lease right now, if any."""
    try:
        with sqlite3.connect(f"file:{state_db}?mode=ro", uri=True, timeout=1) as conn:
            owners = [
                row[0]
                for row in conn.execute(
                    "SELECT owner FROM leases WHERE owner IS NOT NULL AND key LIKE 'session:%'"
                )
            ]
    except sqlite3.Error:  # not created yet, or busy
        return None
    for owner in owners:  # "run:<host>:<pid>:<random>"
        pid = int(owner.split(":")[-2])
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        if pid != parent and int(stat.rsplit(")", 1)[1].split()[1]) == parent:
            return pid
    return None


def test_a_killed_child_is_named_and_its_sessions_finished(
    home: Path, serial: dict[str, Any], tmp_path: Path
) -> None:
    root = _copy(home, tmp_path)
    proc = subprocess.Popen(
        [str(BIN), "run", "--once", "--jobs", "2", "--dsh-home", str(root / "dsh")],
        env=cli_env(root),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    killed = None
    deadline = time.monotonic() + 120
    while killed is None and proc.poll() is None and time.monotonic() < deadline:
        killed = _child_holding_a_lease(root / "data" / "state.db", proc.pid)
        if killed is None:
            time.sleep(0.02)
    assert killed is not None, "no child process took a session lease"
    os.kill(killed, signal.SIGKILL)  # in the middle of a job, holding its session's lease
    _, stderr = proc.communicate(timeout=180)
    assert proc.returncode == 0, stderr
    lines = [line for line in stderr.splitlines() if f"(pid {killed})" in line]
    assert len(lines) == 1, stderr
    assert "was killed by SIGKILL; the final pass takes over its" in lines[0]
    assert dump(root) == serial["dump"]
    assert _watermarks(root) == serial["watermarks"]
