"""Fault suite, store and state database: a store that refuses every write, a store whose calls
hang past ``store_timeout_s``, a state database locked by another process for a while, and a
PostgreSQL state server restarted in the middle of a run (a PRIVATE cluster made with initdb in a
temp dir on its own port; the machine's server is never touched). A faulted run names in its
summary every session it could not finish (exit 1) or rides the fault out; the run after it ends
with exit 0 and a store identical to a clean run's (full dump)."""

from __future__ import annotations

import glob
import shutil
import socket
import sqlite3
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_fork import start_cli
from fault_support import (
    LITE,
    clean_run,
    dump,
    env,
    lagging,
    lay_home,
    not_finished,
    pg_lagging,
    run_once,
    run_once_argv,
    wait_for,
)

pytestmark = pytest.mark.integration

WRAPPER = """#!/bin/sh
mode=$(cat "$FAULT_MODE_FILE")
case "$mode:$1" in
  refuse:knowledge-create|refuse:statement-create)
    echo "Error: storage error: disk I/O error" >&2; exit 1 ;;
  hang:knowledge-create|hang:statement-create) exec sleep 60 ;;
esac
exec "$FAULT_LITE" "$@"
"""


#: A process per store call: a small home keeps the CLI cases fast.
CLI_SESSIONS = [("c-0", "/home/dev/fault-cli", 2), ("c-1", "/home/dev/fault-cli", 1)]


def _cli_root(root: Path, mode: str, like: Path | None = None) -> dict[str, str]:
    lay_home(root, like=like, sessions=CLI_SESSIONS)
    wrapper = root / "fault-hypatia"
    wrapper.write_text(WRAPPER)
    wrapper.chmod(0o755)
    (root / "mode").write_text(mode)
    return {
        "MEMORY_WORKER_STORE_TRANSPORT": "cli",
        "MEMORY_WORKER_STORE_BINARY": str(wrapper),
        "FAULT_MODE_FILE": str(root / "mode"),
        "FAULT_LITE": str(LITE),
        "MEMORY_WORKER_TASK_MAX_RETRIES": "0",
        "MEMORY_WORKER_RETRY_BACKOFF_S": "0.1",
        "MEMORY_WORKER_STORE_TIMEOUT_S": "1",
    }


