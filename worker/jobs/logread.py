"""Reading a session's log for a job: from the nearest checkpoint to the durable end.

The sessions table keeps a sparse index of ``(seq, byte offset, message ordinal)`` checkpoints,
so a job decodes only from the checkpoint at or before the seq it needs and knows the ordinal
there without counting the prefix: span cost is O(span), not O(log).

:func:`read_window` reads a range (taking the runtime's hand-off of an unchanged whole log,
:mod:`worker.jobs.handoff`), :func:`survey_log` streams a long one keeping only cuts and markers,
:func:`extend_back` reaches further back. :func:`read_span` is ``log_span``'s read step in one
call: the survey, the cut under a given clock, what the span's markers withdraw, the slices and
the first slice's window with its ordinal (:class:`SpanRead`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from dsh_memory_worker.memory.dsh.events import Event, Problem
from dsh_memory_worker.memory.dsh.position import CheckpointIndex, ScanPosition
from dsh_memory_worker.memory.dsh.reader import Log, iter_log, read_range
from dsh_memory_worker.memory.messages import base_ordinal, message_ordinals
from dsh_memory_worker.memory.span_cut import Cut, Timing, cut_span, span_start
from dsh_memory_worker.memory.withdrawal import find_markers, is_marker
from dsh_memory_worker.worker.jobs.errors import PermanentJobError as PermanentJobError
from dsh_memory_worker.worker.jobs.errors import TransientJobError as TransientJobError
from dsh_memory_worker.worker.jobs.handoff import LogHandOff, file_identity
from dsh_memory_worker.worker.shipping.source import shipped_source
from dsh_memory_worker.worker.shipping.store import SegmentStore
from dsh_memory_worker.worker.state.sessions import Checkpoint, SessionState

#: Read "to the end of the log".
END: int = 1 << 62
_FATAL = frozenset({"corrupt", "unsupported"})
_BOUNDARIES = frozenset({"turn/end", "step/end"})
#: Where a log with no checkpoint at or before a seq is read from.
_ORIGIN = Checkpoint(0, 0, 0)


def log_source(state: SessionState, segments: SegmentStore | None) -> Log:
    """Where a job reads ``state``'s log: the file at ``state.path`` (embedded mode, ``segments``
    None), or with log shipping the shipped generation ``state.generation`` from the segment
    store (the DSH home is never touched). Not shipped yet → :class:`TransientJobError`."""
    if segments is None:
        return Path(state.path)
    shipped = segments.get(state.session_id, state.generation)
    if shipped is None:
        raise TransientJobError(
            f"session {state.session_id}: generation {state.generation} is not shipped"
        )
    return shipped_source(segments, shipped)


def checkpoint_index(state: SessionState) -> CheckpointIndex:
    """The reader's index from the stored checkpoints."""
    index = CheckpointIndex()
    for point in state.checkpoints:
        index.add(point.seq, point.offset)
    return index


@dataclass(slots=True)
class LogWindow:
    """Events ``[first_seq, durable_end)`` of one log, with the message ordinal at ``first_seq``
    (the count of loggable messages in ``[inherited, first_seq)``)."""

    events: list[Event]
    first_seq: int
    first_ordinal: int
    inherited: int
    durable_end: int
    problems: list[Problem]

    def base_ordinal(self, at_seq: int) -> int:
        """The ordinal of the first loggable message at or after ``at_seq``."""
        return base_ordinal(
            self.events,
            at_seq,
            inherited_cut=self.inherited,
            checkpoint=(self.first_seq, self.first_ordinal),
        )

    def ordinals_before(self, seq: int) -> dict[int, int]:
        """seq → ordinal for every loggable message in ``[first_seq, seq)``."""
        before = [e for e in self.events if e.seq < seq]
        start = self.first_ordinal if self.first_seq >= self.inherited else 0
        return message_ordinals(before, self.inherited, start=start)

    def event_at(self, seq: int) -> Event | None:
        offset = seq - self.first_seq
        if 0 <= offset < len(self.events) and self.events[offset].seq == seq:
            return self.events[offset]
        for event in self.events:
            if event.seq == seq:
                return event
        return None

    def tail(self, from_seq: int) -> list[Event]:
        return [e for e in self.events if e.seq >= from_seq]


