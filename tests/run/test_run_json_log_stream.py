"""With ``log_json`` every line `memory-worker run` writes to its log stream (standard error) is
one JSON object: no Rich progress bar, no plain summary. The summary is a JSON record
(``"event": "summary"``) with the same text, on the first run, the empty home's first run, a
run at rest (answered from the at-rest record), a run that has nothing to read, and while
following (``run`` until SIGINT)."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

import pytest
from cli_fork import start_cli
from cli_support import cli_env, memory_worker
from cluster_support import wait_for

pytestmark = pytest.mark.integration

SUMMARY = (
    "8 sessions, 551 new events; 28 entries written, 0 retracted, 19 edges; 24 jobs done, 0 failed"
)


def _records(stream: str) -> list[dict[str, Any]]:
    lines = stream.splitlines()
    assert lines, "nothing on the log stream"
    records = []
    for line in lines:
        try:
            records.append(json.loads(line))
        except ValueError:
            pytest.fail(f"not JSON on the log stream: {line!r}\n{stream}")
    return records


def _summary(records: list[dict[str, Any]]) -> str:
    said = [r for r in records if r.get("event") == "summary"]
    assert len(said) == 1, records
    return str(said[0]["message"])


def test_run_once_writes_only_json_lines(tmp_path: Path) -> None:
    (tmp_path / "home").mkdir()
    (tmp_path / "dsh" / "sessions").mkdir(parents=True)
    empty = memory_worker(tmp_path, "run", "--once", MEMORY_WORKER_LOG_JSON="true")
    assert empty.returncode == 0, empty.stderr
    assert _summary(_records(empty.stderr)).startswith("0 sessions")
    assert empty.stdout == ""

    assert memory_worker(tmp_path, "demo-home", str(tmp_path / "dsh2")).returncode == 0
    first = memory_worker(
        tmp_path, "run", "--once", MEMORY_WORKER_LOG_JSON="true", DSH_HOME=str(tmp_path / "dsh2")
    )
    assert first.returncode == 0, first.stderr
    assert _summary(_records(first.stderr)) == SUMMARY
    assert first.stdout == ""
    again = memory_worker(
        tmp_path, "run", "--once", MEMORY_WORKER_LOG_JSON="true", DSH_HOME=str(tmp_path / "dsh2")
    )
    assert again.returncode == 0, again.stderr
    assert _summary(_records(again.stderr)).startswith("8 sessions, 0 new events")

    missing = memory_worker(
        tmp_path, "run", "--once", MEMORY_WORKER_LOG_JSON="true", DSH_HOME=str(tmp_path / "none")
    )
    assert missing.returncode == 1
    [record] = _records(missing.stderr)
    assert record["level"] == "ERROR" and "has no sessions directory" in record["message"]


def test_following_writes_only_json_lines(tmp_path: Path) -> None:
    (tmp_path / "home").mkdir()
    assert memory_worker(tmp_path, "demo-home", str(tmp_path / "dsh")).returncode == 0
    env = cli_env(tmp_path, MEMORY_WORKER_LOG_JSON="true")
    process = start_cli(["run"], env=env, cwd=tmp_path)
    try:
        wait_for(lambda: "following" in process.stderr_so_far(), timeout=120, what="following")
        os.kill(process.pid, signal.SIGINT)
        assert process.wait(timeout=120) == 0, process.stderr
    finally:
        process.kill()
    records = _records(process.stderr)
    assert any(str(r["message"]).startswith("following ") for r in records), records


def test_the_daemon_and_a_start_up_error_write_only_json_lines(tmp_path: Path) -> None:
    (tmp_path / "home").mkdir()
    (tmp_path / "dsh" / "sessions").mkdir(parents=True)
    # An empty home sends no hint, so the broker (nothing listens on port 1) is never called.
    env = cli_env(
        tmp_path, MEMORY_WORKER_LOG_JSON="true", MEMORY_WORKER_BROKER_URL="redis://127.0.0.1:1/0"
    )
    process = start_cli(["daemon"], env=env, cwd=tmp_path)
    try:
        wait_for(lambda: "following" in process.stderr_so_far(), timeout=120, what="following")
        os.kill(process.pid, signal.SIGTERM)
        assert process.wait(timeout=120) == 0, process.stderr
    finally:
        process.kill()
    assert _summary(_records(process.stderr)) == "stopped; 0 hints sent, 0 dropped"

    (tmp_path / "a-file").write_text("", encoding="utf-8")
    broken = memory_worker(
        tmp_path,
        "run",
        "--once",
        MEMORY_WORKER_LOG_JSON="true",
        MEMORY_WORKER_STATE_URL=f"sqlite:///{tmp_path}/a-file/state.db",
    )
    assert broken.returncode == 2
    [record] = _records(broken.stderr)
    assert record["level"] == "ERROR"
    assert record["message"].startswith("memory-worker: cannot open the state database: ")
