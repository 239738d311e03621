"""The span plan's withdrawal decisions: skip inside the span, retract before it, keep names."""

from __future__ import annotations

from eventkit import assistant, marker, other, user

from dsh_memory_worker.memory.messages import base_ordinal, message_ordinals
from dsh_memory_worker.memory.span import RetractItem, plan_span

LOG = [
    user(0, "first"),  # msg-s-0
    assistant(1, "reply"),  # msg-s-1
    other(2, "turn/end"),
    user(3, "second"),  # msg-s-2
    assistant(4, "reply 2"),  # msg-s-3
    other(5, "turn/end"),
    marker(6, [3, 4]),
    user(7, "third"),  # msg-s-4
    assistant(8, "reply 3"),  # msg-s-5
]


def _plan(frm: int, to: int, log=LOG, cut: int = 0, **kw):  # type: ignore[no-untyped-def]
    prefix = [e for e in log if e.seq < frm]
    return plan_span(
        [e for e in log if frm <= e.seq < to],
        [e for e in log if e.seq >= frm],
        span_from=frm,
        span_to=to,
        session_id="s",
        project="demo",
        inherited_cut=cut,
        base_ordinal=base_ordinal(prefix, frm, inherited_cut=cut),
        prefix_ordinals=message_ordinals(prefix, cut),
        **kw,
    )


def test_in_span_withdrawn_messages_are_skipped_with_a_marker_past_the_span() -> None:
    plan = _plan(3, 6)
    assert [(i.name, i.withdrawn, i.markdown) for i in plan.items] == [
        ("msg-s-2", True, ""),
        ("msg-s-3", True, ""),
    ]
    assert plan.to_write == []
    assert [(i.marker_seq, i.marker_kind) for i in plan.items] == [(6, "dsh-rewind")] * 2
    assert plan.retract == []
    assert plan.skip_ordinals == frozenset({2, 3})
    assert plan.next_ordinal == 4


def test_withdrawn_messages_written_earlier_are_retracted() -> None:
    plan = _plan(6, 9)
    assert plan.retract == [
        RetractItem(2, 3, "msg-s-2", 6, "dsh-rewind"),
        RetractItem(3, 4, "msg-s-3", 6, "dsh-rewind"),
    ]
    assert [(i.name, i.withdrawn) for i in plan.items] == [("msg-s-4", False), ("msg-s-5", False)]
    assert [(i.marker_seq, i.marker_kind) for i in plan.items] == [(None, "")] * 2
    assert plan.skip_ordinals == frozenset({2, 3})


def test_names_after_a_withdrawal_do_not_move() -> None:
    whole = _plan(0, 9)
    assert [(i.seq, i.name, i.withdrawn) for i in whole.items] == [
        (0, "msg-s-0", False),
        (1, "msg-s-1", False),
        (3, "msg-s-2", True),
        (4, "msg-s-3", True),
        (7, "msg-s-4", False),
        (8, "msg-s-5", False),
    ]


def test_span_straddling_the_withdrawal_skips_and_retracts() -> None:
    plan = _plan(4, 9)
    assert [(i.name, i.withdrawn) for i in plan.items] == [
        ("msg-s-3", True),
        ("msg-s-4", False),
        ("msg-s-5", False),
    ]
    assert [(r.seq, r.name) for r in plan.retract] == [(3, "msg-s-2")]


def test_non_whitelisted_replacement_changes_nothing() -> None:
    log = [*LOG[:6], marker(6, [3, 4], kind="compact-checkpoint"), *LOG[7:]]
    assert all(not i.withdrawn for i in _plan(0, 9, log).items)
    assert _plan(6, 9, log).retract == []
    assert _plan(0, 9, log, whitelist=["compact-checkpoint"]).skip_ordinals == frozenset({2, 3})


def test_fork_child_never_counts_or_withdraws_inherited_messages() -> None:
    log = [
        user(0, "parent a"),
        assistant(1, "parent b"),
        other(2, "session/end-seed"),
        user(3, "child a"),
        assistant(4, "child b"),
        marker(5, [1, 3, 4], start=1, end=4),
        user(6, "child c"),
    ]
    plan = _plan(0, 7, log, cut=2)
    assert [(i.seq, i.name, i.withdrawn) for i in plan.items] == [
        (3, "msg-s-0", True),
        (4, "msg-s-1", True),
        (6, "msg-s-2", False),
    ]
    later = _plan(5, 7, log, cut=2)
    assert [(r.seq, r.name) for r in later.retract] == [(3, "msg-s-0"), (4, "msg-s-1")]


def test_restored_content_is_a_new_message() -> None:
    restored = user(9, "second", sources=[3])  # appended again at the tail, kind user
    plan = _plan(9, 10, [*LOG, restored])
    assert [(i.name, i.withdrawn) for i in plan.items] == [("msg-s-6", False)]
    replay = user(10, "(replayed assistant reply)", kind="plugin:message-tools", sources=[4])
    assert _plan(10, 11, [*LOG, restored, replay]).items == []


def test_empty_citation_list_is_ignored() -> None:
    log = [*LOG[:6], marker(6, [], start=3, end=4), *LOG[7:]]
    assert _plan(0, 9, log).skip_ordinals == frozenset()
