"""Legacy marker spellings, read from V0 logs through ``read_log``: the early V0 dsh-rewind
assistant marker and every rollback / dsh-rewind plugin spelling withdraw; an editor does not."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from dsh_memory_worker.memory.dsh.reader import read_log
from dsh_memory_worker.memory.span import session_decisions
from dsh_memory_worker.memory.withdrawal import find_markers

# In the cancel fixture the surface is [4 (human), 5 (plugin context), 11 (assistant)].
REPLACE = {"op": "replace", "start": 4, "end": 11}


def _user_marker(source: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "user/message",
        "data": {
            "id": "mk",
            "role": "user",
            "source": source,
            "content": [{"type": "text", "text": "checkpoint"}],
        },
        "surfaceOp": REPLACE,
        "sourceEventSeqs": [4, 5, 11],
    }


EARLY_V0_REWIND = {
    "type": "assistant/message",
    "data": {
        "turn": 2,
        "step": 0,
        "message": {
            "id": "rw",
            "role": "assistant",
            "content": [],
            "source": {"kind": "model", "provider": "dsh-rewind", "model": "rewind-marker"},
        },
    },
    "surfaceOp": REPLACE,
    "sourceEventSeqs": [4, 5, 11],
}


def _log_with(tmp_path: Path, fixtures_dir: Path, row: dict[str, Any]) -> Path:
    base = (fixtures_dir / "cancel" / "session.jsonl").read_text()
    path = tmp_path / "session.jsonl"
    path.write_text(base.rstrip("\n") + "\n" + json.dumps(row) + "\n")
    return path


@pytest.mark.parametrize(
    ("row", "kind"),
    [
        (EARLY_V0_REWIND, "dsh-rewind"),
        (_user_marker({"kind": "plugin", "plugin": "dsh-rewind"}), "plugin:dsh-rewind"),
        (_user_marker({"kind": "plugin", "plugin": "rollback"}), "plugin:rollback"),
        (_user_marker({"plugin": "rollback"}), "plugin:rollback"),
    ],
)
def test_legacy_spellings_withdraw(
    tmp_path: Path, fixtures_dir: Path, row: dict[str, Any], kind: str
) -> None:
    log = read_log(_log_with(tmp_path, fixtures_dir, row))
    assert log.ok, log.problems
    markers = find_markers(log.events)
    assert [(m.seq, m.kind, sorted(m.withdrawn_seqs)) for m in markers] == [(14, kind, [4, 5, 11])]
    report = session_decisions(log.events, session_id="s")
    assert [(m["seq"], m["withdrawn"]) for m in report["messages"]] == [(4, True), (11, True)]


def test_editor_plugin_is_not_a_withdrawal(tmp_path: Path, fixtures_dir: Path) -> None:
    row = _user_marker({"kind": "plugin", "plugin": "@dsh-external/manual-context"})
    log = read_log(_log_with(tmp_path, fixtures_dir, row))
    assert log.ok, log.problems
    assert find_markers(log.events) == []
