"""Which replacements are withdrawal markers, and what they withdraw (seed 001 semantics)."""

from __future__ import annotations

from eventkit import assistant, marker, other, tool_result, user

from dsh_memory_worker.memory.constants import DEFAULT_WITHDRAWAL_WHITELIST
from dsh_memory_worker.memory.withdrawal import (
    DEFAULT_WHITELIST,
    Marker,
    find_markers,
    withdrawn_loggable,
    withdrawn_ordinals,
    withdrawn_seqs,
)


def test_default_whitelist() -> None:
    assert DEFAULT_WITHDRAWAL_WHITELIST == ("dsh-rewind", "plugin:dsh-rewind", "plugin:rollback")
    assert frozenset(DEFAULT_WITHDRAWAL_WHITELIST) == DEFAULT_WHITELIST


def test_whitelisted_kinds_are_markers() -> None:
    for kind in DEFAULT_WITHDRAWAL_WHITELIST:
        found = find_markers([user(0, "a"), marker(1, [0], kind=kind)])
        assert found == [Marker(1, kind, frozenset({0}), 0, 0)]


def test_non_whitelisted_replacements_change_nothing() -> None:
    log = [user(0, "a"), assistant(1, "b")]
    for kind in (
        "compact-checkpoint",
        "system-prompt",
        "context-editor",
        "memory-manager",
        "plugin:@dsh-external/manual-context",
        "session-retry",
        "user",
        "plugin:x",
    ):
        assert find_markers([*log, marker(2, [0, 1], kind=kind)]) == []
        assert withdrawn_seqs([*log, marker(2, [0, 1], kind=kind)]) == frozenset()


def test_custom_whitelist() -> None:
    log = [user(0, "a"), marker(1, [0], kind="plugin:my-undo")]
    assert withdrawn_seqs(log) == frozenset()
    assert withdrawn_seqs(log, ["plugin:my-undo"]) == frozenset({0})


def test_empty_citation_list_is_ignored() -> None:
    assert find_markers([user(0, "a"), marker(1, [], start=0, end=0)]) == []


def test_append_with_whitelisted_kind_is_not_a_marker() -> None:
    restored = user(3, "again", kind="dsh-rewind", sources=[0])  # surfaceOp append
    assert find_markers([user(0, "a"), restored]) == []


def test_only_user_messages_carry_markers() -> None:
    pruned = tool_result(5, "c1", replace=(4, 4))
    assert find_markers([pruned]) == []


def test_compaction_start_after_end_is_not_a_withdrawal() -> None:
    checkpoint = marker(10, [7, 8, 3, 5], kind="compact-checkpoint", start=8, end=5)
    assert find_markers([checkpoint]) == []


def test_marker_with_reversed_endpoints_withdraws_its_cited_set() -> None:
    # a rewind across a surface whose order differs from seq order: endpoints 9 > 6
    found = find_markers([marker(12, [9, 2, 6], start=9, end=6)])
    assert found[0].withdrawn_seqs == frozenset({2, 6, 9})


def test_extra_earlier_citations_are_withdrawn() -> None:
    log = [user(0, "keep?"), user(1, "a"), assistant(2, "b"), marker(3, [0, 1, 2], start=1, end=2)]
    assert withdrawn_seqs(log) == frozenset({0, 1, 2})


def test_withdrawn_ordinals_and_loggable() -> None:
    log = [
        user(0, "a"),
        user(1, "ctx", kind="runtime-context"),
        assistant(2, "b"),
        user(3, "c"),
        marker(4, [1, 2, 3]),
    ]
    assert withdrawn_ordinals(log, {1, 2, 3}) == {2: 1, 3: 2}
    assert withdrawn_ordinals(log, set()) == {}
    assert withdrawn_loggable(log) == frozenset({2, 3})


def test_fork_child_never_withdraws_inherited_messages() -> None:
    log = [
        user(0, "parent"),
        assistant(1, "p"),
        other(2, "session/end-seed"),
        user(3, "child"),
        marker(4, [1, 3], start=1, end=3),
    ]
    assert withdrawn_ordinals(log, {1, 3}, inherited_cut=2) == {3: 0}
    assert withdrawn_loggable(log, inherited_cut=2) == frozenset({3})
