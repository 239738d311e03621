"""A span summary links exactly the covered, non-withdrawn messages, by their log ordinals."""

from __future__ import annotations

from eventkit import assistant, chunk, marker, tool_call, tool_result, user

from dsh_memory_worker.memory.consolidation.members import summary_member_names
from dsh_memory_worker.memory.withdrawal import withdrawn_seqs


def test_only_the_covered_part_is_linked() -> None:
    events = [user(4, "a"), chunk(5), assistant(6, "b"), user(7, "c"), assistant(9, "d")]
    names = summary_member_names(events, "s1", from_seq=4, covered_to_seq=8, base_ordinal=0)
    assert names == ["msg-s1-0", "msg-s1-1", "msg-s1-2"]


def test_withdrawn_messages_keep_their_ordinal_but_get_no_edge() -> None:
    span = [
        user(10, "q"),
        assistant(11, "a"),
        user(12, "taken back"),
        tool_call(13, "c", "bash"),
        tool_result(14, "c"),
        assistant(15, "taken back too"),
        user(16, "kept"),
    ]
    withdrawn = withdrawn_seqs([*span, marker(20, [12, 13, 14, 15])])
    names = summary_member_names(
        span, "s2", from_seq=10, covered_to_seq=17, base_ordinal=5, withdrawn=withdrawn
    )
    assert names == ["msg-s2-5", "msg-s2-6", "msg-s2-9"]


def test_nothing_from_a_fork_prefix_is_linked() -> None:
    events = [user(1, "parent"), assistant(2, "parent"), user(4, "child"), assistant(5, "child")]
    names = summary_member_names(
        events, "f", from_seq=0, covered_to_seq=7, base_ordinal=0, inherited_cut=4
    )
    assert names == ["msg-f-0", "msg-f-1"]