def read_window(
    state: SessionState,
    from_seq: int,
    to_seq: int = END,
    hand_off: LogHandOff | None = None,
    *,
    segments: SegmentStore | None,
) -> LogWindow:
    """Read ``state``'s log from the checkpoint at or before ``from_seq`` up to ``to_seq`` (by
    default its durable end). With a ``hand_off`` (the runtime's), a whole-log read takes the
    decode it holds of the unchanged file instead of reading, and leaves its own there for the
    next job.

    A corrupt or unsupported log raises :class:`PermanentJobError`; a log that cannot be read
    (gone, permissions) raises :class:`TransientJobError`. A torn tail is simply not returned.
    With ``segments`` (log shipping) the shipped bytes are read and nothing is handed off.
    """
    if segments is not None:
        hand_off = None  # the hand-off compares file identities: no file here
    log = log_source(state, segments)
    point = state.checkpoint_at_or_before(from_seq) or _ORIGIN
    index = checkpoint_index(state)
    whole = hand_off is not None and point.seq == 0 and to_seq == END
    # Any read takes (and so forgets) the kept decode: never two decodes held at once.
    handed = hand_off.take_kept(state.path) if hand_off is not None else None
    before = file_identity(state.path) if whole and handed is None else None
    problems: list[Problem] = []
    if hand_off is not None and whole and handed is not None:
        # The watcher (embedded mode) or the previous job decoded exactly this unchanged file.
        hand_off.remember(state.path, handed[0], handed[1])  # still there for the session node
        events = handed[1]
    else:
        result = read_range(log, point.seq, to_seq, index)
        raise_for_problems(state, result.problems)
        if result.events and result.events[0].seq != point.seq:
            # The index no longer matches the file (replaced or rewritten): count from the start.
            point = _ORIGIN
            result = read_range(log, 0, to_seq, CheckpointIndex())
        events, problems = result.events, result.problems
        if hand_off is not None and before is not None and not problems:
            hand_off.remember(state.path, before, events)
    end = events[-1].seq + 1 if events else point.seq
    ordinal = point.ordinal if point.seq >= state.inherited_cut else 0
    return LogWindow(events, point.seq, ordinal, state.inherited_cut, end, problems)


def raise_for_problems(state: SessionState, problems: list[Problem]) -> None:
    """Corrupt / unsupported → :class:`PermanentJobError`; unreadable → transient."""
    fatal = [p for p in problems if p.kind in _FATAL]
    if fatal:
        raise PermanentJobError(f"{state.path}: {fatal[0]}")
    io = [p for p in problems if p.kind == "io"]
    if io:
        raise TransientJobError(str(io[0]))


@dataclass(slots=True)
class Survey:
    """What cutting and withdrawal need from ``[start, durable end)``: the ``turn/end`` /
    ``step/end`` events and the withdrawal markers (a few per thousand events), not the rest."""

    boundaries: list[Event]
    markers: list[Event]
    durable_end: int

    @classmethod
    def of(cls, events: list[Event], durable_end: int, whitelist: Iterable[str]) -> Survey:
        allowed = frozenset(whitelist)
        return cls(
            [e for e in events if e.type in _BOUNDARIES],
            [e for e in events if is_marker(e, allowed)],
            durable_end,
        )


def survey_log(
    state: SessionState, start: int, whitelist: Iterable[str], *, segments: SegmentStore | None
) -> Survey:
    """Stream ``[start, durable end)`` once in constant memory, keeping only what a
    :class:`Survey` holds (for spans too large to hold in memory at once)."""
    allowed = frozenset(whitelist)
    point = state.checkpoint_at_or_before(start) or _ORIGIN
    position = ScanPosition(point.offset, max(start, point.seq), point.seq)
    scan, events = iter_log(log_source(state, segments), position)
    boundaries: list[Event] = []
    markers: list[Event] = []
    end = start
    for event in events:
        end = event.seq + 1
        if event.type in _BOUNDARIES:
            boundaries.append(event)
        elif is_marker(event, allowed):
            markers.append(event)
    raise_for_problems(state, scan.problems)
    return Survey(boundaries, markers, end)


def slice_span(
    boundaries: list[Event], start: int, to_seq: int, limit: int
) -> list[tuple[int, int]]:
    """Split ``[start, to_seq)`` into pieces of at most ``limit`` events that end just after a
    ``turn/end`` or ``step/end`` (a single longer turn/step stays whole)."""
    points = [e.seq + 1 for e in boundaries if start < e.seq + 1 < to_seq]
    slices: list[tuple[int, int]] = []
    lower = start
    i = 0
    while to_seq - lower > limit and i < len(points):
        best = None
        while i < len(points) and points[i] - lower <= limit:
            best = points[i]
            i += 1
        if best is None:
            best = points[i]
            i += 1
        slices.append((lower, best))
        lower = best
    slices.append((lower, to_seq))
    return slices


