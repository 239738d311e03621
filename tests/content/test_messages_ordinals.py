"""Dense, replay-stable message ordinals counted from the inherited cut."""

from __future__ import annotations

import pytest
from eventkit import assistant, chunk, marker, other, tool_call, tool_result, user

from dsh_memory_worker.memory.messages import base_ordinal, count_loggable, message_ordinals


def _log() -> list:
    return [
        other(0, "turn/start", {"turn": 1}),
        user(1, "hi"),
        chunk(2),
        user(3, "ctx", kind="runtime-context"),
        assistant(4, "hello"),
        tool_call(5, "c1", "read"),
        tool_result(6, "c1"),
        assistant(7, "done", step=2),
        other(8, "turn/end", {"turn": 1}),
    ]


def test_dense_ordinals_ignore_chunks_plugins_and_tools() -> None:
    assert message_ordinals(_log()) == {1: 0, 4: 1, 7: 2}


def test_count_and_base_ordinal_are_replay_stable() -> None:
    log = _log()
    assert count_loggable(log) == 3
    assert count_loggable([]) == 0
    assert base_ordinal(log, 7) == 2
    assert base_ordinal(log, 7) == base_ordinal(list(log), 7)
    assert base_ordinal(log, 0) == 0
    assert base_ordinal(log, 100) == 3


def test_base_ordinal_from_a_checkpoint_needs_only_the_tail() -> None:
    log = _log()
    assert base_ordinal(log[4:], 8, checkpoint=(4, 1)) == 3
    assert base_ordinal(log[4:], 7, checkpoint=(4, 1)) == 2
    with pytest.raises(ValueError, match="checkpoint seq 9 lies after seq 7"):
        base_ordinal(log, 7, checkpoint=(9, 3))


def test_fork_child_never_counts_the_inherited_prefix() -> None:
    log = [
        user(0, "parent"),
        assistant(1, "parent reply"),
        other(2, "session/end-seed"),
        user(3, "child"),
        assistant(4, "child reply"),
    ]
    assert message_ordinals(log, inherited_cut=2) == {3: 0, 4: 1}
    assert base_ordinal(log, 4, inherited_cut=2) == 1
    # a checkpoint inside the inherited prefix is ignored
    assert base_ordinal(log, 4, inherited_cut=2, checkpoint=(0, 0)) == 1


def test_withdrawn_messages_keep_their_ordinals() -> None:
    log = [user(0, "a"), assistant(1, "b"), marker(2, [0, 1]), user(3, "c"), assistant(4, "d")]
    assert message_ordinals(log) == {0: 0, 1: 1, 3: 2, 4: 3}


def test_start_offsets_ordinals() -> None:
    assert message_ordinals(_log()[4:], start=5) == {4: 5, 7: 6}
