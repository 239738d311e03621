"""``session_node``: the ``session-<id>`` node from the first title or compaction summary, and
the ``belongTo`` edges it owes.

The node is written once, from the session's first host summary (``session/title`` or
``compaction/summary`` at or after a fork's inherited cut); a later title never replaces it.
Its edges link every message logged so far except withdrawn ones; later spans settle their own
edges in ``log_span``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import cast

from memory import entries
from memory.dsh.events import Event
from memory.dsh.position import ScanPosition
from memory.dsh.scanner import LogScan
from memory.entries import SESSION_POLICY, scopes_for
from memory.messages import is_loggable
from memory.withdrawal import is_marker
from worker.jobs.context import JobContext, JobOutput, skipped
from worker.jobs.log_span import settle_edges
from worker.jobs.logread import (
    TransientJobError,
    checkpoint_index,
    raise_for_problems,
    shared_whole_log,
)
from worker.state.sessions import Checkpoint, SessionState
from worker.triggers import SESSION_NODE_EVENTS


@dataclass(slots=True)
class _NodeSurvey:
    node: tuple[int, str] | None  # (seq, text) of the first usable host summary
    link_to: int  # message ordinal at the logged watermark
    skip: frozenset[int]  # ordinals in [link_from, link_to) withdrawn by some marker


def _survey(ctx: JobContext, state: SessionState, logged: int, link_from: int) -> _NodeSurvey:
    """One streaming pass over the session's own events (constant memory but one int per
    message that still needs an edge)."""
    tz = ctx.timezone()
    # A timeless event (normalised fixtures only) is dated by the session's creation time.
    created = state.header.get("created_at")
    now_ms = created if isinstance(created, int) and created > 0 else ctx.runtime.now_ms()
    whitelist = frozenset(ctx.runtime.settings.withdrawal_kinds)
    cut = state.inherited_cut
    point = state.checkpoint_at_or_before(cut) or Checkpoint(0, 0, 0)
    position = ScanPosition(point.offset, point.seq) if point.seq > 0 else None
    # From the log's start, the decode ``log_span`` just made of the unchanged file is reused.
    shared = shared_whole_log(state.path) if position is None else None
    scan = None if shared is not None else LogScan(
        Path(state.path), position, checkpoint_index(state))
    events: Iterable[Event] = shared if shared is not None else cast(LogScan, scan)
    ordinal = point.ordinal if point.seq >= cut else 0
    node: tuple[int, str] | None = None
    ordinal_of: dict[int, int] = {}
    withdrawn: set[int] = set()
    link_to: int | None = None
    for event in events:
        if event.seq < cut:
            continue
        if link_to is None and event.seq >= logged:
            link_to = ordinal
        if is_loggable(event):
            if event.seq < logged and ordinal >= link_from:
                ordinal_of[event.seq] = ordinal
            ordinal += 1
        elif node is None and event.type in SESSION_NODE_EVENTS:
            text = entries.session_node_text(event, tz, now_ms)
            if text:
                node = (event.seq, text)
        elif is_marker(event, whitelist):
            withdrawn.update(event.source_seqs)
    raise_for_problems(state, scan.problems if scan is not None else [])
    skip = frozenset(ordinal_of[seq] for seq in withdrawn if seq in ordinal_of)
    return _NodeSurvey(node, ordinal if link_to is None else link_to, skip)


def session_node(ctx: JobContext) -> JobOutput:
    """Write the session node (once) and the ``belongTo`` edges of what is logged so far."""
    rows = ctx.session_rows()
    if isinstance(rows, JobOutput):
        return rows
    session, progress = rows
    if progress.has_session_node:
        return skipped("session node exists; log_span settles its edges")
    logged = max(progress.last_logged_seq, session.inherited_cut)
    survey = _survey(ctx, session, logged, progress.last_belong_to_index)
    if survey.node is None:
        return skipped("no title or compaction summary yet")
    seq, text = survey.node
    store = ctx.store()
    name = entries.session_name(ctx.session_id)
    written = 0
    if store.knowledge_get(name) is None and store.knowledge_create(
        name, text, tags=SESSION_POLICY.tags, scopes=scopes_for(session.project),
        embed=SESSION_POLICY.embed,
    ):
        written = 1
    edges = settle_edges(
        ctx, store, project=session.project,
        link_from=progress.last_belong_to_index, link_to=survey.link_to, skip=survey.skip,
    )
    ctx.heartbeat()
    with ctx.state() as repos:
        advanced = repos.progress.advance(
            ctx.shelf, ctx.session_id,
            expected_version=progress.version, lease_token=ctx.lease.token,
            has_session_node=True, last_belong_to_index=survey.link_to,
        )
    if not advanced:
        raise TransientJobError(
            f"progress of {ctx.session_id} moved or the lease was lost; the node is re-checked "
            "on the next attempt"
        )
    return JobOutput(
        status="done",
        detail=f"session node from seq {seq}" + ("" if written else " (already there)"),
        from_seq=seq,
        to_seq=seq + 1,
        written=written,
        edges=edges,
    )
