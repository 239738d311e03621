"""The span a ``consolidate`` run summarises: its events with what markers withdraw
(:func:`read_span`), its transcript lines and budgeted transcript, and the tokens it holds
(:func:`pending_tokens`, what the turn-end gate weighs)."""

from __future__ import annotations

from dataclasses import dataclass

from dsh_memory_worker.memory.consolidation.transcript import (
    Transcript,
    TranscriptLine,
    fit_budget,
    transcript_lines,
)
from dsh_memory_worker.memory.content.caps import estimate_tokens
from dsh_memory_worker.memory.dsh.events import Event
from dsh_memory_worker.memory.withdrawal import is_marker, withdrawn_seqs
from dsh_memory_worker.worker.jobs.handoff import LogHandOff
from dsh_memory_worker.worker.jobs.logread import read_window, survey_log
from dsh_memory_worker.worker.jobs.runtime import Runtime
from dsh_memory_worker.worker.shipping.store import SegmentStore
from dsh_memory_worker.worker.state.sessions import SessionState


@dataclass(slots=True)
class SpanEvents:
    """A span's events ``[from_seq, to_seq)``, the event before it, the message ordinal at
    ``from_seq`` and every seq withdrawn by a marker up to the durable end."""

    events: list[Event]
    before: Event | None
    base_ordinal: int
    withdrawn: frozenset[int]


def read_span(
    session: SessionState,
    from_seq: int,
    to_seq: int,
    whitelist: list[str] | tuple[str, ...],
    hand_off: LogHandOff | None = None,
    *,
    segments: SegmentStore | None,
) -> SpanEvents:
    """Read ``[from_seq - 1, to_seq)`` — the span and its predecessor — and stream the rest of the
    log to its durable end for withdrawal markers only (a marker comes after what it withdraws,
    so one written long after the span still excludes its messages)."""
    window = read_window(session, max(0, from_seq - 1), to_seq, hand_off, segments=segments)
    events = window.tail(from_seq)
    markers = [e for e in events if is_marker(e, whitelist)]
    if session.durable_end_seq > to_seq:
        markers += survey_log(session, to_seq, whitelist, segments=segments).markers
    return SpanEvents(
        events=[e for e in events if e.seq < to_seq],
        before=window.event_at(from_seq - 1) if from_seq > 0 else None,
        base_ordinal=window.base_ordinal(from_seq),
        withdrawn=withdrawn_seqs(markers, whitelist),
    )


def span_lines(runtime: Runtime, session: SessionState, span: SpanEvents) -> list[TranscriptLine]:
    """Every transcript line of ``span`` (no budget): what its summary is written from."""
    return transcript_lines(
        span.events,
        withdrawn=span.withdrawn,
        inherited_cut=session.inherited_cut,
        before=span.before,
        now_ms=None,
        tz=runtime.timezone(),
    )


def span_transcript(runtime: Runtime, session: SessionState, span: SpanEvents) -> Transcript:
    return fit_budget(span_lines(runtime, session, span), runtime.settings.max_input_tokens)


def pending_tokens(
    runtime: Runtime, session: SessionState, span: SpanEvents, from_seq: int = 0
) -> int:
    """Estimated tokens (characters / 4) of the span's non-withdrawn human and assistant text at
    or after ``from_seq``."""
    lines = span_lines(runtime, session, span)
    return sum(
        estimate_tokens(line.text[3:])
        for line in lines
        if line.seq >= from_seq and line.text.startswith(("U: ", "A: "))
    )


__all__ = ["SpanEvents", "pending_tokens", "read_span", "span_lines", "span_transcript"]
