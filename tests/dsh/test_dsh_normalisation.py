"""Legacy and cross-version shapes normalise to one event model; the fold never raises."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from dsh_memory_worker.memory.dsh.events import APPEND, Replace
from dsh_memory_worker.memory.dsh.forks import inherited_cut
from dsh_memory_worker.memory.dsh.reader import read_log
from dsh_memory_worker.memory.dsh.surface import fold_surface
from dsh_memory_worker.memory.dsh.synthetic import synthetic_rows, write_log


def _write(path: Path, header: dict[str, Any], rows: list[dict[str, Any]]) -> Path:
    lines = [json.dumps({"type": "session", **header})] + [json.dumps(r) for r in rows]
    path.write_text("\n".join(lines) + "\n")
    return path


def _user(text: str, source: dict[str, Any], op: Any = "append", **extra: Any) -> dict[str, Any]:
    data = {"id": f"m-{text}", "role": "user", "content": [{"type": "text", "text": text}],
            "source": source}  # fmt: skip
    return {"type": "user/message", "data": data, "surfaceOp": op, **extra}


def test_v0_legacy_shapes(tmp_path: Path) -> None:
    rows = [
        _user("hello", {"kind": "user"}),
        {"type": "steering/message", "surfaceOp": "append",
         "data": {"id": "s1", "role": "user", "content": [{"type": "text", "text": "steer"}],
                  "source": {"kind": "user"}}},
        {"type": "assistant/message", "surfaceOp": "append",
         "data": {"turn": 1, "step": 1, "message": {"id": "a1", "role": "assistant",
                  "content": [{"type": "text", "text": "hi"}],
                  "source": {"kind": "model", "provider": "p", "model": "m"}}}},
        {"type": "compact/start", "data": {"compactionId": "c"}},
        _user("rb", {"plugin": "rollback"}, {"op": "replace", "start": 1, "end": 2},
              sourceEventSeqs=[1, 2]),
        {"type": "assistant/message", "surfaceOp": {"op": "replace", "start": 0, "end": 4},
         "sourceEventSeqs": [0, 4],
         "data": {"turn": 2, "step": 0, "message": {"id": "rw", "role": "assistant",
                  "content": [], "source": {"kind": "model", "provider": "dsh-rewind",
                                            "model": "rewind-marker"}}}},
        {"type": "assistant/message", "surfaceOp": "append",
         "data": {"turn": 2, "step": 1, "message": {"id": "empty", "role": "assistant",
                  "content": [], "source": {"kind": "model", "provider": "p", "model": "m"}}}},
    ]  # fmt: skip
    log = read_log(_write(tmp_path / "session.jsonl", {"version": 0, "id": "s"}, rows))
    assert [e.type for e in log.events] == [
        "user/message", "user/message", "assistant/message", "compaction/start",
        "user/message", "user/message", "assistant/message",
    ]  # fmt: skip
    assert [p.kind for p in log.problems] == ["invalid"]  # {plugin:'rollback'} has no kind
    rollback = log.events[4]
    assert rollback.message is not None and rollback.message.source_kind == "plugin:rollback"
    assert rollback.surface_op == Replace(1, 2)
    marker = log.events[5]
    assert marker.message is not None
    assert (marker.message.source_kind, marker.message.content) == ("dsh-rewind", ())
    assert marker.data["message"]["id"] == "rw"  # raw payload kept
    assert log.events[6].message is None  # empty assistant content derives no message
    surface = fold_surface(log.events)
    assert surface.problems == []
    assert surface.nodes == [5, 6]
    assert [(r.seq, r.kind, r.shadowed) for r in surface.replacements] == [
        (4, "plugin:rollback", (1, 2)),
        (5, "dsh-rewind", (0, 4)),
    ]


def test_v3_sources_and_v2_fork_cut(tmp_path: Path) -> None:
    rows = [
        {"seq": 0, "time": 5, "type": "session/end-seed", "data": {"inherited": True}},
        {"seq": 1, "time": 5, "type": "session/end-seed", "data": {}},
        {"seq": 2, "time": 5, "type": "session/end-seed", "data": {"inherited": True}},
        {**_user("x", {"kind": "plugin", "plugin": "dsh-rewind"}), "seq": 3, "time": 6},
        {**_user("y", {"kind": "plugin", "plugin": "@deepseek-ai/dsh-system-prompt"}),
         "seq": 4, "time": 6, "sourceEventSeqs": [[0, 2]]},
        {"seq": 5, "time": 7, "type": "tool/result", "surfaceOp": "append",
         "sourceEventSeqs": [4],
         "data": {"turn": 1, "step": 1, "message": {"id": "t", "role": "user",
                  "source": {"kind": "tool", "callId": "c1"},
                  "content": [{"type": "tool-result", "toolCallId": "c1", "isError": True,
                               "content": [{"type": "text", "text": "boom"}]}]}}},
    ]  # fmt: skip
    log = read_log(
        _write(tmp_path / "session.v3.jsonl", {"version": 3, "id": "c", "isSeeded": True}, rows)
    )
    assert log.problems == [] and log.inherited == 2
    assert log.header is not None and log.header.is_seeded
    assert inherited_cut(log.header, log.events[:2]) == 0
    kinds = [e.message.source_kind for e in log.events[3:] if e.message is not None]
    assert kinds == ["plugin:dsh-rewind", "runtime-context", "tool"]
    assert log.events[4].source_seqs == (0, 1, 2)
    tool = log.events[5].message
    assert tool is not None
    assert (tool.role, tool.tool_call_id, tool.is_error) == ("tool", "c1", True)
    assert tool.content == ({"type": "text", "text": "boom"},)
    assert log.events[5].surface_op is APPEND


def test_fold_violations_are_problems(tmp_path: Path) -> None:
    rows = [
        _user("a", {"kind": "user"}),
        _user("b", {"kind": "user"}),
        _user("c", {"kind": "x"}, {"op": "replace", "startSeq": 1, "endSeq": 0},
              sourceEventSeqs=[0, 1]),
        _user("d", {"kind": "x"}, {"op": "replace", "startSeq": 9, "endSeq": 9},
              sourceEventSeqs=[0]),
        _user("e", {"kind": "x"}, {"op": "replace", "startSeq": 0, "endSeq": 1},
              sourceEventSeqs=[0]),
    ]  # fmt: skip
    log = read_log(_write(tmp_path / "session.v4.jsonl", {"version": 4, "id": "f"}, rows))
    surface = fold_surface(log.events)
    assert [p.message for p in surface.problems] == [
        "seq 2: replace 1…0 is reversed in surface order; op ignored",
        "seq 3: replace 9…9 names a seq that is not on the surface; op ignored",
        "seq 4: sourceEventSeqs do not cite shadowed [1]",
    ]
    assert surface.nodes == [4]


def test_bad_line_inside_complete_zstd_frame_is_corrupt(tmp_path: Path) -> None:
    rows = list(synthetic_rows(30))
    rows[12] = "{not json"
    path = tmp_path / "session.v4.jsonl.zstd"
    write_log(path, rows, compressed=True, batch=10)
    log = read_log(path)
    assert [p.kind for p in log.problems] == ["corrupt"] and not log.ok
    assert "complete frame" in log.problems[0].message


def test_crashed_writer_leaves_open_turn_not_torn(tmp_path: Path) -> None:
    path = tmp_path / "session.v4.jsonl.zstd"
    write_log(path, synthetic_rows(100), compressed=True, batch=7)  # 100 = 11 turns + 1 event
    log = read_log(path)
    assert log.problems == [] and not log.torn and log.ok
    assert log.open_turn is True
    assert log.events[-1].type == "turn/start"
