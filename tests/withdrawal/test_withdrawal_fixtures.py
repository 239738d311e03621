"""Withdrawal and ordinal decisions on the real DSH fixtures (read with ``read_log``)."""

from __future__ import annotations

from pathlib import Path

from dsh_memory_worker.memory.dsh.reader import read_log
from dsh_memory_worker.memory.messages import message_ordinals
from dsh_memory_worker.memory.withdrawal import (
    Marker,
    find_markers,
    withdrawn_loggable,
    withdrawn_seqs,
)

V4 = Path("v4-example/session.v4.jsonl")


def test_v4_rewind_at_58_withdraws_47_and_49_only(fixtures_dir: Path) -> None:
    log = read_log(fixtures_dir / V4)
    assert log.ok
    assert find_markers(log.events) == [
        Marker(
            seq=58,
            kind="dsh-rewind",
            withdrawn_seqs=frozenset({47, 48, 49}),
            start_seq=47,
            end_seq=49,
        )
    ]
    assert withdrawn_seqs(log.events) == frozenset({47, 48, 49})
    assert withdrawn_loggable(log.events) == frozenset({47, 49})  # 48 is runtime context


def test_v4_compaction_checkpoints_are_not_withdrawals(fixtures_dir: Path) -> None:
    log = read_log(fixtures_dir / V4)
    checkpoints = [e.seq for e in log.events if e.is_replace and e.seq != 58]
    assert checkpoints == [33, 55]  # 55 is the startSeq 33 > endSeq 27 case
    assert find_markers([e for e in log.events if e.seq != 58]) == []


def test_v4_zstd_gives_the_same_decisions(fixtures_dir: Path) -> None:
    raw = read_log(fixtures_dir / V4)
    packed = read_log(fixtures_dir / "v4-example" / "session.v4.jsonl.zstd")
    assert message_ordinals(packed.events) == message_ordinals(raw.events)
    assert find_markers(packed.events) == find_markers(raw.events)


def test_v4_ordinals_count_withdrawn_messages(fixtures_dir: Path) -> None:
    log = read_log(fixtures_dir / V4)
    assert message_ordinals(log.events, log.inherited) == {
        5: 0,
        15: 1,
        23: 2,
        36: 3,
        47: 4,
        49: 5,
        63: 6,
        65: 7,
    }


def test_compaction_recovery_has_no_withdrawal(fixtures_dir: Path) -> None:
    log = read_log(fixtures_dir / "compaction-recovery" / "session.jsonl")
    assert [e.seq for e in log.events if e.is_replace] == [21]
    assert find_markers(log.events) == []
    assert message_ordinals(log.events) == {4: 0, 28: 1}


def test_fork_pair_ordinals(fixtures_dir: Path) -> None:
    parent = read_log(fixtures_dir / "subagent-fork-in-process" / "session.jsonl")
    child = read_log(fixtures_dir / "subagent-fork-in-process" / "session.1.jsonl")
    assert child.inherited == 42
    assert message_ordinals(parent.events, parent.inherited) == {4: 0, 39: 1, 46: 2, 197: 3}
    # the child's copy of the parent's prefix never counts
    assert message_ordinals(child.events, child.inherited) == {49: 0, 96: 1}
