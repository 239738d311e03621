"""Span cutting: where the next ``log_span`` ends, and what else a log tail owes.

Pure functions over the unlogged tail of a session's events, so the watcher (deciding whether
to enqueue) and the job itself (deciding what to write) reach the same answer from the same log.
The rules follow the reference plugin's triggers:

* ``turn/end`` cuts immediately, just after the ``turn/end``;
* a turn that runs long is cut at its latest ``step/end`` once the oldest unlogged ``step/end``
  is older than the flush window (default 120 s);
* a session with no growth for the idle time (default 10 min) is *idle-closed*: the whole
  durable tail is flushed and a consolidation is owed with its thresholds waived;
* a whitelisted withdrawal marker cuts just after itself: a withdrawal acts as soon as it is
  durable, not at the next turn end or idle-close (the span's retraction and repairs run then);
* a ``session/title`` or ``compaction/summary`` owes the session node (and a marker re-decides it:
  :mod:`memory.titles`);
* a fork child starts at its inherited cut: nothing below it is ever logged again.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final, Literal

from dsh_memory_worker.memory.dsh.events import Event
from dsh_memory_worker.memory.titles import HOST_SUMMARY_EVENTS

TURN_END: Final = "turn/end"
STEP_END: Final = "step/end"
#: Events whose text can become the session node (the first clean one: :mod:`memory.titles`).
SESSION_NODE_EVENTS: Final = HOST_SUMMARY_EVENTS

DEFAULT_FLUSH_WINDOW_MS: Final = 120_000
DEFAULT_IDLE_MS: Final = 600_000

CutReason = Literal["turn-end", "step-end", "idle", "withdrawal"]


@dataclass(frozen=True, slots=True)
class Timing:
    """The clock and thresholds a cut is judged by (all Unix milliseconds)."""

    now_ms: int
    last_growth_ms: int | None  # when the log last grew, as the watcher saw it
    flush_window_ms: int = DEFAULT_FLUSH_WINDOW_MS
    idle_ms: int = DEFAULT_IDLE_MS
    force_idle: bool = False  # `run --once`: every session is treated as idle

    @property
    def idle(self) -> bool:
        if self.force_idle:
            return True
        if self.last_growth_ms is None:
            return False
        return self.now_ms - self.last_growth_ms >= self.idle_ms


@dataclass(frozen=True, slots=True)
class Cut:
    """A span ``[start, to_seq)`` to log, and why it ends there."""

    start: int
    to_seq: int
    reason: CutReason

    @property
    def idle_close(self) -> bool:
        """An idle-close also owes a consolidation with thresholds waived."""
        return self.reason == "idle"


def span_start(logged_seq: int, inherited: int) -> int:
    """Where logging resumes: the watermark, clamped to a fork child's inherited cut."""
    return max(logged_seq, inherited)


def cut_span(
    tail: Iterable[Event],
    *,
    start: int,
    durable_end: int,
    timing: Timing,
    markers: Iterable[Event] = (),
) -> Cut | None:
    """The span to log now from the unlogged ``tail`` (events with ``start <= seq < durable_end``).

    ``markers`` are the whitelisted withdrawal markers of the tail (the caller applies the
    whitelist): the span reaches at least just past the last of them (reason ``withdrawal``
    when that is the furthest cut). ``None`` when nothing is owed yet: no turn ended, no marker,
    the step flush window has not passed and the session is not idle (or the tail is empty).
    """
    if durable_end <= start:
        return None
    if timing.idle:
        return Cut(start, durable_end, "idle")
    cut = _boundary_cut(tail, start=start, durable_end=durable_end, timing=timing)
    last_marker = max((e.seq for e in markers if start <= e.seq < durable_end), default=None)
    if last_marker is not None and (cut is None or cut.to_seq <= last_marker):
        return Cut(start, last_marker + 1, "withdrawal")
    return cut


def _boundary_cut(
    tail: Iterable[Event], *, start: int, durable_end: int, timing: Timing
) -> Cut | None:
    last_turn_end: int | None = None
    first_step_end_time: int | None = None  # oldest step/end after the last turn/end
    last_step_end: int | None = None
    for event in tail:
        if event.seq < start or event.seq >= durable_end:
            continue
        if event.type == TURN_END:
            last_turn_end = event.seq
            first_step_end_time = None
            last_step_end = None
        elif event.type == STEP_END:
            if last_step_end is None:
                first_step_end_time = _event_time(event, timing)
            last_step_end = event.seq
    if (
        last_step_end is not None
        and first_step_end_time is not None
        and timing.now_ms - first_step_end_time >= timing.flush_window_ms
    ):
        return Cut(start, last_step_end + 1, "step-end")
    if last_turn_end is not None:
        return Cut(start, last_turn_end + 1, "turn-end")
    return None


def owes_session_node(events: Iterable[Event], *, inherited: int = 0) -> bool:
    """True when the session's own events (not a fork's inherited prefix) carry a title or a
    compaction summary."""
    return any(e.type in SESSION_NODE_EVENTS and e.seq >= inherited for e in events)


def _event_time(event: Event, timing: Timing) -> int:
    # Normalised snapshot fixtures carry no time: the watcher's growth time stands in for it.
    if event.time is not None:
        return event.time
    if timing.last_growth_ms is not None:
        return timing.last_growth_ms
    return timing.now_ms
