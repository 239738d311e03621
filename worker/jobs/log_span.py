"""``log_span``: write the message entries of one span, honour withdrawals, advance the watermark.

Steps (process-then-advance): read ``[from, end)`` from the nearest checkpoint — the span and the
marker window that must reach the durable end; cut the span (turn end, step flush window, idle
close); let :func:`memory.span.plan_span` decide every entry; write the entries get-before-create
(withdrawn ones are never written, and deleted if an earlier run wrote them); retract earlier
entries a new marker withdrew, recording each retraction; settle the owed ``belongTo`` edges
(skipping withdrawn ordinals); then advance ``last_logged_seq`` and ``last_belong_to_index`` with
one conditional update. A crash anywhere before the advance re-does the writes idempotently.
"""

from __future__ import annotations

import zoneinfo
from dataclasses import asdict

from memory import entries
from memory.constants import REL_BELONG_TO
from memory.entries import MESSAGE_POLICY, scopes_for
from memory.span import SpanOptions, SpanPlan, plan_span
from memory.span_cut import Timing, cut_span, span_start
from memory.store.base import (
    BatchWriter,
    EntryWrite,
    MemoryStore,
    write_batch,
)
from memory.withdrawal import find_markers
from worker.jobs import store_writes
from worker.jobs.context import Counts, JobContext, JobOutput, skipped
from worker.jobs.logread import (
    LogWindow,
    Survey,
    TransientJobError,
    extend_back,
    read_window,
    slice_span,
    survey_log,
)
from worker.jobs.retract import repair_after_log_span
from worker.jobs.runtime import ConsolidationOwed, ms_of
from worker.jobs.store_writes import existing_names, settle_edges
from worker.names import JOB_CONSOLIDATE
from worker.settings import Settings


def span_options(ctx: JobContext) -> SpanOptions:
    return span_options_for(ctx.runtime.settings)


def span_options_for(s: Settings) -> SpanOptions:
    """The content policy of ``msg-*`` entries under settings ``s``."""
    return SpanOptions(
        max_assistant_chars=s.max_assistant_chars,
        max_user_chars=s.max_user_chars,
        tool_ledger=s.tool_ledger,
        tz=zoneinfo.ZoneInfo(s.timezone) if s.timezone else None,
        # An event without a time (only normalised fixtures) keeps relative dates as written,
        # so an entry's text never depends on when the worker ran.
        now_ms=None,
    )


def timing(ctx: JobContext, last_activity_ms: int | None) -> Timing:
    s = ctx.runtime.settings
    return Timing(
        now_ms=ctx.runtime.now_ms(),
        last_growth_ms=last_activity_ms,
        flush_window_ms=int(s.flush_window_s * 1000),
        idle_ms=int(s.idle_close_s * 1000),
        force_idle=ctx.runtime.force_idle,
    )