def extend_back(
    state: SessionState, window: LogWindow, to_seq: int, *, segments: SegmentStore | None
) -> LogWindow:
    """``window`` extended backwards so it starts at or before ``to_seq`` (for retractions of
    messages written long ago)."""
    if to_seq >= window.first_seq:
        return window
    log = log_source(state, segments)
    index = checkpoint_index(state)
    point = state.checkpoint_at_or_before(to_seq) or _ORIGIN
    result = read_range(log, point.seq, window.first_seq, index)
    raise_for_problems(state, result.problems)
    ordinal = point.ordinal if point.seq >= state.inherited_cut else 0
    return LogWindow(
        result.events + window.events,
        point.seq,
        ordinal,
        window.inherited,
        window.durable_end,
        window.problems,
    )


# ---- what one ``log_span`` run reads, in one call ---------------------------------------------


@dataclass(slots=True)
class SpanPiece:
    """One slice ``[lower, upper)`` of a span and the window its plan is made from."""

    lower: int
    upper: int
    window: LogWindow
    #: seq → ordinal of the messages before the span, in the first slice when a marker of this
    #: span withdrew some of them (``None`` otherwise)
    prefix_ordinals: dict[int, int] | None = None

    @property
    def before(self) -> Event | None:
        """The event just before the slice (``None`` at the start of the log)."""
        return self.window.event_at(self.lower - 1) if self.lower > 0 else None


@dataclass(slots=True)
class SpanRead:
    """What one ``log_span`` run needs from the log: the survey of ``[start, durable end)``, the
    cut (``None``: no span is due), the withdrawn seqs with the ``(marker seq, kind)`` that
    withdrew each, the slices of the span and the ordinal of its first message. The first slice
    is read already (extended back to the oldest message a marker withdrew before ``start``);
    :meth:`pieces` reads each later one when it is reached, so memory stays bounded."""

    start: int
    survey: Survey
    cut: Cut | None
    withdrawn: dict[int, tuple[int, str]]
    slices: list[tuple[int, int]]
    base_ordinal: int
    first: SpanPiece | None
    state: SessionState
    hand_off: LogHandOff | None
    segments: SegmentStore | None

    @property
    def withdrew_earlier(self) -> bool:
        """True when a marker of this span withdrew a message logged by an earlier span."""
        return any(seq < self.start for seq in self.withdrawn)

    def pieces(self) -> Iterator[SpanPiece]:
        """The slices in order, each with its window (the first one is handed over, not kept)."""
        first, self.first = self.first, None
        for lower, upper in self.slices:
            if first is not None:
                piece, first = first, None
            else:
                piece = SpanPiece(
                    lower,
                    upper,
                    read_window(
                        self.state, lower - 1, upper, self.hand_off, segments=self.segments
                    ),
                )
            yield piece


def read_span(
    state: SessionState,
    logged_to: int,
    clock: Timing,
    *,
    whitelist: Iterable[str],
    limit: int,
    hand_off: LogHandOff | None,
    segments: SegmentStore | None,
) -> SpanRead:
    """Read what ``log_span`` owes after the watermark ``logged_to``, in one call: survey
    ``[start, durable end)`` (the whole window when it holds at most ``limit`` events, else one
    streaming pass that keeps only cuts and markers), cut the span under ``clock``, find what its
    markers withdraw, slice it at step or turn ends into pieces of at most ``limit`` events and
    read the first slice from its checkpoint (with the ordinal there)."""
    start = span_start(logged_to, state.inherited_cut)
    window: LogWindow | None = None
    if state.durable_end_seq - start > limit:
        survey = survey_log(state, start, whitelist, segments=segments)
    else:
        window = read_window(state, start, hand_off=hand_off, segments=segments)
        survey = Survey.of(window.tail(start), window.durable_end, whitelist)
    cut = cut_span(
        survey.boundaries,
        start=start,
        durable_end=survey.durable_end,
        timing=clock,
        markers=survey.markers,
    )
    if cut is None:
        return SpanRead(start, survey, None, {}, [], 0, None, state, hand_off, segments)
    withdrawn: dict[int, tuple[int, str]] = {}
    for marker in find_markers(survey.markers, whitelist):
        for seq in marker.withdrawn_seqs:
            withdrawn.setdefault(seq, (marker.seq, marker.kind))
    slices = slice_span(survey.boundaries, start, cut.to_seq, limit)
    if window is None:
        window = read_window(state, start, slices[0][1], hand_off, segments=segments)
    earlier = [seq for seq in withdrawn if seq < start]
    if earlier:
        window = extend_back(state, window, min(earlier), segments=segments)
    first = SpanPiece(
        start, slices[0][1], window, window.ordinals_before(start) if earlier else None
    )
    return SpanRead(
        start,
        survey,
        cut,
        withdrawn,
        slices,
        window.base_ordinal(start),
        first,
        state,
        hand_off,
        segments,
    )
