"""The reference's "a rewind that lands after the session's last flush is not seen at all",
removed: ``memory-worker run`` follows the DSH home; a session is logged, idle-closed and
consolidated; a withdrawal marker appended to it afterwards is picked up, its messages are
retracted and the summary, archive and work units repaired — with no withdrawn canary left.
The run logs JSON lines (``log_json``) and serves metrics on ``--metrics-port``."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from canary_support import BIN, CanarySession, canary_reply, cli_env, dump_text, names
from model_server import ModelServer, model_server_fixture  # noqa: F401

from dsh_memory_worker.worker.figures import figures
from dsh_memory_worker.worker.state.database import StateDB

pytestmark = pytest.mark.integration


def _until(check: Callable[[], bool], what: str, timeout: float = 40) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def test_marker_after_idle_close_is_retracted_and_repaired(
    tmp_path: Path, model_server: ModelServer
) -> None:
    model_server.responder = canary_reply
    a = CanarySession.start(tmp_path, "s-late")
    b = CanarySession.start(tmp_path, "s-other")
    a.turn("1")
    doomed = a.turn("2")
    b.turn("1")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = cli_env(
        tmp_path,
        model_server,
        MEMORY_WORKER_IDLE_CLOSE_S="1",
        MEMORY_WORKER_FLUSH_WINDOW_S="0",
        MEMORY_WORKER_POLL_INTERVAL_S="0.2",
        MEMORY_WORKER_RECONCILE_INTERVAL_S="1",
        MEMORY_WORKER_LOG_JSON="true",
    )
    worker = subprocess.Popen(
        [str(BIN / "memory-worker"), "run", "--metrics-port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    state = StateDB(f"sqlite:///{tmp_path / 'data' / 'state.db'}")
    try:

        def settled(session: str) -> Callable[[], bool]:
            def check() -> bool:
                try:
                    rows = {r["session_id"]: r for r in figures(state, "default")["sessions"]}
                except Exception:
                    return False
                row: dict[str, Any] | None = rows.get(session)
                return bool(
                    row
                    and row["closed"]
                    and row["lag"] == 0
                    and row["consolidation_lag"] == 0
                    and row["last_logged_seq"] > 0
                )

            return check

        _until(settled("s-late"), "s-late logged, idle-closed and consolidated")
        _until(settled("s-other"), "s-other logged, idle-closed and consolidated")
        _until(lambda: any(n.startswith("sum2-") for n in names(tmp_path)), "the archive")
        assert "CANARY-s-late-2-ASK" in dump_text(tmp_path)

        marker, withdrawn = a.rewind(doomed.user_seq)  # the session is idle and closed
        _until(
            lambda: not any(c in dump_text(tmp_path) for c in withdrawn),
            "the withdrawn canaries to leave the store",
        )
        _until(settled("s-late"), "s-late settled again")
        text = dump_text(tmp_path)
        for canary in a.kept(withdrawn) + list(b.canaries.values()):
            assert canary in text, canary
        with state.transaction() as repos:
            retracted = sorted(r.entry for r in repos.audit.retractions(session_id="s-late"))
            repaired = [
                (e.outcome, e.cause_marker_seq)
                for e in repos.audit.entries(session_id="s-late")
                if e.action == "repair-summary"
            ]
        assert retracted == ["msg-s-late-2", "msg-s-late-3"]
        assert repaired == [("regenerated", marker)]
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as reply:
            metrics = reply.read().decode()
        assert "memory_worker_retractions_total 2.0" in metrics
        assert 'memory_worker_repairs_total{kind="summary",outcome="regenerated"} 1.0' in metrics
    finally:
        worker.send_signal(signal.SIGTERM)
        try:
            _, stderr = worker.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            worker.kill()
            _, stderr = worker.communicate()
        state.dispose()
    assert worker.returncode == 0, stderr
    lines = [line for line in stderr.splitlines() if line.startswith("{")]
    records = [json.loads(line) for line in lines]
    assert records and all({"time", "level", "logger", "message"} <= set(r) for r in records)
    assert any("repaired s-late after a withdrawal" in r["message"] for r in records)