def log_span(ctx: JobContext) -> JobOutput:
    """Log the span a session owes now (nothing when no cut is due).

    A span longer than ``Runtime.max_span_events`` is surveyed in one streaming pass (cuts and
    markers only) and then written in slices that end at step or turn boundaries, each slice
    advancing the watermark after its writes, so memory stays bounded on million-event logs.

    Long on purpose: the process-then-advance order (survey, slices, writes, retractions,
    edges, advance, repair, close) reads top to bottom in one place.
    """
    rows = ctx.session_rows()
    if isinstance(rows, JobOutput):
        return rows
    session, progress = rows
    whitelist = ctx.runtime.settings.withdrawal_kinds
    start = span_start(progress.last_logged_seq, session.inherited_cut)
    limit = ctx.runtime.max_span_events
    window: LogWindow | None = None
    if session.durable_end_seq - start > limit:
        survey = survey_log(session, start, whitelist, segments=ctx.runtime.segments)
    else:
        window = read_window(session, start, hand_off=ctx.runtime.hand_off,
                             segments=ctx.runtime.segments)
        survey = Survey.of(window.tail(start), window.durable_end, whitelist)
    clock = timing(ctx, ms_of(session.last_activity_at))
    cut = cut_span(survey.boundaries, start=start, durable_end=survey.durable_end, timing=clock,
                   markers=survey.markers)
    if cut is None:
        if clock.idle and session.closed_at is None and survey.durable_end <= start:
            # Idle with nothing left to log: close it all the same (consolidation is owed).
            _close(ctx, session.project, progress.last_consolidated_seq, start)
            return skipped("idle-closed; nothing left to log", from_seq=start, to_seq=start)
        return skipped("no span due", from_seq=start, to_seq=start)

    markers: dict[int, tuple[int, str]] = {}
    for marker in find_markers(survey.markers, whitelist):
        for seq in marker.withdrawn_seqs:
            markers.setdefault(seq, (marker.seq, marker.kind))
    withdrawn_before = [seq for seq in markers if seq < start]
    slices = slice_span(survey.boundaries, start, cut.to_seq, limit)
    store = ctx.store()
    writes = Counts()
    version = progress.version
    link_from = progress.last_belong_to_index
    next_ordinal = 0
    for number, (lower, upper) in enumerate(slices):
        first = number == 0
        if first:
            piece = window if window is not None else read_window(
                session, start, upper, ctx.runtime.hand_off, segments=ctx.runtime.segments)
            if withdrawn_before:
                piece = extend_back(session, piece, min(withdrawn_before),
                                    segments=ctx.runtime.segments)
            next_ordinal = piece.base_ordinal(start)
        else:
            piece = read_window(session, lower - 1, upper, ctx.runtime.hand_off,
                                segments=ctx.runtime.segments)
        plan = plan_span(
            piece.events,
            survey.markers,
            span_from=lower,
            span_to=upper,
            session_id=ctx.session_id,
            project=session.project,
            inherited_cut=session.inherited_cut,
            base_ordinal=next_ordinal,
            prefix_ordinals=piece.ordinals_before(start) if first and withdrawn_before else None,
            whitelist=whitelist,
            options=span_options(ctx),
            before=piece.event_at(lower - 1) if lower > 0 else None,
        )
        _write_entries(ctx, store, plan, session.project, markers, writes)
        _retract_earlier(ctx, store, plan, writes)
        if progress.has_session_node:
            writes.edges += settle_edges(
                ctx, store, project=session.project,
                link_from=link_from, link_to=plan.next_ordinal, skip=plan.skip_ordinals,
            )
            link_from = plan.next_ordinal
        writes.withdrawn += sum(1 for item in plan.items if item.withdrawn)
        ctx.heartbeat()
        next_ordinal = plan.next_ordinal
        belong_to = next_ordinal if progress.has_session_node else None
        advanced = _advance(ctx, version, upper, belong_to)
        if advanced is None:
            break  # another run already covered the rest of this span
        version = advanced
    # Summaries, archives and work units built on what a marker withdrew are repaired now.

    node = repair_after_log_span(ctx, bool(withdrawn_before), saw_markers=bool(markers))
    if node is not None:  # the session node, rewritten or deleted by a marker of this span
        writes.written += node.written
        writes.retracted += node.retracted
        writes.edges += node.edges
    if cut.idle_close:
        _close(ctx, session.project, progress.last_consolidated_seq, cut.to_seq)
    elif cut.reason == "turn-end" and ctx.runtime.enqueue is not None:
        # A logged turn: the consolidate job judges the turn-end gate (thresholds apply).
        ctx.runtime.enqueue(JOB_CONSOLIDATE, ctx.session_id, ctx.shelf)
    pieces = f" in {len(slices)} slices" if len(slices) > 1 else ""
    return JobOutput(
        status="done",
        detail=f"logged [{cut.start}, {cut.to_seq}) at {cut.reason}{pieces}",
        from_seq=cut.start,
        to_seq=cut.to_seq,
        **asdict(writes),
    )


