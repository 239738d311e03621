"""``memory-worker inspect --json`` shows, per session, the messages the worker would write and
the withdrawals that take some of them back."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dsh_memory_worker.worker.cli import _register, app

_register()
runner = CliRunner()

V4_ID = "7d3c1f0e-2b6a-4c59-9e1d-5a8f3b2c4d10"


def _sessions(path: Path) -> list[dict[str, object]]:
    result = runner.invoke(app, ["inspect", str(path), "--json"])
    assert result.exit_code == 0, result.output
    sessions: list[dict[str, object]] = json.loads(result.output)["sessions"]
    return sessions


def test_v4_example_messages_and_withdrawals(fixtures_dir: Path) -> None:
    (report,) = _sessions(fixtures_dir / "v4-example" / "session.v4.jsonl")
    assert report["withdrawals"] == [
        {"seq": 58, "kind": "dsh-rewind", "withdrawn_seqs": [47, 48, 49]}
    ]
    roles = [(5, "user"), (15, "assistant"), (23, "user"), (36, "assistant"), (47, "user"),
             (49, "assistant"), (63, "user"), (65, "assistant")]  # fmt: skip
    assert report["messages"] == [
        {"ordinal": n, "seq": seq, "role": role, "name": f"msg-{V4_ID}-{n}",
         "withdrawn": seq in (47, 49)}
        for n, (seq, role) in enumerate(roles)
    ]  # fmt: skip


def test_fork_child_lists_only_its_own_messages(fixtures_dir: Path) -> None:
    (report,) = _sessions(fixtures_dir / "subagent-fork-in-process" / "session.1.jsonl")
    assert report["inherited"] == 42
    assert [(m["seq"], m["ordinal"]) for m in report["messages"]] == [(49, 0), (96, 1)]
    assert report["withdrawals"] == []


def test_configured_whitelist_is_used(fixtures_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMORY_WORKER_WITHDRAWAL_KINDS", "plugin:rollback")
    (report,) = _sessions(fixtures_dir / "v4-example" / "session.v4.jsonl")
    assert report["withdrawals"] == []
    assert not any(m["withdrawn"] for m in report["messages"])
