"""Withdrawal: which messages the user took back, and what a log span must do about them.

A *marker* is a ``user/message`` whose surface op is a replacement, whose normalised source kind
is on the whitelist, and which cites a non-empty set of seqs (``sourceEventSeqs``). Everything it
cites is withdrawn — the set, not the order, and not the ``[startSeq, endSeq]`` endpoints (those
are surface positions; after a compaction ``startSeq > endSeq`` is legal). Compaction
checkpoints, ``system-prompt`` rewrites, tool-result pruning, editor plugins, ``session-retry``
notes and memory-manager exclusions are not on the whitelist and change nothing. Content restored
later is appended as new events, which are new messages when loggable.

A marker's seq is greater than every seq it cites, so the caller's marker window must reach the
end of the log, not just the end of the span being written.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from dsh_memory_worker.memory.constants import DEFAULT_WITHDRAWAL_WHITELIST
from dsh_memory_worker.memory.dsh.events import Event, Replace
from dsh_memory_worker.memory.messages import is_loggable, source_kind

DEFAULT_WHITELIST: frozenset[str] = frozenset(DEFAULT_WITHDRAWAL_WHITELIST)

OrdinalLookup = Mapping[int, int] | Callable[[int], int | None]


@dataclass(frozen=True, slots=True)
class Marker:
    """One withdrawal marker: its own seq and kind, its replace endpoints (surface order, for
    display only) and the seqs it withdraws."""

    seq: int
    kind: str
    withdrawn_seqs: frozenset[int]
    start_seq: int
    end_seq: int


@dataclass(frozen=True, slots=True)
class WithdrawalWork:
    """What one log span must do: ``skip`` = withdrawn seqs inside ``[span_from, span_to)``
    (never written); ``retract`` = seq → ordinal for withdrawn loggable seqs before the span
    (written by an earlier span, to be deleted by name); ``marker_of`` = withdrawn seq → the
    first marker citing it."""

    skip: frozenset[int] = frozenset()
    retract: dict[int, int] = field(default_factory=dict)
    marker_of: dict[int, Marker] = field(default_factory=dict)


def is_marker(event: Event, whitelist: Iterable[str] = DEFAULT_WHITELIST) -> bool:
    """Whether ``event`` is a whitelisted withdrawal marker citing at least one seq."""
    return (
        event.type == "user/message"
        and isinstance(event.surface_op, Replace)
        and source_kind(event) in frozenset(whitelist)
        and any(seq >= 0 for seq in event.source_seqs)
    )


def find_markers(
    events: Iterable[Event], whitelist: Iterable[str] = DEFAULT_WHITELIST
) -> list[Marker]:
    """Every withdrawal marker in ``events``, in log order."""
    allowed = frozenset(whitelist)
    markers: list[Marker] = []
    for event in events:
        if not is_marker(event, allowed):
            continue
        op = event.surface_op
        assert isinstance(op, Replace)
        cited = frozenset(seq for seq in event.source_seqs if seq >= 0)
        markers.append(Marker(event.seq, source_kind(event), cited, op.start_seq, op.end_seq))
    return markers


#: The seed's name for the same list (one range per marker).
withdrawn_ranges = find_markers


def withdrawn_seqs(
    events: Iterable[Event], whitelist: Iterable[str] = DEFAULT_WHITELIST
) -> frozenset[int]:
    """Every seq cited by every marker in ``events``."""
    seqs: set[int] = set()
    for marker in find_markers(events, whitelist):
        seqs |= marker.withdrawn_seqs
    return frozenset(seqs)


def withdrawn_ordinals(
    events: Iterable[Event], seqs: Iterable[int], inherited_cut: int = 0, *, start: int = 0
) -> dict[int, int]:
    """seq → the ordinal its entry was named by, for each of ``seqs`` that is a loggable message
    at or after the inherited cut. ``events`` must begin at the cut (or at a checkpoint whose
    ordinal is ``start``) and reach the largest of ``seqs``. Other seqs never had an entry."""
    wanted = frozenset(seqs)
    result: dict[int, int] = {}
    if not wanted:
        return result
    ordinal = start
    for event in events:
        if event.seq < inherited_cut or not is_loggable(event):
            continue
        if event.seq in wanted:
            result[event.seq] = ordinal
        ordinal += 1
    return result


def _lookup(ordinal_of: OrdinalLookup, seq: int) -> int | None:
    if isinstance(ordinal_of, Mapping):
        return ordinal_of.get(seq)
    return ordinal_of(seq)


def withdrawal_work(
    span_from: int,
    span_to: int,
    window_events: Iterable[Event],
    whitelist: Iterable[str] = DEFAULT_WHITELIST,
    ordinal_of: OrdinalLookup | None = None,
) -> WithdrawalWork:
    """The withdrawal decision for the span ``[span_from, span_to)``.

    ``window_events`` is the marker window, ``[span_from, end of log)``. ``ordinal_of`` gives the
    ordinal of a loggable seq before the span (a mapping from :func:`message_ordinals` over the
    prefix, or a callable); seqs it does not know — not loggable, or in a fork's inherited
    prefix — are not retracted. Markers are seen wherever they sit in the window, including past
    the span's end.
    """
    markers = find_markers(window_events, whitelist)
    marker_of: dict[int, Marker] = {}
    for marker in markers:
        for seq in marker.withdrawn_seqs:
            marker_of.setdefault(seq, marker)
    skip = frozenset(seq for seq in marker_of if span_from <= seq < span_to)
    retract: dict[int, int] = {}
    if ordinal_of is not None:
        for seq in sorted(marker_of):
            if seq >= span_from:
                break
            ordinal = _lookup(ordinal_of, seq)
            if ordinal is not None:
                retract[seq] = ordinal
    return WithdrawalWork(skip=skip, retract=retract, marker_of=marker_of)


def withdrawn_loggable(
    events: Iterable[Event], whitelist: Iterable[str] = DEFAULT_WHITELIST, inherited_cut: int = 0
) -> frozenset[int]:
    """Seqs of loggable messages (at or after the cut) that some marker in ``events`` withdraws —
    what a transcript or a ``belongTo`` pass must leave out."""
    events = list(events)
    cited = withdrawn_seqs(events, whitelist)
    return frozenset(
        e.seq for e in events if e.seq in cited and e.seq >= inherited_cut and is_loggable(e)
    )
