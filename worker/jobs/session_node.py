"""``session_node``: the ``session-<id>`` node from the session's first clean host summary, and
the ``belongTo`` edges it owes.

The node shows the first ``session/title`` or ``compaction/summary`` (at or after a fork's
inherited cut) that no withdrawal taints (:mod:`memory.titles`); without withdrawals a later
title never replaces it. Each run re-decides from the whole log, so a marker that arrives after
the node was written rewrites the node from the next clean host summary, or deletes it (with its
``belongTo`` edges) when none is left — recorded in the audit trail as ``repair-session-node``.
``sessions.title_text`` in the state database is overwritten with the node's text (``NULL``
without a node). Its edges link every message logged so far except withdrawn ones; later spans
settle their own edges in ``log_span``.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Final, cast

from dsh_memory_worker.memory import constants as C
from dsh_memory_worker.memory import entries
from dsh_memory_worker.memory.dsh.events import Event
from dsh_memory_worker.memory.dsh.position import ScanPosition
from dsh_memory_worker.memory.dsh.scanner import LogScan
from dsh_memory_worker.memory.entries import SESSION_POLICY, scopes_for
from dsh_memory_worker.memory.span import loggable_once
from dsh_memory_worker.memory.store.base import EntryWrite, MemoryStore, NotFoundError
from dsh_memory_worker.memory.titles import TitleChoice, TitleSurvey
from dsh_memory_worker.worker.jobs.context import JobContext, JobOutput, skipped
from dsh_memory_worker.worker.jobs.logread import (
    TransientJobError,
    checkpoint_index,
    log_source,
    raise_for_problems,
)
from dsh_memory_worker.worker.jobs.runtime import Runtime
from dsh_memory_worker.worker.jobs.store_writes import (
    OwedEdges,
    create_node_with_edges,
    settle_edges,
)
from dsh_memory_worker.worker.jobs.storeview import edges as store_edges
from dsh_memory_worker.worker.state.sessions import Checkpoint, SessionState

#: Audit action of a node rewritten or deleted because a withdrawal tainted its source.
ACTION_NODE: Final = "repair-session-node"


@dataclass(slots=True)
class NodeSurvey:
    """What the whole log says about the node: the title decision, the message ordinal at the
    logged watermark, and the loggable seqs before it (to find withdrawn ordinals)."""

    choice: TitleChoice
    link_to: int
    base: int  # ordinal of loggable_seqs[0]
    loggable_seqs: array[int]
    withdrawn: frozenset[int]  # every seq a marker cites

    def skip_from(self, link_from: int) -> frozenset[int]:
        """Ordinals in ``[link_from, link_to)`` some marker withdrew."""
        found: set[int] = set()
        seqs = self.loggable_seqs
        for seq in self.withdrawn:
            i = bisect_left(seqs, seq)
            if i < len(seqs) and seqs[i] == seq and self.base + i >= link_from:
                found.add(self.base + i)
        return frozenset(found)


def survey_node(
    runtime: Runtime, state: SessionState, logged: int, whitelist: Iterable[str] | None = None
) -> NodeSurvey:
    """One streaming pass over the session's own events (constant memory but for one int per
    logged message and the host summaries)."""
    # A timeless event (normalised fixtures only) is dated by the session's creation time.
    created = state.header.get("created_at")
    now_ms = created if isinstance(created, int) and created > 0 else runtime.now_ms()
    kinds = frozenset(runtime.settings.withdrawal_kinds if whitelist is None else whitelist)
    cut = state.inherited_cut
    titles = TitleSurvey(kinds, cut, runtime.timezone(), now_ms)
    point = state.checkpoint_at_or_before(cut) or Checkpoint(0, 0, 0)
    position = ScanPosition(point.offset, point.seq) if point.seq > 0 else None
    # From the log's start, the decode ``log_span`` just made of the unchanged file is reused.
    segments = runtime.segments
    whole = position is None and segments is None  # the hand-off is of files only
    shared = runtime.hand_off.whole_log(state.path) if whole else None
    scan = (
        None
        if shared is not None
        else LogScan(log_source(state, segments), position, checkpoint_index(state))
    )
    events: Iterable[Event] = shared if shared is not None else cast(LogScan, scan)
    base = point.ordinal if point.seq >= cut else 0
    ordinal = base
    loggable: array[int] = array("q")
    link_to: int | None = None
    for event in events:
        if event.seq < cut:
            continue
        if link_to is None and event.seq >= logged:
            link_to = ordinal
        if loggable_once(event):
            if event.seq < logged:
                loggable.append(event.seq)
            ordinal += 1
        else:
            titles.add(event)
    raise_for_problems(state, scan.problems if scan is not None else [])
    return NodeSurvey(
        titles.choice(),
        ordinal if link_to is None else link_to,
        base,
        loggable,
        frozenset(titles.withdrawn),
    )


def session_node(ctx: JobContext) -> JobOutput:
    """Write, rewrite or delete the session node as its first clean host summary says, and
    settle the ``belongTo`` edges of what is logged so far."""
    return reconcile_session_node(ctx)


def reconcile_session_node(ctx: JobContext, whitelist: Iterable[str] | None = None) -> JobOutput:
    """:func:`session_node` with an optional marker whitelist (a retraction run's kinds)."""
    rows = ctx.session_rows()
    if isinstance(rows, JobOutput):
        return rows
    session, progress = rows
    if not session.owns_title and not progress.has_session_node:
        # Nothing to decide (a fork child's inherited title is its parent's): the flag stays
        # unset whether or not a run got to this hint (issue 32).
        return skipped("no title or compaction summary of its own yet")
    logged = max(progress.last_logged_seq, session.inherited_cut)
    survey = survey_node(ctx.runtime, session, logged, whitelist)
    choice = survey.choice
    store = ctx.store()
    name = entries.session_name(ctx.session_id)
    found = store.knowledge_get(name)
    current = found.content.data if found is not None else None
    text = choice.text
    with ctx.state() as repos:
        replaced = repos.sessions.set_title_text(ctx.session_id, text)
    if replaced and session.title_text is not None:
        ctx.runtime.state.after_purge()  # the replaced text leaves the state database's files
    if text is None:
        # Decided: no node is owed until a new host summary arrives (whose hint re-decides),
        # so the reconcile loop stops hinting this session.
        _mark_decided(ctx, progress.version, progress.has_session_node)
        if current is None:
            return skipped(_none_reason(choice))
        _delete_node(store, name, ctx.heartbeat)
        _audit(ctx, name, choice, "deleted")
        return JobOutput(
            status="done", detail="session node deleted: " + _none_reason(choice), retracted=1
        )
    assert choice.chosen is not None
    seq = choice.chosen.seq
    written = 0
    link_from = progress.last_belong_to_index
    if current is None:
        # A node (re)created links everything logged so far, in the node's own write batch.
        node = EntryWrite(
            name,
            text,
            tags=SESSION_POLICY.tags,
            scopes=scopes_for(session.project),
            embed=SESSION_POLICY.embed,
        )
        owed = OwedEdges(ctx.session_id, session.project, 0, survey.link_to, survey.skip_from(0))
        created, edges = create_node_with_edges(store, node, owed, ctx.heartbeat)
        written = int(created)
    else:
        if current != text:
            _rewrite_node(store, name, text, session.project)
            _audit(ctx, name, choice, "rewritten")
            written = 1
            link_from = 0
        elif progress.has_session_node and link_from >= survey.link_to:
            return skipped("session node is current; log_span settles its edges")
        owed = OwedEdges(
            ctx.session_id,
            session.project,
            link_from,
            survey.link_to,
            survey.skip_from(link_from),
        )
        edges = settle_edges(store, owed, ctx.heartbeat)
    ctx.heartbeat()
    with ctx.state() as repos:
        advanced = repos.progress.advance(
            ctx.shelf,
            ctx.session_id,
            expected_version=progress.version,
            lease_token=ctx.lease.token,
            has_session_node=True,
            last_belong_to_index=max(survey.link_to, progress.last_belong_to_index),
        )
    if not advanced:
        raise TransientJobError(
            f"progress of {ctx.session_id} moved or the lease was lost; the node is re-checked "
            "on the next attempt"
        )
    what = (
        "rewritten"
        if current is not None and written
        else ("written" if written else "already there")
    )
    return JobOutput(
        status="done",
        detail=f"session node from seq {seq} ({what})",
        from_seq=seq,
        to_seq=seq + 1,
        written=written,
        edges=edges,
    )


def _mark_decided(ctx: JobContext, version: int, already: bool) -> None:
    """Set ``has_session_node`` (the node is decided: written, or none owed). A moved version
    is left alone: the next hint decides again."""
    if already:
        return
    with ctx.state() as repos:
        repos.progress.advance(
            ctx.shelf,
            ctx.session_id,
            expected_version=version,
            lease_token=ctx.lease.token,
            has_session_node=True,
        )


def _none_reason(choice: TitleChoice) -> str:
    if choice.tainted():
        return "every title and compaction summary cites withdrawn messages"
    return "no title or compaction summary yet"


def _rewrite_node(store: MemoryStore, name: str, text: str, project: str) -> None:
    """Replace the node's text: ``knowledge-update`` when the store has it, else delete +
    create (its ``belongTo`` edges are statements and stay)."""
    if store.features().update:
        try:
            store.knowledge_update(name, data=text)
            return
        except NotFoundError:
            pass
    else:
        store.knowledge_delete(name)
    store.knowledge_create(
        name, text, tags=SESSION_POLICY.tags, scopes=scopes_for(project), embed=SESSION_POLICY.embed
    )


def _delete_node(store: MemoryStore, name: str, heartbeat: Callable[[], None]) -> None:
    """Delete the node and every ``belongTo`` edge to it (as if it had never been written)."""
    for row in store_edges(store, C.REL_BELONG_TO, tail=name):
        heartbeat()
        store.statement_delete(row.head, row.relation, row.tail)
    store.knowledge_delete(name)


def _audit(ctx: JobContext, name: str, choice: TitleChoice, outcome: str) -> None:
    """One audit entry; the detail names seqs and reasons, never the withdrawn text."""
    tainted = choice.tainted()
    cause = tainted[0] if tainted else None
    parts = [f"skipped {s.summary.type} seq {s.summary.seq}: {s.describe()}" for s in tainted]
    if choice.chosen is not None:
        parts.insert(
            0, f"now from {choice.chosen.type} seq {choice.chosen.seq} ({choice.chosen.source})"
        )
    with ctx.state() as repos:
        repos.audit.record(
            ACTION_NODE,
            outcome,
            shelf=ctx.shelf,
            session_id=ctx.session_id,
            subject=name,
            cause_marker_seq=cause.marker_seq if cause else None,
            source_kind=cause.marker_kind if cause else None,
            detail="; ".join(parts) or None,
        )