def _write_entries(
    ctx: JobContext,
    store: MemoryStore,
    plan: SpanPlan,
    project: str,
    markers: dict[int, tuple[int, str]],
    writes: Counts,
) -> None:
    # Get before create: a natively batched store decides existence inside the batch's own
    # transaction; any other store is asked first (one query per 100 names).
    present = set() if isinstance(store, BatchWriter) else existing_names(
        store, [item.name for item in plan.items if not item.withdrawn])
    pending: list[EntryWrite] = []

    def flush() -> None:
        # One store transaction per batch (natively batched stores); the watermark advances
        # only after every batch of the slice is durable.
        if pending:
            created = len(write_batch(store, pending).created_names)
            writes.written += created
            writes.duplicates += len(pending) - created
            pending.clear()
            ctx.heartbeat()

    for n, item in enumerate(plan.items):
        if n and n % 64 == 0:
            ctx.heartbeat()
        if item.withdrawn:
            # Never written; one an earlier run wrote (before the marker landed) is removed.
            flush()
            marker_seq, kind = markers.get(item.seq, (-1, ""))
            if _retract(ctx, store, item.name, item.ordinal, marker_seq, kind, quiet_absent=True):
                writes.retracted += 1
            continue
        if item.name in present:
            writes.duplicates += 1
            continue
        pending.append(EntryWrite(
            item.name,
            item.markdown,
            tags=tuple(item.tags or MESSAGE_POLICY.tags),
            scopes=tuple(item.scopes or scopes_for(project)),
            embed=item.embed,
        ))
        if len(pending) >= store_writes.WRITE_BATCH:
            flush()
    flush()


def _retract_earlier(ctx: JobContext, store: MemoryStore, plan: SpanPlan, writes: Counts) -> None:
    for item in plan.retract:
        if _retract(ctx, store, item.name, item.ordinal, item.marker_seq, item.kind,
                    quiet_absent=False):
            writes.retracted += 1


def _retract(
    ctx: JobContext,
    store: MemoryStore,
    name: str,
    ordinal: int,
    marker_seq: int,
    kind: str,
    *,
    quiet_absent: bool,
) -> bool:
    """Delete one withdrawn entry (get before delete) and its ``belongTo`` edge, and record
    what happened. The edge goes too so a retracted store equals one that never saw the message
    (a clean run); it is removed even when the entry is already gone, which heals a crash
    between the two deletes."""
    existed = store.knowledge_get(name) is not None
    if not store.features().delete:
        ctx.warn_once(
            "no-delete",
            "withdrawn messages cannot be retracted: this store has no knowledge-delete, "
            "so they are skipped instead of removed",
        )
        if existed:
            ctx.record_retraction(name, ordinal, marker_seq, kind, "failed",
                                  "store has no knowledge-delete")
        return False
    store.statement_delete(name, REL_BELONG_TO, entries.session_name(ctx.session_id))
    if not existed:
        if not quiet_absent:
            ctx.record_retraction(name, ordinal, marker_seq, kind, "absent")
        return False
    removed = store.knowledge_delete(name)
    ctx.record_retraction(name, ordinal, marker_seq, kind, "retracted" if removed else "absent")
    return removed


def _advance(ctx: JobContext, version: int, to_seq: int, belong_to: int | None) -> int | None:
    """Advance the watermarks after the writes; the new version, or ``None`` when another run
    already advanced past ``to_seq`` (nothing is lost: its writes covered this span)."""
    with ctx.state() as repos:
        advanced = repos.progress.advance(
            ctx.shelf,
            ctx.session_id,
            expected_version=version,
            lease_token=ctx.lease.token,
            last_logged_seq=to_seq,
            last_belong_to_index=belong_to,
        )
        if advanced:
            return version + 1
        now = repos.progress.get(ctx.shelf, ctx.session_id)
    if now.last_logged_seq >= to_seq:
        return None
    raise TransientJobError(
        f"watermark of {ctx.session_id} moved or the lease was lost before the advance; "
        "the span is re-done on the next attempt"
    )


def _close(ctx: JobContext, project: str, consolidated: int, logged_to: int) -> None:
    """Idle-close: record it, and hand the owed consolidation (thresholds waived) to the hook."""
    with ctx.state() as repos:
        repos.sessions.mark_closed(ctx.session_id)
    hook = ctx.runtime.consolidation_hook
    if hook is not None and logged_to > consolidated:
        hook(ConsolidationOwed(ctx.session_id, ctx.shelf, project, consolidated, logged_to))


__all__ = ["LogWindow", "log_span"]
