"""Span cutting follows the reference's triggers: turn/end immediately, step/end after the flush
window, idle-close flushes the tail, a title owes the node, a fork starts at its inherited cut."""

from __future__ import annotations

from dsh_memory_worker.memory.dsh.events import Event
from dsh_memory_worker.memory.span_cut import Cut, Timing, cut_span, owes_session_node, span_start

NOW = 1_800_000_000_000


def ev(seq: int, type_: str, time: int | None = NOW - 1_000) -> Event:
    return Event(seq=seq, type=type_, time=time, data={})


def turn(seq: int, *, steps: int = 1, time: int = NOW - 1_000) -> list[Event]:
    """turn/start, then per step: step/start, message, step/end; then turn/end."""
    out = [ev(seq, "turn/start", time)]
    for _ in range(steps):
        base = out[-1].seq + 1
        out += [
            ev(base, "step/start", time),
            ev(base + 1, "assistant/message", time),
            ev(base + 2, "step/end", time),
        ]
    out.append(ev(out[-1].seq + 1, "turn/end", time))
    return out


def timing(**kw: object) -> Timing:
    values: dict[str, object] = {"now_ms": NOW, "last_growth_ms": NOW - 1_000}
    values.update(kw)
    return Timing(**values)  # type: ignore[arg-type]


def test_turn_end_cuts_just_after_it() -> None:
    events = [*turn(0), ev(5, "turn/start"), ev(6, "user/message")]
    assert cut_span(events, start=0, durable_end=7, timing=timing()) == Cut(0, 5, "turn-end")


def test_nothing_is_cut_inside_a_young_turn() -> None:
    events = [ev(0, "turn/start"), ev(1, "step/start"), ev(2, "user/message"), ev(3, "step/end")]
    assert cut_span(events, start=0, durable_end=4, timing=timing()) is None


def test_a_long_turn_is_cut_at_its_last_step_end_after_the_flush_window() -> None:
    old = NOW - 121_000
    events = [
        ev(0, "turn/start", old),
        ev(1, "step/start", old),
        ev(2, "user/message", old),
        ev(3, "step/end", old),
        ev(4, "step/start"),
        ev(5, "assistant/message"),
        ev(6, "step/end"),
        ev(7, "step/start"),
    ]
    assert cut_span(events, start=0, durable_end=8, timing=timing()) == Cut(0, 7, "step-end")
    # Within the window (the oldest unlogged step/end decides; the window is not extended).
    young = timing(now_ms=old + 119_000)
    assert cut_span(events, start=0, durable_end=8, timing=young) is None


def test_step_ends_of_finished_turns_do_not_start_a_window() -> None:
    old = NOW - 500_000
    events = [*turn(0, steps=2, time=old), ev(8, "turn/start"), ev(9, "step/start")]
    assert cut_span(events, start=0, durable_end=10, timing=timing()) == Cut(0, 8, "turn-end")


def test_idle_close_flushes_the_whole_tail() -> None:
    events = [*turn(0), ev(5, "turn/start"), ev(6, "user/message")]
    idle = timing(last_growth_ms=NOW - 600_000)
    cut = cut_span(events, start=0, durable_end=7, timing=idle)
    assert cut == Cut(0, 7, "idle") and cut.idle_close
    forced = timing(force_idle=True)
    assert cut_span(events, start=5, durable_end=7, timing=forced) == Cut(5, 7, "idle")


def test_nothing_owed_past_the_watermark() -> None:
    events = turn(0)
    assert cut_span(events, start=5, durable_end=5, timing=timing(force_idle=True)) is None
    # events below the watermark are not looked at
    assert cut_span(events, start=5, durable_end=6, timing=timing()) is None


def test_fork_children_start_at_their_inherited_cut() -> None:
    assert span_start(0, 42) == 42
    assert span_start(50, 42) == 50


def test_a_title_or_compaction_summary_owes_the_node_except_in_a_fork_prefix() -> None:
    assert owes_session_node([ev(3, "session/title")])
    assert owes_session_node([ev(9, "compaction/summary")])
    assert not owes_session_node([ev(3, "session/title")], inherited=42)
    assert not owes_session_node([ev(3, "turn/end")])


def test_events_without_time_use_the_growth_time() -> None:
    events = [ev(0, "turn/start", None), ev(1, "step/end", None), ev(2, "step/start", None)]
    stale = timing(last_growth_ms=NOW - 130_000, idle_ms=10**9)
    assert cut_span(events, start=0, durable_end=3, timing=stale) == Cut(0, 2, "step-end")
    fresh = timing(last_growth_ms=NOW - 10_000)
    assert cut_span(events, start=0, durable_end=3, timing=fresh) is None


def test_a_withdrawal_marker_past_the_last_turn_end_cuts_just_after_itself() -> None:
    # A dsh-rewind appended while idle, after the last turn/end: its own trigger.
    events = [*turn(0), ev(5, "user/message")]
    markers = [events[-1]]
    assert cut_span(events, start=5, durable_end=6, timing=timing()) is None
    assert cut_span(events, start=5, durable_end=6, timing=timing(), markers=markers) == Cut(
        5, 6, "withdrawal"
    )
    # Inside an unfinished span the furthest boundary wins: a later turn/end keeps its reason.
    later = [*turn(0), ev(5, "user/message"), *turn(6)]
    assert cut_span(later, start=0, durable_end=11, timing=timing(), markers=[later[5]]) == Cut(
        0, 11, "turn-end"
    )
    # A marker beyond the durable end (or before the start) does not cut.
    assert cut_span(events, start=0, durable_end=5, timing=timing(), markers=markers) == Cut(
        0, 5, "turn-end"
    )
    # Idle still flushes the whole tail.
    assert cut_span(
        events, start=5, durable_end=6, timing=timing(force_idle=True), markers=markers
    ) == Cut(5, 6, "idle")
