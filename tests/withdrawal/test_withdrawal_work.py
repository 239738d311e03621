"""The skip-vs-retract decision of one log span (seed 001 ``withdrawalWork``)."""

from __future__ import annotations

from eventkit import assistant, marker, other, user

from dsh_memory_worker.memory.messages import message_ordinals
from dsh_memory_worker.memory.withdrawal import withdrawal_work

LOG = [
    user(0, "first"),  # ordinal 0
    assistant(1, "reply"),  # ordinal 1
    other(2, "turn/end"),
    user(3, "second"),  # ordinal 2
    assistant(4, "reply 2"),  # ordinal 3
    other(5, "turn/end"),
    marker(6, [3, 4]),
    user(7, "third"),  # ordinal 4
]


def test_marker_past_the_span_end_still_withdraws_inside_the_span() -> None:
    work = withdrawal_work(3, 6, LOG[3:], ordinal_of=message_ordinals(LOG[:3]))
    assert work.skip == frozenset({3, 4})
    assert work.retract == {}
    assert work.marker_of[3].seq == 6


def test_withdrawn_before_the_span_is_retracted_by_ordinal() -> None:
    work = withdrawal_work(6, 8, LOG[6:], ordinal_of=message_ordinals(LOG[:6]))
    assert work.skip == frozenset()
    assert work.retract == {3: 2, 4: 3}


def test_mixed_skip_and_retract_with_a_callable_lookup() -> None:
    ordinals = message_ordinals(LOG)
    work = withdrawal_work(4, 8, LOG[4:], ordinal_of=ordinals.get)
    assert work.skip == frozenset({4})
    assert work.retract == {3: 2}


def test_extra_earlier_citation_is_retracted() -> None:
    log = [*LOG, marker(8, [0, 7], start=7, end=7)]
    work = withdrawal_work(7, 9, log[7:], ordinal_of=message_ordinals(log[:7]))
    assert work.skip == frozenset({7})
    assert work.retract == {0: 0}


def test_non_loggable_cited_seqs_are_never_retracted() -> None:
    log = [user(0, "a"), user(1, "ctx", kind="runtime-context"), marker(2, [0, 1])]
    work = withdrawal_work(2, 3, log[2:], ordinal_of=message_ordinals(log[:2]))
    assert work.retract == {0: 0}


def test_no_markers_means_no_work() -> None:
    work = withdrawal_work(0, 6, LOG[:6], ordinal_of={})
    assert work.skip == frozenset() and work.retract == {} and work.marker_of == {}


def test_marker_before_the_window_is_not_seen_again() -> None:
    work = withdrawal_work(7, 8, LOG[7:], ordinal_of=message_ordinals(LOG[:7]))
    assert work.retract == {} and work.skip == frozenset()


def test_fork_child_does_not_retract_inherited_messages() -> None:
    log = [
        user(0, "parent"),
        other(1, "session/end-seed"),
        user(2, "child"),
        marker(3, [0, 2], start=0, end=2),
    ]
    ordinals = message_ordinals(log[:3], inherited_cut=1)
    work = withdrawal_work(3, 4, log[3:], ordinal_of=ordinals)
    assert work.retract == {2: 0}
