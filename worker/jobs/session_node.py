"""``session_node``: the ``session-<id>`` node from the first title or compaction summary, and
the ``belongTo`` edges it owes.

The node is written once, from the session's first host summary (``session/title`` or
``compaction/summary`` at or after a fork's inherited cut); a later title never replaces it.
Its edges link every message logged so far except withdrawn ones; later spans settle their own
edges in ``log_span``.
"""

from __future__ import annotations

from memory import entries
from memory.entries import SESSION_POLICY, scopes_for
from memory.messages import message_ordinals
from memory.withdrawal import withdrawn_loggable
from worker.jobs.context import JobContext, JobOutput, skipped
from worker.jobs.log_span import settle_edges
from worker.jobs.logread import LogWindow, TransientJobError, read_window
from worker.triggers import SESSION_NODE_EVENTS


def _node_text(ctx: JobContext, window: LogWindow) -> tuple[int, str] | None:
    tz = ctx.timezone()
    now_ms = ctx.runtime.now_ms()
    for event in window.events:
        if event.type not in SESSION_NODE_EVENTS or event.seq < window.inherited:
            continue
        text = entries.session_node_text(event, tz, now_ms)
        if text:
            return event.seq, text
    return None


def session_node(ctx: JobContext) -> JobOutput:
    """Write the session node (once) and the ``belongTo`` edges of what is logged so far."""
    with ctx.state() as repos:
        session = repos.sessions.get(ctx.session_id)
        progress = repos.progress.get(ctx.shelf, ctx.session_id)
    if session is None:
        return skipped("session not seen by the watcher yet")
    if session.forgotten:
        return skipped("session is forgotten")
    if progress.has_session_node:
        return skipped("session node exists; log_span settles its edges")
    window = read_window(session, session.inherited_cut)
    found = _node_text(ctx, window)
    if found is None:
        return skipped("no title or compaction summary yet")
    seq, text = found
    store = ctx.store()
    name = entries.session_name(ctx.session_id)
    written = 0
    if store.knowledge_get(name) is None and store.knowledge_create(
        name, text, tags=SESSION_POLICY.tags, scopes=scopes_for(session.project),
        embed=SESSION_POLICY.embed,
    ):
        written = 1
    logged = max(progress.last_logged_seq, session.inherited_cut)
    link_to = window.base_ordinal(logged)
    whitelist = ctx.runtime.settings.withdrawal_kinds
    withdrawn = withdrawn_loggable(window.events, whitelist, session.inherited_cut)
    start = window.first_ordinal if window.first_seq >= window.inherited else 0
    ordinals = message_ordinals(window.events, window.inherited, start=start)
    skip = frozenset(ordinals[s] for s in withdrawn if s in ordinals)
    edges = settle_edges(
        ctx, store, project=session.project,
        link_from=progress.last_belong_to_index, link_to=link_to, skip=skip,
    )
    ctx.heartbeat()
    with ctx.state() as repos:
        advanced = repos.progress.advance(
            ctx.shelf, ctx.session_id,
            expected_version=progress.version, lease_token=ctx.lease.token,
            has_session_node=True, last_belong_to_index=link_to,
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
