"""The adapters under faults, with real subprocesses: a server killed mid-call, hung calls
killed at the deadline, a binary without ``mcp`` or without a required tool, a spawn failure,
and the idle close."""

from __future__ import annotations

import logging
import os
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest
from store_contract.fake_binary import alive, read_pids, write_fake_hypatia
from store_contract.transports import lite_binary

from dsh_memory_worker.memory.store.base import FatalStoreError, Features, TransientStoreError
from dsh_memory_worker.memory.store.cli import CliStore
from dsh_memory_worker.memory.store.mcp import McpStore
from hypatia_lite.store import LiteStore

pytestmark = pytest.mark.integration


def _env(tmp_path: Path, mode: str, **extra: str) -> dict[str, str]:
    return {
        "HYPATIA_LITE_HOME": str(tmp_path / "home"),
        "FAKE_MODE": mode,
        "FAKE_PIDFILE": str(tmp_path / "pids"),
        **extra,
    }


def _wait_dead(pid: int, within: float = 5.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if not alive(pid):
            return True
        time.sleep(0.05)
    return False


def _mcp_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.levelno == logging.WARNING and "hypatia mcp unavailable" in r.getMessage()
    ]


def test_mcp_server_killed_mid_call_fails_cleanly_then_respawns(tmp_path: Path) -> None:
    fake = write_fake_hypatia(tmp_path, lite_binary())
    store = McpStore("default", str(fake), env=_env(tmp_path, "proxy"), cwd=tmp_path)
    try:
        assert store.knowledge_create("msg-a-1", "kept", tags=["message"]) is True
        [first] = read_pids(tmp_path / "pids")
        threading.Timer(0.5, os.kill, (first, signal.SIGKILL)).start()
        started = time.monotonic()
        with pytest.raises(TransientStoreError, match="hypatia mcp exited during knowledge_get"):
            store.knowledge_get("HANG-me")
        assert time.monotonic() - started < 5.0
        entry = store.knowledge_get("msg-a-1")
        assert entry is not None and entry.content.data == "kept"
        pids = read_pids(tmp_path / "pids")
        assert len(pids) == 2 and pids[0] == first and alive(pids[1])
        assert store.transport == "mcp"
    finally:
        store.close()
    assert _wait_dead(read_pids(tmp_path / "pids")[1])


def test_mcp_call_past_the_deadline_kills_the_server(tmp_path: Path) -> None:
    fake = write_fake_hypatia(tmp_path, lite_binary())
    # Healthy calls get a deadline a busy machine meets; the hung one gets 1 s.
    store = McpStore("default", str(fake), env=_env(tmp_path, "proxy"), cwd=tmp_path, timeout_s=60)
    try:
        assert store.knowledge_create("msg-b-1", "x") is True
        [first] = read_pids(tmp_path / "pids")
        store.timeout_s = 1.0
        started = time.monotonic()
        with pytest.raises(TransientStoreError, match="no answer within 1 s; server killed"):
            store.knowledge_get("HANG-me")
        assert time.monotonic() - started < 2.5  # the caller does not wait for the kill
        assert _wait_dead(first, within=8.0)
        store.timeout_s = 60.0
        assert store.knowledge_get("msg-b-1") is not None
        assert len(read_pids(tmp_path / "pids")) == 2
    finally:
        store.close()


def test_hung_cli_call_is_killed_at_the_timeout(tmp_path: Path) -> None:
    fake = write_fake_hypatia(tmp_path, lite_binary())
    store = CliStore(
        "default",
        str(fake),
        env=_env(tmp_path, "hang-cli"),
        cwd=tmp_path,
        timeout_s=1.0,
        attempts=2,
    )
    started = time.monotonic()
    with pytest.raises(TransientStoreError, match="timed out after 1 s and was killed"):
        store.knowledge_get("msg-c-1")
    elapsed = time.monotonic() - started
    assert 2.0 <= elapsed < 8.0  # two attempts of 1 s each, plus a short jittered wait
    pids = read_pids(tmp_path / "pids")
    assert len(pids) == 4  # each attempt: the hung command and the child it started
    assert all(_wait_dead(pid) for pid in pids)
    # Other commands still work (two timeouts do not open the breaker). A healthy call gets a
    # deadline a busy machine meets: a third timeout here would be the machine, not the store.
    store.timeout_s = 60.0
    assert store.knowledge_create("msg-c-1", "after") is True


def test_binary_without_mcp_falls_back_to_cli_with_one_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    fake = write_fake_hypatia(tmp_path, lite_binary())
    store = McpStore("default", str(fake), env=_env(tmp_path, "old"), cwd=tmp_path)
    caplog.set_level(logging.WARNING, logger="dsh_memory_worker.memory.store.mcp")
    try:
        assert store.knowledge_create("msg-d-1", "via cli", tags=["message"]) is True
        assert store.transport == "cli"
        assert store.knowledge_create("msg-d-1", "again") is False
        assert [r.key for r in store.search("via", catalog="knowledge", limit=5)] == ["msg-d-1"]
    finally:
        store.close()
    warnings = _mcp_warnings(caplog)
    assert len(warnings) == 1
    assert "unrecognized subcommand 'mcp'" in warnings[0]
    with LiteStore("default", home=tmp_path / "home") as lite:
        entry = lite.knowledge_get("msg-d-1")
    assert entry is not None and entry.content.data == "via cli"