@pytest.fixture(scope="module")
def cli_clean(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The small home run once through a healthy ``cli`` store: the reference both faulted runs
    copy and compare with (they only read it)."""
    clean_root = tmp_path_factory.mktemp("cli-clean")
    clean_env = _cli_root(clean_root, "ok")
    done = run_once(clean_root, **clean_env)
    assert done.returncode == 0, done.stderr
    return clean_root


@pytest.fixture(scope="module")
def direct_clean(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The fault home run once without faults (the reference of the state-database cases)."""
    root = tmp_path_factory.mktemp("clean")
    clean_run(root)
    return root


@pytest.mark.parametrize("mode", ["refuse", "hang"])
def test_a_refusing_or_hanging_store_is_named_then_converges(
    tmp_path: Path, mode: str, cli_clean: Path
) -> None:
    clean_root = cli_clean
    clean = dump(clean_root)

    root = tmp_path / "faulted"
    extra = _cli_root(root, mode, like=clean_root)
    faulted = run_once(root, **extra)
    assert faulted.returncode == 1
    sessions = {sid for sid, _cwd, _turns in CLI_SESSIONS}
    assert lagging(root) == sessions  # nothing could be written...
    assert not_finished(faulted.stderr) == sessions  # ...and every session is named

    (root / "mode").write_text("ok")
    again = run_once(root, **extra)
    assert again.returncode == 0, again.stderr
    assert not_finished(again.stderr) == set()
    assert dump(root) == clean


def test_a_state_database_locked_for_a_while_is_ridden_out(
    tmp_path: Path, direct_clean: Path
) -> None:
    clean = dump(direct_clean)
    root = tmp_path / "locked"
    lay_home(root, like=direct_clean)
    first = run_once(root, "--jobs", "1")  # creates and migrates the state database
    assert first.returncode == 0, first.stderr
    shutil.rmtree(root / "lite")  # the store is wiped: everything is written again...
    locker = sqlite3.connect(
        root / "data" / "state.db", isolation_level=None, check_same_thread=False
    )
    locker.execute("BEGIN EXCLUSIVE")  # ...while another process holds the state database
    try:
        locked = start_cli(run_once_argv(root)[1:], env=env(root))
        # Held until the run says it has waited for it (its notice after 2 s of waiting).
        wait_for(
            lambda: (
                "waiting for the state database lock" in locked.stderr_so_far()
                or locked.poll() is not None
            ),
            120,
            "the run to wait for the state database lock",
        )
    finally:
        locker.execute("COMMIT")
        locker.close()
    assert locked.wait(timeout=600) == 0, locked.stderr
    assert "waiting for the state database lock" in locked.stderr  # it did wait, then went on
    assert not_finished(locked.stderr) == set()
    assert dump(root) == clean


# ------------------------------------------------------------------- a private PostgreSQL


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def private_pg() -> Iterator[tuple[str, Path, str]]:
    """A throwaway PostgreSQL cluster (initdb + pg_ctl as the ``postgres`` OS user, trust auth,
    its own port and socket directory); yields ``(url, data dir, pg_ctl)``."""
    bins = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if not bins or shutil.which("runuser") is None:
        pytest.fail("the fault suite needs PostgreSQL's initdb and runuser")
    bindir = Path(bins[-1]).parent
    # Outside pytest's root-only temp tree: the postgres user must reach it.
    base = Path(tempfile.mkdtemp(prefix="mw-fault-pg-"))
    shutil.chown(base, "postgres", "postgres")
    base.chmod(0o700)
    data, sockets, port = base / "data", base / "sock", _free_port()
    sockets.mkdir()
    shutil.chown(sockets, "postgres", "postgres")
    as_pg = ["runuser", "-u", "postgres", "--"]
    subprocess.run(
        [*as_pg, str(bindir / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres"],
        check=True,
        capture_output=True,
        timeout=180,
    )
    pg_ctl = str(bindir / "pg_ctl")
    options = f"-p {port} -k {sockets} -c listen_addresses=127.0.0.1 -c fsync=off"
    subprocess.run(
        [*as_pg, pg_ctl, "-D", str(data), "-o", options, "-l", str(base / "log"), "-w", "start"],
        check=True,
        capture_output=True,
        timeout=180,
    )
    try:
        yield f"postgresql://postgres@127.0.0.1:{port}/postgres", data, pg_ctl
    finally:
        subprocess.run(
            [*as_pg, pg_ctl, "-D", str(data), "-m", "immediate", "-w", "stop"],
            capture_output=True,
            timeout=180,
        )
        shutil.rmtree(base, ignore_errors=True)


def test_a_postgresql_restart_mid_run(
    tmp_path: Path, private_pg: tuple[str, Path, str], direct_clean: Path
) -> None:
    url, data, pg_ctl = private_pg
    clean = dump(direct_clean)
    root = tmp_path / "pg-run"
    lay_home(root, like=direct_clean)
    extra = {"MEMORY_WORKER_STATE_URL": url}
    proc = start_cli(run_once_argv(root)[1:], env=env(root, **extra))
    deadline = time.monotonic() + 120
    while not (root / "lite").exists():  # the run is writing
        assert proc.poll() is None and time.monotonic() < deadline
        time.sleep(0.02)
    assert proc.poll() is None, "the run ended before the restart"
    restarted = subprocess.run(
        [
            "runuser",
            "-u",
            "postgres",
            "--",
            pg_ctl,
            "-D",
            str(data),
            "-l",
            str(data.parent / "log"),
            "-m",
            "fast",
            "-w",
            "restart",
        ],
        capture_output=True,
        timeout=180,
    )
    assert restarted.returncode == 0, restarted.stderr
    proc.wait(timeout=600)
    text = proc.stderr
    # Ridden out, or every session it could not finish is named.
    assert pg_lagging(url) <= not_finished(text), text
    if proc.returncode == 0:
        assert not_finished(text) == set()
    again = run_once(root, **extra)
    assert again.returncode == 0, again.stderr
    assert not_finished(again.stderr) == set()
    assert pg_lagging(url) == set()
    assert dump(root) == clean
