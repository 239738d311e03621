"""``log_span``: write the message entries of one span, honour withdrawals, advance the watermark.

The job reads top to bottom like its story (process-then-advance):

1. **read** — one call, :func:`worker.jobs.logread.read_span`, reads ``[from, durable end)``
   from the nearest checkpoint (or surveys it in one streaming pass when it is long), cuts the
   span (turn end, step flush window, idle close, withdrawal marker), finds what its markers
   withdraw and slices it; it returns the survey, the cut, the slices and the first slice's
   window with the message ordinal there;
2. **plan** — :func:`memory.span.plan_span` decides every entry of a slice;
3. **write** — :func:`worker.jobs.span_writes.write_plan` writes the entries get-before-create
   (withdrawn ones are never written, and deleted if an earlier run wrote them) and retracts
   earlier entries a new marker withdrew, recording each retraction; the owed ``belongTo``
   edges are settled (skipping withdrawn ordinals) — on a natively batched store in the same
   transaction as the slice's last entries;
4. **advance** — ``last_logged_seq`` and ``last_belong_to_index`` move with one conditional
   update, per slice.

A crash anywhere before the advance re-does the writes idempotently. Then the derived memory a
marker invalidated is repaired, and the session is idle-closed or its turn handed to the
consolidate job. Each step receives what it uses (the store, settings values, the clock
reading), not the job's context.
"""

from __future__ import annotations

from dataclasses import asdict

from dsh_memory_worker.memory.span import plan_span
from dsh_memory_worker.memory.span_cut import Timing
from dsh_memory_worker.worker.jobs.context import Counts, JobContext, JobOutput, skipped
from dsh_memory_worker.worker.jobs.logread import TransientJobError, read_span
from dsh_memory_worker.worker.jobs.relog import span_options_for
from dsh_memory_worker.worker.jobs.retract import repair_after_log_span
from dsh_memory_worker.worker.jobs.runtime import ConsolidationOwed, ms_of
from dsh_memory_worker.worker.jobs.seed_repair import relog_if_partial
from dsh_memory_worker.worker.jobs.span_writes import write_plan
from dsh_memory_worker.worker.jobs.store_writes import OwedEdges, settle_edges, span_edges
from dsh_memory_worker.worker.names import JOB_CONSOLIDATE


def log_span(ctx: JobContext) -> JobOutput:
    """Log the span a session owes now (nothing when no cut is due).

    The story: read the window (one call: :func:`~worker.jobs.logread.read_span`), then for each
    slice plan (:func:`memory.span.plan_span`), write (:func:`~worker.jobs.span_writes.write_plan`,
    then the owed ``belongTo`` edges) and advance; then repair what a marker withdrew and close
    or hand the turn to consolidation. A span longer than ``Runtime.max_span_events`` is
    surveyed in one streaming pass and written in slices that end at step or turn boundaries,
    each advancing the watermark after its writes, so memory stays bounded on huge logs.
    """
    runtime = ctx.runtime
    s = runtime.settings
    options = span_options_for(s)
    rows = ctx.session_rows()
    if isinstance(rows, JobOutput):
        return rows
    session, progress = rows
    if relog_if_partial(ctx, session, progress):
        rows = ctx.session_rows()  # logged again from the cut: the watermarks are 0 now
        if isinstance(rows, JobOutput):
            return rows
        session, progress = rows
    clock = Timing(
        now_ms=runtime.now_ms(),
        last_growth_ms=ms_of(session.last_activity_at),
        flush_window_ms=int(s.flush_window_s * 1000),
        idle_ms=int(s.idle_close_s * 1000),
        force_idle=runtime.force_idle,
    )
    span = read_span(
        session,
        progress.last_logged_seq,
        clock,
        whitelist=s.withdrawal_kinds,
        limit=runtime.max_span_events,
        hand_off=runtime.hand_off,
        segments=runtime.segments,
    )
    start, cut = span.start, span.cut
    if cut is None:
        if clock.idle and session.closed_at is None and span.survey.durable_end <= start:
            # Idle with nothing left to log: close it all the same (consolidation is owed).
            _close(ctx, session.project, progress.last_consolidated_seq, start)
            return skipped("idle-closed; nothing left to log", from_seq=start, to_seq=start)
        return skipped("no span due", from_seq=start, to_seq=start)

    store = ctx.store()
    writes = Counts()
    version = progress.version
    link_from = progress.last_belong_to_index
    next_ordinal = span.base_ordinal
    for piece in span.pieces():
        plan = plan_span(
            piece.window.events,
            span.survey.markers,
            span_from=piece.lower,
            span_to=piece.upper,
            session_id=ctx.session_id,
            project=session.project,
            inherited_cut=session.inherited_cut,
            base_ordinal=next_ordinal,
            prefix_ordinals=piece.prefix_ordinals,
            whitelist=s.withdrawal_kinds,
            options=options,
            before=piece.before,
        )
        # The owed ``belongTo`` edges go in the same store transaction as the entries (a
        # store without native batches settles them afterwards, get before create).
        owed = OwedEdges(
            ctx.session_id, session.project, link_from, plan.next_ordinal, plan.skip_ordinals
        )
        edges = span_edges(store, owed) if progress.has_session_node else []
        writes.add(
            write_plan(
                store,
                plan,
                session_id=ctx.session_id,
                project=session.project,
                withdrawn=span.withdrawn,
                heartbeat=ctx.heartbeat,
                record=ctx.record_retraction,
                edges=edges or (),
            )
        )
        if progress.has_session_node:
            if edges is None:
                writes.edges += settle_edges(store, owed, ctx.heartbeat)
            link_from = plan.next_ordinal
        ctx.heartbeat()
        next_ordinal = plan.next_ordinal
        belong_to = next_ordinal if progress.has_session_node else None
        advanced = _advance(ctx, version, piece.upper, belong_to)
        if advanced is None:
            break  # another run already covered the rest of this span
        version = advanced

    # Summaries, archives and work units built on what a marker withdrew are repaired now.
    node = repair_after_log_span(ctx, span.withdrew_earlier, saw_markers=bool(span.withdrawn))
    if node is not None:  # the session node, rewritten or deleted by a marker of this span
        writes.written += node.written
        writes.retracted += node.retracted
        writes.edges += node.edges
    if cut.idle_close:
        _close(ctx, session.project, progress.last_consolidated_seq, cut.to_seq)
    elif cut.reason == "turn-end" and runtime.enqueue is not None:
        # A logged turn: the consolidate job judges the turn-end gate (thresholds apply).
        runtime.enqueue(JOB_CONSOLIDATE, ctx.session_id, ctx.shelf)
    pieces = f" in {len(span.slices)} slices" if len(span.slices) > 1 else ""
    return JobOutput(
        status="done",
        detail=f"logged [{cut.start}, {cut.to_seq}) at {cut.reason}{pieces}",
        from_seq=cut.start,
        to_seq=cut.to_seq,
        **asdict(writes),
    )


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


__all__ = ["log_span", "span_options_for"]
