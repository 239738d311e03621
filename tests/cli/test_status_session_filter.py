"""`memory-worker status --session ID` shows only that session (its row; with `--audit`, its
audit trail), keeps `total` over every session, and names an unknown id in one line, exit 1."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from dsh_memory_worker.worker.cli import _register, app
from dsh_memory_worker.worker.state import StateDB

_register()
runner = CliRunner()


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """A state database that has seen s-a (10 events) and s-b (7), one forget record each."""
    for name in list(os.environ):
        if name.startswith("MEMORY_WORKER_"):
            monkeypatch.delenv(name)
    url = f"sqlite:///{tmp_path / 'state.db'}"
    db = StateDB.open(url)
    with db.transaction() as repos:
        for sid, end in (("s-a", 10), ("s-b", 7)):
            repos.sessions.upsert_scan(
                sid,
                path=f"/logs/{sid}.jsonl",
                scan_offset=0,
                scan_seq=end,
                durable_end_seq=end,
                project=f"p-{sid}",
            )
            repos.audit.record(
                "forget", "done", shelf="default", session_id=sid, detail=f"forgot {sid}"
            )
    db.dispose()
    return {"MEMORY_WORKER_STATE_URL": url, "MEMORY_WORKER_DATA_DIR": str(tmp_path / "data")}


def _status(env: dict[str, str], *args: str) -> Result:
    return runner.invoke(app, ["status", *args], env=env)


def _json(result: Result) -> Any:
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_session_restricts_the_json_rows_and_keeps_the_total(env: dict[str, str]) -> None:
    everything = _json(_status(env, "--json"))
    assert [row["session_id"] for row in everything["sessions"]] == ["s-a", "s-b"]
    one = _json(_status(env, "--json", "--session", "s-b"))
    assert set(one) == {"shelf", "sessions", "total", "consolidation"}  # no "audit" without --audit
    assert [(row["session_id"], row["durable_end_seq"], row["lag"]) for row in one["sessions"]] == [
        ("s-b", 7, 7)
    ]
    assert one["total"] == everything["total"]
    assert (one["total"]["sessions"], one["total"]["lag"]) == (2, 17)


def test_session_with_audit_restricts_the_trail(env: dict[str, str]) -> None:
    found = _json(_status(env, "--json", "--audit", "--session", "s-a"))
    assert [row["session_id"] for row in found["sessions"]] == ["s-a"]
    assert [(row["action"], row["session_id"], row["detail"]) for row in found["audit"]] == [
        ("forget", "s-a", "forgot s-a")
    ]
    unfiltered = _json(_status(env, "--json", "--audit"))
    assert [row["session_id"] for row in unfiltered["audit"]] == ["s-a", "s-b"]


def test_session_table_has_one_row_and_a_total_of_all(env: dict[str, str]) -> None:
    result = _status(env, "--session", "s-a", "--wide")  # every column, one line per row
    assert result.exit_code == 0, result.output
    assert "memory-worker status (shelf default, session s-a)" in result.stdout
    rows = [
        [cell.strip() for cell in line.split("│")[1:-1]]
        for line in result.stdout.splitlines()
        if line.count("│") == 12
    ]
    assert [row[:5] for row in rows] == [
        ["s-a", "p-s-a", "10", "0", "10"],
        ["total, all sessions (2)", "", "17", "", "17"],
    ]
    assert "s-b" not in result.stdout and "audit trail" not in result.stdout


@pytest.mark.parametrize("args", [(), ("--json",), ("--audit",), ("--json", "--audit")])
def test_unknown_session_is_one_line_and_exit_1(env: dict[str, str], args: tuple[str, ...]) -> None:
    result = _status(env, "--session", "s-typo", *args)
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr.splitlines() == [
        "memory-worker status: s-typo: unknown session (not seen by the watcher)"
    ]


def test_session_names_a_prefix_of_two_sessions_as_ambiguous(env: dict[str, str]) -> None:
    """(A unique prefix selects its session: tests/cli/test_cli_tables_fit.py.)"""
    both = _status(env, "--session", "s")
    assert both.exit_code == 1
    assert both.stderr == (
        "memory-worker status: s: ambiguous, the prefix of 2 sessions (s-a, s-b); give more of "
        "the id\n"
    )