def test_mcp_without_a_required_tool_falls_back_to_cli(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    fake = write_fake_hypatia(tmp_path, lite_binary())
    env = _env(tmp_path, "proxy", FAKE_DROP_TOOL="similar")
    store = McpStore("default", str(fake), env=env, cwd=tmp_path)
    caplog.set_level(logging.WARNING, logger="dsh_memory_worker.memory.store.mcp")
    try:
        assert store.knowledge_create("msg-e-1", "x") is True
        assert store.knowledge_get("msg-e-1") is not None
        assert store.transport == "cli"
    finally:
        store.close()
    assert _mcp_warnings(caplog) == [
        "hypatia mcp unavailable: hypatia mcp lacks similar; "
        "using the hypatia CLI for the rest of the run"
    ]
    [server] = read_pids(tmp_path / "pids")
    assert _wait_dead(server)


def test_spawn_failure_fails_that_call_and_keeps_mcp(tmp_path: Path) -> None:
    missing = tmp_path / "bin" / "hypatia"
    store = McpStore("default", str(missing), env=_env(tmp_path, "proxy"), cwd=tmp_path)
    try:
        with pytest.raises(FatalStoreError, match="cannot start"):
            store.knowledge_get("msg-f-1")
        assert store.transport == "mcp"
        missing.parent.mkdir()
        shutil.copy(write_fake_hypatia(tmp_path, lite_binary()), missing)
        assert store.knowledge_create("msg-f-1", "x") is True
        assert store.transport == "mcp"
        assert len(read_pids(tmp_path / "pids")) == 1  # served by the MCP proxy, not the CLI
    finally:
        store.close()


def test_idle_mcp_server_is_closed_and_reopened(tmp_path: Path) -> None:
    fake = write_fake_hypatia(tmp_path, lite_binary())
    store = McpStore(
        "default", str(fake), env=_env(tmp_path, "proxy"), cwd=tmp_path, idle_close_s=0.3
    )
    try:
        assert store.knowledge_create("msg-g-1", "x") is True
        [first] = read_pids(tmp_path / "pids")
        assert _wait_dead(first, within=6.0)
        assert store.knowledge_get("msg-g-1") is not None
        pids = read_pids(tmp_path / "pids")
        assert len(pids) == 2 and alive(pids[1])
    finally:
        store.close()


def test_not_connected_shelf_restarts_the_server_once(tmp_path: Path) -> None:
    fake = write_fake_hypatia(tmp_path, lite_binary())
    env = _env(tmp_path, "proxy")
    store = McpStore("late", str(fake), env=env, cwd=tmp_path)
    try:
        with pytest.raises(FatalStoreError, match="shelf 'late' is not connected"):
            store.knowledge_get("msg-h-1")
        first, second = read_pids(tmp_path / "pids")  # the retry ran on a fresh process
        assert _wait_dead(first) and alive(second)
        shelf_dir = tmp_path / "late-shelf"
        shelf_dir.mkdir()
        subprocess.run(
            [lite_binary(), "connect", str(shelf_dir), "-n", "late"],
            env={**os.environ, **env},
            check=True,
            capture_output=True,
            timeout=60,
        )
        assert store.knowledge_create("msg-h-1", "on the late shelf") is True
        assert store.transport == "mcp"
    finally:
        store.close()
    with LiteStore("late", home=tmp_path / "home") as lite:
        entry = lite.knowledge_get("msg-h-1")
    assert entry is not None and entry.content.data == "on the late shelf"


def test_failed_feature_probe_is_retried_once_then_cached(tmp_path: Path) -> None:
    fake = write_fake_hypatia(tmp_path, lite_binary())
    failfile = tmp_path / "fail"
    env = _env(tmp_path, "probe-fail", FAKE_FAILFILE=str(failfile))
    pids = tmp_path / "pids"
    failfile.touch()
    store = CliStore("default", str(fake), env=env, cwd=tmp_path)
    assert store.features() == Features()
    assert len(read_pids(pids)) == 4  # --help, knowledge-create/statement-create/similar --help
    failfile.unlink()
    assert store.features() == Features(
        no_embed=True, similar_filters=True, delete=True, update=True
    )
    failfile.touch()
    assert store.features().no_embed is True  # cached: no third probe
    assert len(read_pids(pids)) == 8

    pids.unlink()
    stubborn = CliStore("default", str(fake), env=env, cwd=tmp_path)
    assert stubborn.features() == Features()
    assert stubborn.features() == Features()
    assert stubborn.features() == Features()
    assert len(read_pids(pids)) == 8  # probed twice, then "no features" is cached
    assert stubborn.knowledge_create("msg-i-1", "x", embed=False) is True  # no --no-embed sent


def test_silent_mcp_server_fails_the_handshake_deadline(tmp_path: Path) -> None:
    fake = write_fake_hypatia(tmp_path, lite_binary())
    store = McpStore(
        "default",
        str(fake),
        env=_env(tmp_path, "silent-mcp"),
        cwd=tmp_path,
        handshake_timeout_s=1.0,
    )
    try:
        started = time.monotonic()
        with pytest.raises(TransientStoreError, match="handshake timed out after 1 s"):
            store.knowledge_get("msg-j-1")
        assert time.monotonic() - started < 8.0
        [server] = read_pids(tmp_path / "pids")
        assert _wait_dead(server)
        assert store.transport == "mcp"  # a slow start is not a reason to give MCP up
    finally:
        store.close()
