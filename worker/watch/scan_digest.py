"""What the watcher keeps of newly read events while it scans a log: consumed one event at a
time, so a scan holds one ordinal per event and nothing else of the log."""

from __future__ import annotations

import datetime as dt
from array import array
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from dsh_memory_worker.memory.dsh.events import Event, Header
from dsh_memory_worker.memory.dsh.forks import seed_complete
from dsh_memory_worker.memory.span import loggable_once
from dsh_memory_worker.memory.span_cut import SESSION_NODE_EVENTS, STEP_END, TURN_END
from dsh_memory_worker.memory.withdrawal import is_marker
from dsh_memory_worker.worker.state.sessions import SessionState

_MESSAGES = frozenset({"user/message", "assistant/message"})


@dataclass(slots=True)
class ScanDigest:
    """What the watcher keeps of newly read events, consumed one at a time (constant memory
    but for one ordinal per event): the message ordinal before each event (for checkpoints),
    the fork cut, the last ``turn/end``, a pending ``step/end``, the latest host summary and
    the last whitelisted withdrawal marker (its own trigger)."""

    ordinal: int
    cut: int
    fresh: bool
    #: Computes the ordinal at the stored durable end; called at the first new event only, so
    #: a log without new events (a restart over an unchanged home) is not decoded for it.
    pending: Callable[[], int] | None = None
    version: int | None = None
    first_seq: int | None = None
    ordinals: array[int] = field(default_factory=lambda: array("q"))
    count: int = 0
    last_turn_end: int | None = None
    step_end_after_turn: bool = False
    step_end_time: int | None = None
    title: Event | None = None
    #: the newest ``time`` (Unix ms) of a user or assistant message event read
    last_message_ms: int | None = None
    saw_node_event: bool = False
    whitelist: frozenset[str] = frozenset()
    last_marker: int | None = None
    #: how many ``session/end-seed {inherited: true}`` markers this scan read (V2+), and the
    #: time of the last one
    seed_marks: int = 0
    seed_mark_time: int | None = None

    @classmethod
    def start(
        cls, ordinal: Callable[[], int], state: SessionState | None, whitelist: Iterable[str] = ()
    ) -> ScanDigest:
        """``ordinal`` gives the message ordinal at ``state``'s durable end (when needed);
        ``whitelist``: the withdrawal marker kinds."""
        cut = state.inherited_cut if state is not None else 0
        return cls(
            ordinal=0, cut=cut, fresh=state is None, pending=ordinal, whitelist=frozenset(whitelist)
        )

    @property
    def resolved(self) -> bool:
        """Whether ``ordinal`` is known (an event was added, or none was owed)."""
        return self.pending is None

    def begin(self, header: Header) -> None:
        """Once the header is known; on first sight a V0/V1 fork's cut is in the header."""
        if self.version is None:
            self.version = header.version
            if self.fresh and header.version <= 1:
                self.cut = header.seed_length or 0

    def add(self, event: Event) -> None:
        if self.pending is not None:
            self.ordinal, self.pending = self.pending(), None
        if self.first_seq is None:
            self.first_seq = event.seq
        if (
            event.type == "session/end-seed"
            and (self.version or 0) >= 2
            and isinstance(event.data, Mapping)
            and event.data.get("inherited") is True
        ):
            self.cut, self.ordinal = event.seq, 0  # all before it was the parent's
            self.seed_marks, self.seed_mark_time = self.seed_marks + 1, event.time
        self.ordinals.append(self.ordinal)
        if event.seq >= self.cut and loggable_once(event):
            self.ordinal += 1
        if event.type in _MESSAGES and event.time is not None:
            self.last_message_ms = max(self.last_message_ms or event.time, event.time)
        if event.type == TURN_END:
            self.last_turn_end = event.seq
            self.step_end_after_turn, self.step_end_time = False, None
        elif event.type == STEP_END and not self.step_end_after_turn:
            self.step_end_after_turn, self.step_end_time = True, event.time
        if event.type in SESSION_NODE_EVENTS:
            self.saw_node_event = True
            if event.seq >= self.cut:
                self.title = event
        elif event.seq >= self.cut and is_marker(event, self.whitelist):
            self.last_marker = event.seq
        self.count += 1

    def seed_incomplete(self, header: Header) -> bool:
        """True while a V2+ seeded log read from its start shows no end of its own seed yet
        (:func:`memory.dsh.forks.seed_complete`): nothing of it is the child's for sure."""
        return self.fresh and not seed_complete(header, self.seed_marks, self.seed_mark_time)

    def covers(self, seq: int) -> bool:
        return self.first_seq is not None and 0 <= seq - self.first_seq < self.count

    def ordinal_at(self, seq: int) -> int:
        """The message ordinal before ``seq`` (0 inside a fork's inherited prefix)."""
        assert self.first_seq is not None
        return 0 if seq <= self.cut else self.ordinals[seq - self.first_seq]

    @property
    def last_message_at(self) -> dt.datetime | None:
        """:attr:`last_message_ms` as a time (``None``: none read, or a time no date holds)."""
        if self.last_message_ms is None:
            return None
        try:
            return dt.datetime.fromtimestamp(self.last_message_ms / 1000, dt.UTC)
        except (OverflowError, OSError, ValueError):
            return None
