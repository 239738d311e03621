"""What a whole session log says about withdrawals: every marker, every withdrawn message entry
name, and the events a repaired summary is rebuilt from.

Repair, the operator's ``retract`` run and ``forget`` read the whole log (from its start, or the
nearest checkpoint before a fork's inherited cut) once, so markers the watermark passed long ago
are seen again. The decision itself is :mod:`memory.withdrawal`'s; this module only collects it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from dsh_memory_worker.memory.dsh.events import Event
from dsh_memory_worker.memory.entries import message_name
from dsh_memory_worker.memory.messages import message_ordinals
from dsh_memory_worker.memory.withdrawal import Marker, find_markers
from dsh_memory_worker.worker.jobs.handoff import LogHandOff
from dsh_memory_worker.worker.jobs.logread import read_window
from dsh_memory_worker.worker.shipping.store import SegmentStore
from dsh_memory_worker.worker.state.sessions import SessionState


@dataclass(frozen=True, slots=True)
class Withdrawn:
    """One withdrawn message entry and the first marker that withdrew it."""

    name: str
    seq: int
    ordinal: int
    marker_seq: int
    kind: str


@dataclass(slots=True)
class SessionLog:
    """A session's whole log as repair needs it."""

    state: SessionState
    events: list[Event]
    #: loggable seq (at or after the inherited cut) → its entry ordinal
    ordinals: dict[int, int]
    markers: list[Marker]
    #: every seq any marker cites (what a transcript leaves out)
    cited: frozenset[int]
    #: loggable withdrawn seq → its entry
    withdrawn: dict[int, Withdrawn]

    @property
    def session_id(self) -> str:
        return self.state.session_id

    @property
    def project(self) -> str:
        return self.state.project

    def withdrawn_by_name(self) -> dict[str, Withdrawn]:
        return {w.name: w for w in self.withdrawn.values()}

    def events_in(self, from_seq: int, to_seq: int) -> list[Event]:
        return [e for e in self.events if from_seq <= e.seq < to_seq]

    def event_at(self, seq: int) -> Event | None:
        for event in self.events:
            if event.seq == seq:
                return event
        return None

    def kept_names(self, from_seq: int, to_seq: int) -> list[str]:
        """The message entries of ``[from_seq, to_seq)`` that are not withdrawn, in log order."""
        return [
            message_name(self.session_id, ordinal)
            for seq, ordinal in self.ordinals.items()
            if from_seq <= seq < to_seq and seq not in self.withdrawn
        ]


def read_session_log(
    state: SessionState,
    kinds: Iterable[str],
    hand_off: LogHandOff | None = None,
    *,
    segments: SegmentStore | None,
) -> SessionLog:
    """Read ``state``'s log from its start to the durable end and decide its withdrawals with the
    whitelist ``kinds``. Raises the log readers' job errors (permanent / transient)."""
    window = read_window(state, 0, hand_off=hand_off, segments=segments)
    events = window.events
    cut = state.inherited_cut
    ordinals = message_ordinals(events, cut)
    markers = [m for m in find_markers(events, kinds) if m.seq >= cut]
    first: dict[int, Marker] = {}
    for marker in markers:
        for seq in marker.withdrawn_seqs:
            first.setdefault(seq, marker)
    withdrawn = {
        seq: Withdrawn(
            message_name(state.session_id, ordinals[seq]),
            seq,
            ordinals[seq],
            marker.seq,
            marker.kind,
        )
        for seq, marker in sorted(first.items())
        if seq in ordinals
    }
    return SessionLog(
        state=state,
        events=events,
        ordinals=ordinals,
        markers=markers,
        cited=frozenset(first),
        withdrawn=withdrawn,
    )
