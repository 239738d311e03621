"""``consolidate``: summarise a session's logged span into ``sum-<sid>-<from>-<to>`` + work units.

The span is ``[max(last_consolidated, inherited cut), min(durable end, last logged))`` — only what
the log layer already wrote. The job is hinted after ``log_span`` logs a turn (thresholds apply),
after an idle-close (thresholds waived) and by ``reconsolidate`` (thresholds waived, the request's
span). With thresholds, the newest ``turn/end`` of the span is judged by
:func:`memory.consolidation.gates.turn_end_gate`: a user abort is a boundary (a quarter of the
token floor, no turn interval), other aborts / ``blocked`` / ``error`` / ``max-tokens`` /
``interrupted`` never trigger, otherwise ``check_every_turns`` turns since the last accepted check
and ``min_new_tokens`` estimated tokens (characters / 4 of the span's non-withdrawn human and
assistant text) are needed. A refused gate only records ``pending_tokens``.

:func:`write_span_summary` does the work (also usable by repair after a withdrawal): build the
transcript (withdrawn messages excluded), call the model, write the work units, then the summary
with ``summary`` edges to exactly the covered, non-withdrawn messages. Only afterwards are
``last_consolidated_seq`` (to the covered end), ``last_check_turn`` and ``pending_tokens``
advanced, and the cascade of the project is owed.

No model route: one warning per process, the job is skipped, the watermark does not move.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from dsh_memory_worker.memory.consolidation.extraction import extract
from dsh_memory_worker.memory.consolidation.gates import GateDecision, turn_end_gate
from dsh_memory_worker.memory.consolidation.members import summary_member_names
from dsh_memory_worker.memory.constants import REL_SUMMARY
from dsh_memory_worker.memory.entries import (
    LOG_EDGE_POLICY,
    scopes_for,
    span_summary_name,
    summary_policy,
)
from dsh_memory_worker.memory.llm import (
    ModelClient,
    ModelsNotConfigured,
    PermanentModelError,
    RetryableModelError,
    warn_models_not_configured,
)
from dsh_memory_worker.memory.store.base import MemoryStore
from dsh_memory_worker.worker.jobs.cascade import cascade_project
from dsh_memory_worker.worker.jobs.consolidate_span import (
    SpanEvents,
    pending_tokens,
    read_span,
    span_transcript,
)
from dsh_memory_worker.worker.jobs.context import JobContext, JobOutput, skipped
from dsh_memory_worker.worker.jobs.logread import (
    PermanentJobError,
    TransientJobError,
)
from dsh_memory_worker.worker.jobs.models import job_attempt, model_client
from dsh_memory_worker.worker.jobs.provenance import (
    current_writer,
    record_derived,
    record_missing_derived,
)
from dsh_memory_worker.worker.jobs.reconsolidate import pending_request, settle_request
from dsh_memory_worker.worker.jobs.runtime import Runtime
from dsh_memory_worker.worker.jobs.storeview import derived_units
from dsh_memory_worker.worker.jobs.work_units import (
    WorkUnitOptions,
    WorkUnitOutcome,
    extract_work_units,
)
from dsh_memory_worker.worker.names import JOB_CASCADE, JOB_CONSOLIDATE
from dsh_memory_worker.worker.state.progress import Progress
from dsh_memory_worker.worker.state.sessions import SessionState

log = logging.getLogger(__name__)

TURN_END: Final = "turn/end"


@dataclass(slots=True)
class SpanSummary:
    """What :func:`write_span_summary` did. ``name`` is ``None`` for an empty transcript."""

    from_seq: int
    to_seq: int
    covered_to: int
    name: str | None = None
    members: list[str] = field(default_factory=list)
    created: bool = False
    model_called: bool = False
    work_units: list[WorkUnitOutcome] = field(default_factory=list)


def write_span_summary(
    runtime: Runtime,
    store: MemoryStore,
    session: SessionState,
    from_seq: int,
    to_seq: int,
    *,
    client: ModelClient | None = None,
    attempt: int = 0,
    span: SpanEvents | None = None,
    consolidated_to: int | None = None,
) -> SpanSummary:
    """Summarise ``[from_seq, to_seq)`` of ``session`` into the store (no watermark change).

    Get-before-create: when ``sum-<sid>-<from>-<covered>`` already exists no model call is made
    and only its ``summary`` edges are re-asserted; if it ends beyond ``consolidated_to`` (the
    session's watermark: the run that wrote it never finished) and has no provenance row, the
    rows a clean run records are written (:func:`record_missing_derived`). Otherwise the work
    units are written before the summary, so an existing summary always means a finished model
    call. Raises ``ModelsNotConfigured``,
    ``RetryableModelError``, ``PermanentModelError`` and store errors.
    """
    settings = runtime.settings
    span = span or read_span(
        session,
        from_seq,
        to_seq,
        settings.withdrawal_kinds,
        runtime.hand_off,
        segments=runtime.segments,
    )
    transcript = span_transcript(runtime, session, span)
    result = SpanSummary(from_seq, to_seq, to_seq)
    if transcript.empty:
        return result
    covered_to = result.covered_to = transcript.covered_to(to_seq)
    sid = session.session_id
    name = result.name = span_summary_name(sid, from_seq, covered_to)
    result.members = summary_member_names(
        span.events,
        sid,
        from_seq=from_seq,
        covered_to_seq=covered_to,
        base_ordinal=span.base_ordinal,
        withdrawn=span.withdrawn,
        inherited_cut=session.inherited_cut,
    )
    scopes = scopes_for(session.project)
    if store.knowledge_get(name) is None:
        client = client or model_client(runtime, sid)
        result.model_called = True
        extraction = extract(
            client, transcript.text, attempt, max_units=settings.max_work_units_per_run
        )
        # Work units first, the summary last: an existing summary marks a finished run, so a
        # crash in between re-runs the call instead of losing the units.
        result.work_units = extract_work_units(
            store,
            client,
            extraction.work_units,
            summary_name=name,
            project=session.project,
            attempt=attempt,
            recorded=runtime.now(),
            options=WorkUnitOptions.of(runtime.settings),
        )
        policy = summary_policy(1)
        result.created = store.knowledge_create(
            name, extraction.summary, tags=policy.tags, scopes=scopes, embed=policy.embed
        )
        _link(store, name, result.members, scopes)
        record_derived(
            runtime, store.shelf, name, result.work_units, current_writer(runtime, attempt), sid
        )
    else:
        _link(store, name, result.members, scopes)
        if consolidated_to is not None and covered_to > consolidated_to:
            units = derived_units(store, name)
            writer = current_writer(runtime, attempt)
            record_missing_derived(runtime, store.shelf, name, units, writer, sid)
    return result


def _link(store: MemoryStore, name: str, members: list[str], scopes: tuple[str, ...]) -> None:
    for member in members:
        store.statement_create(
            name, REL_SUMMARY, member, scopes=scopes, embed=LOG_EDGE_POLICY.embed
        )


# ---------------------------------------------------------------------------------- the job


def _gate(
    runtime: Runtime, session: SessionState, progress: Progress, span: SpanEvents, tokens: int
) -> tuple[GateDecision, int]:
    """Judge the span's turn ends, newest first; the decision and the turn it was taken at."""
    s = runtime.settings
    ends = [e for e in span.events if e.type == TURN_END]
    decision = GateDecision(None, "no turn ended")
    for event in reversed(ends):
        data: Mapping[str, Any] = event.data if isinstance(event.data, Mapping) else {}
        raw_turn = data.get("turn")
        turn = raw_turn if isinstance(raw_turn, int) else progress.last_check_turn
        reason = data.get("reason")
        decision = turn_end_gate(
            reason=reason if isinstance(reason, Mapping) else None,
            turn=turn,
            last_check_turn=progress.last_check_turn,
            pending_tokens=tokens,
            last_consolidated_seq=progress.last_consolidated_seq,
            inherited_cut=session.inherited_cut,
            session_end_seq=session.durable_end_seq,
            last_logged_seq=progress.last_logged_seq,
            enabled=s.consolidation_enabled,
            check_every_turns=s.check_every_turns,
            min_new_tokens=s.min_new_tokens,
        )
        if decision.accepted:
            return decision, max(turn, progress.last_check_turn)
    return decision, progress.last_check_turn


def consolidate(ctx: JobContext) -> JobOutput:
    """The ``consolidate`` job (see the module docstring)."""
    runtime = ctx.runtime
    with ctx.state() as repos:
        session = repos.sessions.get(ctx.session_id)
        progress = repos.progress.get(ctx.shelf, ctx.session_id)
        request = pending_request(repos, ctx.session_id, ctx.shelf)
    if session is None:
        return skipped("session not seen by the watcher yet")
    if session.forgotten:
        return skipped("session is forgotten")
    client = model_client(runtime, ctx.session_id)
    if not client.configured:
        warn_models_not_configured(log)
        return skipped("no model route configured")
    waived = request is not None or session.closed_at is not None
    if request is not None:
        from_seq = max(request[0], session.inherited_cut)
        to_seq = min(request[1], progress.last_logged_seq)
    else:
        if not runtime.settings.consolidation_enabled:
            return skipped("consolidation disabled")
        from_seq = max(progress.last_consolidated_seq, session.inherited_cut)
        to_seq = min(session.durable_end_seq, progress.last_logged_seq)
    if to_seq <= from_seq:
        _settle(ctx, request, "empty")
        return skipped("nothing to consolidate", from_seq=from_seq, to_seq=max(from_seq, to_seq))
    span = read_span(
        session,
        from_seq,
        to_seq,
        runtime.settings.withdrawal_kinds,
        runtime.hand_off,
        segments=runtime.segments,
    )
    tokens = pending_tokens(runtime, session, span)
    turn = progress.last_check_turn
    if not waived:
        decision, turn = _gate(runtime, session, progress, span, tokens)
        if not decision.accepted:
            _record_tokens(ctx, progress, tokens)
            return skipped(f"gate: {decision.reason}", from_seq=from_seq, to_seq=to_seq)
    attempt = job_attempt(ctx, JOB_CONSOLIDATE)
    try:
        summary = write_span_summary(
            runtime,
            ctx.store(),
            session,
            from_seq,
            to_seq,
            client=client,
            attempt=attempt,
            span=span,
            consolidated_to=progress.last_consolidated_seq,
        )
    except ModelsNotConfigured:
        warn_models_not_configured(log)
        return skipped("no model route configured")
    except RetryableModelError as exc:
        raise TransientJobError(str(exc)) from None
    except PermanentModelError as exc:
        _settle(ctx, request, "failed", str(exc))
        raise PermanentJobError(str(exc)) from None
    ctx.heartbeat()
    remaining = pending_tokens(runtime, session, span, summary.covered_to)
    # One fact, one commit: the watermark and the request it settles move together, so no reader
    # sees the span consolidated while its request still says queued.
    _advance(
        ctx,
        progress,
        summary.covered_to,
        turn,
        remaining,
        settles=(request, "done" if summary.name else "empty"),
    )
    if summary.name is not None:
        _owe_cascade(ctx, session, client)
    stored = sum(1 for unit in summary.work_units if unit.stored)
    if summary.name is None:
        detail = f"nothing to summarise in [{from_seq}, {to_seq})"
    elif summary.created:
        detail = f"consolidated [{from_seq}, {summary.covered_to}) into {summary.name}"
    else:  # honest: nothing was written (see `reconsolidate --replace` to rewrite it)
        detail = (
            f"already summarised: {summary.name} exists, nothing written (use "
            "`reconsolidate --replace` to rewrite it)"
        )
    if summary.work_units:
        detail += f"; work units: {', '.join(u.verdict for u in summary.work_units)}"
    return JobOutput(
        status="done",
        detail=detail,
        from_seq=from_seq,
        to_seq=summary.covered_to,
        written=int(summary.created) + stored,
        edges=len(summary.members),
        duplicates=sum(1 for unit in summary.work_units if not unit.stored),
    )


def _advance(
    ctx: JobContext,
    progress: Progress,
    covered_to: int,
    turn: int,
    remaining: int,
    *,
    settles: tuple[tuple[int, int] | None, str],
) -> None:
    """Move the consolidation watermark after the writes (forward only, fenced) and, in the same
    transaction, settle the reconsolidation request ``settles = (request, outcome)`` it
    finishes (nothing is settled when the advance is refused: the span is re-done)."""
    request, outcome = settles
    with ctx.state() as repos:
        now = repos.progress.get(ctx.shelf, ctx.session_id)
        advanced = repos.progress.advance(
            ctx.shelf,
            ctx.session_id,
            expected_version=now.version,
            lease_token=ctx.lease.token,
            last_consolidated_seq=max(covered_to, now.last_consolidated_seq),
            last_check_turn=max(turn, now.last_check_turn),
            pending_tokens=remaining,
        )
        if advanced and request is not None:
            settle_request(repos, ctx.session_id, ctx.shelf, request, outcome)
    if not advanced:
        raise TransientJobError(
            f"consolidation watermark of {ctx.session_id} could not advance (lease lost); "
            "the span is re-done on the next attempt"
        )


def _record_tokens(ctx: JobContext, progress: Progress, tokens: int) -> None:
    if tokens == progress.pending_tokens:
        return
    with ctx.state() as repos:
        now = repos.progress.get(ctx.shelf, ctx.session_id)
        repos.progress.advance(
            ctx.shelf,
            ctx.session_id,
            expected_version=now.version,
            lease_token=ctx.lease.token,
            pending_tokens=tokens,
        )


def _settle(
    ctx: JobContext, request: tuple[int, int] | None, outcome: str, detail: str | None = None
) -> None:
    if request is None:
        return
    with ctx.state() as repos:
        settle_request(repos, ctx.session_id, ctx.shelf, request, outcome, detail)


def _owe_cascade(ctx: JobContext, session: SessionState, client: ModelClient) -> None:
    """Hint the cascade as its own job (a cascade failure never undoes a consolidation); run it
    here when no queue is attached."""
    runtime = ctx.runtime
    if not runtime.settings.cascade_enabled:
        return
    if runtime.enqueue is not None:
        runtime.enqueue(JOB_CASCADE, ctx.session_id, ctx.shelf)
        return
    try:
        cascade_project(runtime, ctx.store(), client, session.project, heartbeat=ctx.heartbeat)
    except Exception as exc:  # the consolidation is done; the next cascade retries
        log.warning("cascade after %s failed: %s", ctx.session_id, " ".join(str(exc).split()))


__all__ = [
    "SpanEvents",
    "SpanSummary",
    "consolidate",
    "read_span",
    "write_span_summary",
]
