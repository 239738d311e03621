"""A withdrawal acts at once: with a real follower, a ``dsh-rewind`` appended after the last
``turn/end`` (the session's last action, so neither a next turn nor the 600 s idle-close would
cut) removes the withdrawn entries — and the session node derived from the withdrawn prompt —
within two poll intervals: in embedded mode (``memory-worker run``) and in distributed mode
(``memory-worker daemon`` + a Celery ``memory-worker worker`` on Redis, PostgreSQL state)."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from cluster_support import BIN, throwaway_cluster, wait_for
from cluster_support import lite_names as names
from conftest import REPO

sys.path.insert(0, str(REPO / "benchmarks"))
from redis_dbs import redis_db
from worker_dshgen import SessionLogWriter

pytestmark = pytest.mark.integration

POLL_S = 3.0  # the deadline of the withdrawal is two of these
REDIS_DB = redis_db("withdrawal_acts_at_once")  # tests/support/redis_dbs.py
CWD = "/home/dev/at-once"


def names_when_ready(lite: Path) -> set[str]:
    """The entry names, or none while the shelf's tables are still being created."""
    try:
        return names(lite)
    except sqlite3.OperationalError:
        return set()


def write_session(home: Path, sid: str) -> tuple[SessionLogWriter, int]:
    log = SessionLogWriter(home, sid, CWD)
    prompt = log.open_turn("Rotate the walrus-token credentials on the box")
    log.title("Rotate the walrus-token credentials", prompt)
    log.close_turn("Rotated them")
    log.turn("and restart the proxy", "restarted")
    log.flush()
    return log, prompt


def withdraw_within_two_polls(
    log: SessionLogWriter, prompt: int, entries: Callable[[], set[str]]
) -> float:
    """Append the marker (one durable batch) and wait for the store to hold none of the
    session's entries; returns how long that took."""
    log.rewind(prompt)
    log.flush()
    started = time.monotonic()
    wait_for(lambda: not entries(), 2 * POLL_S, "the withdrawn entries to go", every=0.02)
    took = time.monotonic() - started
    print(f"withdrawal acted {took:.2f} s after the marker was durable (poll {POLL_S} s)")
    return took


def test_embedded_follower_retracts_a_late_marker_within_two_polls(tmp_path: Path) -> None:
    sid = "s-at-once"
    env = {
        **os.environ,
        "MEMORY_WORKER_DATA_DIR": str(tmp_path / "data"),
        "MEMORY_WORKER_LITE_HOME": str(tmp_path / "lite"),
        "MEMORY_WORKER_POLL_INTERVAL_S": str(POLL_S),
        "MEMORY_WORKER_IDLE_CLOSE_S": "600",
    }
    env.pop("MEMORY_WORKER_STATE_URL", None)
    log, prompt = write_session(tmp_path / "dsh", sid)
    errors = tmp_path / "stderr.txt"
    with errors.open("w") as sink:
        proc = subprocess.Popen(
            [str(BIN / "memory-worker"), "run", "--dsh-home", str(tmp_path / "dsh")],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=sink,
        )
    lite = tmp_path / "lite"
    try:
        everything = {f"msg-{sid}-{n}" for n in range(4)} | {f"session-{sid}"}
        wait_for(lambda: names_when_ready(lite) == everything, 60, "the two turns and the node")
        took = withdraw_within_two_polls(log, prompt, lambda: names(lite))
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
    assert proc.returncode == 0, errors.read_text()
    assert took < 2 * POLL_S
    with sqlite3.connect(tmp_path / "data" / "state.db") as conn:
        title = conn.execute("SELECT title_text FROM sessions").fetchall()
        outcomes = conn.execute("SELECT entry, outcome FROM retractions ORDER BY entry").fetchall()
        node = conn.execute(
            "SELECT subject, outcome FROM audit WHERE action = 'repair-session-node'"
        ).fetchall()
    assert title == [(None,)]
    assert outcomes == [(f"msg-{sid}-{n}", "retracted") for n in range(4)]
    assert node == [(f"session-{sid}", "deleted")]


def test_distributed_daemon_and_worker_retract_a_late_marker_within_two_polls(
    tmp_path: Path,
) -> None:
    sid = "s-at-once-d"
    env = {
        "MEMORY_WORKER_POLL_INTERVAL_S": str(POLL_S),
        "MEMORY_WORKER_IDLE_CLOSE_S": "600",
        # The periodic reconcile must not be what finds the marker.
        "MEMORY_WORKER_RECONCILE_INTERVAL_S": "600",
    }
    with throwaway_cluster(tmp_path, "h10_at_once", REDIS_DB, env) as cluster:
        log, prompt = write_session(cluster.home, sid)
        cluster.start("daemon", "daemon")
        cluster.start_worker("w1")
        everything = {f"msg-{sid}-{n}" for n in range(4)} | {f"session-{sid}"}
        wait_for(
            lambda: names_when_ready(cluster.lite) == everything, 90, "the two turns and the node"
        )
        took = withdraw_within_two_polls(log, prompt, cluster.names)
        assert took < 2 * POLL_S
        with cluster.state.transaction() as repos:
            state = repos.sessions.get(sid)
            retracted = sorted(
                r.entry for r in repos.audit.retractions(session_id=sid) if r.outcome == "retracted"
            )
        assert state is not None and state.title_text is None
        assert retracted == [f"msg-{sid}-{n}" for n in range(4)]
