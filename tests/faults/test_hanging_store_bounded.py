"""``run --once`` against a store that hangs ends within a stated bound (issue 22, item 2).

The store breaker (``memory.store.breaker``): after ``store_down_after_timeouts`` (3) store calls
timed out within ``store_down_window_s`` (300 s), the store is treated as down and every later
call fails at once, so the run waits at most 3 × ``store_timeout_s`` on the store (plus one
more timeout per ``store_down_retry_s`` of run time), names every session it could not finish
and exits 1. Real hanging stores: a ``cli`` binary whose writes sleep, and an MCP server that
answers the handshake but never a tool call. A later run with a healthy store converges on the
clean run's store (a store that alternately hangs and answers:
``test_flapping_store_bounded.py``)."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest
from fault_support import LITE, dump, lay_home, not_finished, run_once, wait_for
from store_contract.fake_binary import alive, read_pids, write_fake_hypatia

pytestmark = pytest.mark.integration

SESSIONS = [(f"h-{i}", f"/home/dev/hang-{i % 2}", 3) for i in range(3)]
#: Short: a hung store sleeps 300 s (an MCP server: forever), so a run that waited on it would
#: blow the bound by minutes; a healthy call (the CLI's probes) that misses it on a busy machine
#: only counts as one more timeout of the same outcome.
TIMEOUT_S = 0.5
#: 3 timeouts of 0.5 s, and start-up, scan and the healthy calls of a busy 2-core machine.
BOUND_S = 3 * TIMEOUT_S + 25.0

CLI_WRAPPER = """#!/bin/sh
case "$1" in
  knowledge-create|statement-create) sleep 300 ;;
esac
exec "$HANG_LITE" "$@"
"""


def _progress(root: Path) -> dict[str, int]:
    with sqlite3.connect(root / "data" / "state.db") as conn:
        rows = conn.execute("SELECT session_id, last_logged_seq FROM progress").fetchall()
    return dict(rows)


def _converges(root: Path, clean: Path) -> None:
    healthy = run_once(root)
    assert healthy.returncode == 0, healthy.stderr
    assert dump(root) == dump(clean)


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("clean")
    lay_home(root, sessions=SESSIONS)
    done = run_once(root)
    assert done.returncode == 0, done.stderr
    return root


def _bounded_run(root: Path, **extra: str) -> None:
    """``run --once`` on the hanging store: within the bound, every session named, exit 1, the
    breaker's line said, and no watermark moved (nothing was written)."""
    started = time.monotonic()
    hung = run_once(root, MEMORY_WORKER_STORE_TIMEOUT_S=str(TIMEOUT_S), **extra)
    elapsed = time.monotonic() - started
    assert hung.returncode == 1, hung.stderr
    assert elapsed < BOUND_S, f"run --once took {elapsed:.1f} s: {hung.stderr}"
    assert not_finished(hung.stderr) == {sid for sid, _, _ in SESSIONS}
    assert "treated as down after 3 timeouts within 300 s" in hung.stderr
    assert all(seq == 0 for seq in _progress(root).values())


def test_run_once_on_a_hanging_cli_store_is_bounded(tmp_path: Path, clean: Path) -> None:
    lay_home(tmp_path, like=clean)
    wrapper = tmp_path / "hang-hypatia"
    wrapper.write_text(CLI_WRAPPER)
    wrapper.chmod(0o755)
    _bounded_run(
        tmp_path,
        MEMORY_WORKER_STORE_TRANSPORT="cli",
        MEMORY_WORKER_STORE_BINARY=str(wrapper),
        HANG_LITE=str(LITE),
    )
    _converges(tmp_path, clean)


def test_run_once_on_an_mcp_server_that_never_answers_is_bounded(
    tmp_path: Path, clean: Path
) -> None:
    lay_home(tmp_path, like=clean)
    fake = write_fake_hypatia(tmp_path, LITE.as_posix())
    pids = tmp_path / "pids"
    _bounded_run(
        tmp_path,
        MEMORY_WORKER_STORE_TRANSPORT="mcp",
        MEMORY_WORKER_STORE_BINARY=str(fake),
        FAKE_MODE="proxy",
        FAKE_HANG_CALLS="1",
        FAKE_PIDFILE=str(pids),
    )
    wait_for(
        lambda: not any(alive(pid) for pid in read_pids(pids)), 30, "the MCP servers to be gone"
    )
    _converges(tmp_path, clean)
