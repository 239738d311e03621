"""Every DSH fixture reads with the counts, markers and cuts its README and the format doc state."""

from __future__ import annotations

from pathlib import Path

import pytest

from dsh_memory_worker.memory.dsh.events import APPEND, Replace
from dsh_memory_worker.memory.dsh.reader import read_log
from dsh_memory_worker.memory.dsh.surface import fold_surface

# Expanded event counts: rows after the header, plus (members - 1) per packed chunk row.
V0_COUNTS = {
    "cancel/session.jsonl": 14,
    "error-finish/session.jsonl": 12,
    "inline-image-prompt/session.jsonl": 16,
    "compaction-recovery/session.jsonl": 31,
    "fs-read/session.jsonl": 34 + 28 + 12 + 36,  # packed rows of 29, 13 and 37 members
    "subagent-fork-in-process/session.jsonl": 49 + 22 + 58 + 44 + 24 + 3,
    "subagent-fork-in-process/session.1.jsonl": 41 + 22 + 33 + 3,
}


@pytest.mark.parametrize(("name", "count"), sorted(V0_COUNTS.items()))
def test_v0_snapshot_expanded_counts(fixtures_dir: Path, name: str, count: int) -> None:
    log = read_log(fixtures_dir / name)
    assert log.problems == []
    assert log.ok
    assert log.header is not None and log.header.version == 0
    assert [e.seq for e in log.events] == list(range(count))
    assert all(e.time is None for e in log.events)
    assert log.open_turn is False
    assert log.events[-1].type == "turn/end"


def test_v4_example_raw(fixtures_dir: Path) -> None:
    log = read_log(fixtures_dir / "v4-example/session.v4.jsonl")
    assert log.ok and log.problems == [] and not log.torn
    assert log.header is not None
    assert (log.header.version, log.header.cwd) == (4, "/home/dev/widget")
    assert log.header.id == "7d3c1f0e-2b6a-4c59-9e1d-5a8f3b2c4d10"
    assert [e.seq for e in log.events] == list(range(69))
    assert log.inherited == 0
    last = log.events[68]
    assert (last.type, last.ignorable) == ("acme/usage-note", True)
    marker = log.events[58]
    assert marker.type == "user/message"
    assert marker.surface_op == Replace(47, 49)
    assert marker.source_seqs == (47, 48, 49)
    assert marker.message is not None and marker.message.source_kind == "dsh-rewind"
    tool = log.events[12].message
    assert tool is not None and tool.role == "tool" and tool.tool_call_id == "call_01"
    assert log.events[18].type == "session/end-seed" and log.events[18].data == {}


def test_v4_example_zstd_is_ten_frames_and_identical(fixtures_dir: Path) -> None:
    raw = read_log(fixtures_dir / "v4-example/session.v4.jsonl")
    packed = read_log(fixtures_dir / "v4-example/session.v4.jsonl.zstd")
    assert packed.problems == [] and packed.ok
    assert packed.events == raw.events
    assert packed.header == raw.header
    data = (fixtures_dir / "v4-example/session.v4.jsonl.zstd").read_bytes()
    assert data.count(b"\x28\xb5\x2f\xfd") == 10
    assert packed.position.offset == len(data)
    assert packed.position.next_seq == 69


def test_v4_example_surface_fold(fixtures_dir: Path) -> None:
    surface = fold_surface(read_log(fixtures_dir / "v4-example/session.v4.jsonl").events)
    assert surface.problems == []
    assert surface.nodes == [4, 55, 36, 58, 63, 65]
    by_seq = {r.seq: r for r in surface.replacements}
    assert sorted(by_seq) == [33, 55, 58]
    assert (by_seq[33].kind, by_seq[33].start_seq, by_seq[33].end_seq) == (
        "compact-checkpoint",
        5,
        15,
    )
    assert by_seq[33].shadowed == (5, 6, 10, 12, 15)
    assert (by_seq[55].start_seq, by_seq[55].end_seq) == (33, 27)  # start > end numerically
    assert by_seq[55].shadowed == (33, 23, 25, 27)
    assert (by_seq[58].kind, by_seq[58].shadowed, by_seq[58].cited) == (
        "dsh-rewind",
        (47, 48, 49),
        (47, 48, 49),
    )


def test_fork_child_inherits_42(fixtures_dir: Path) -> None:
    child = read_log(fixtures_dir / "subagent-fork-in-process/session.1.jsonl")
    assert child.header is not None
    assert child.header.parent == "96cf59c9-b347-48b9-b234-a5200913ad05"
    assert child.header.seed_length == 42 and child.header.is_seeded
    assert child.header.origin == "subagent" and child.header.delegation_depth == 1
    assert child.inherited == 42
    assert child.events[42].type == "session/end-seed" and child.events[42].data == {}
    parent = read_log(fixtures_dir / "subagent-fork-in-process/session.jsonl")
    assert parent.inherited == 0
    # the inherited prefix is a verbatim copy of the parent's events 0..41
    assert [e.data for e in child.events[:42]] == [e.data for e in parent.events[:42]]


def test_compaction_recovery_v0_checkpoint(fixtures_dir: Path) -> None:
    log = read_log(fixtures_dir / "compaction-recovery/session.jsonl")
    checkpoint = log.events[21]
    assert checkpoint.type == "user/message"
    assert checkpoint.surface_op == Replace(4, 4)
    assert checkpoint.source_seqs == (19, 20, 4)
    assert checkpoint.message is not None
    assert checkpoint.message.source_kind == "compact-checkpoint"
    assert checkpoint.message.source["plugin"] == "compact"
    assert [log.events[s].type for s in (19, 20, 22)] == [
        "compaction/start",
        "compaction/summary",
        "compaction/end",
    ]
    surface = fold_surface(log.events)
    assert surface.problems == []
    assert surface.nodes == [21, 13, 15, 28]


def test_v0_packed_rows_expand_to_chunks(fixtures_dir: Path) -> None:
    log = read_log(fixtures_dir / "fs-read/session.jsonl")
    chunks = [e for e in log.events if e.type == "assistant/chunk"]
    reasoning = [e for e in chunks if e.data["chunk"]["type"] == "reasoning-delta"]
    assert len(reasoning) == 29 + 37
    tool_deltas = [e for e in chunks if e.data["chunk"]["type"] == "tool-call-delta"]
    assert len(tool_deltas) == 13
    assistant = log.events[57]  # row 18 after 28 + 12 extra packed members
    assert assistant.type == "assistant/message"
    assert assistant.source_seqs == tuple(range(9, 57))
    result = log.events[59]
    assert result.type == "tool/result" and result.source_seqs == (58,)
    assert log.events[58].type == "tool/call"
    assert result.message is not None and result.message.role == "tool"
    assert result.message.tool_call_id == "call_00_hHPZCcivsIkXAGS9jTGy8417"
    assert result.surface_op is APPEND
    # the V0 tool result wrapper is unwrapped: content is the result blocks
    assert all(block.get("type") != "tool-result" for block in result.message.content)
