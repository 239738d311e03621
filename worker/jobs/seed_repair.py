"""Fork children stored from an incomplete seed: found, removed and logged again.

A seeded log (a fork child) starts with a copy of its parent's events and ends that copy with
``session/end-seed {inherited: true}``; the watcher records a child only once its seed is
complete (:func:`memory.dsh.forks.seed_complete`), so nothing of the parent is taken as the
child's own. Two kinds of store were written before that rule, or before a cut could be known:

* a child recorded while its seed was incomplete whose true cut arrived later: its watermark is
  at or below the cut (the partial view ended before the seed's end) although ``msg-<child>-*``
  entries exist — found by ``log_span`` before its first span (:func:`relog_if_partial`);
* a home an older worker already carried past the cut: the parent's messages are stored under
  the child's ordinals and the child's own at those ordinals were never written — found once per
  fork child at start-up by comparing the stored entries with today's rendering of the log
  (:func:`check_seeded_sessions`).

Either way everything the session put in memory is removed (as ``forget`` removes it:
:func:`worker.jobs.forget.remove_memory`), a title taken from the parent is cleared, the
watermarks go back to 0 and the session is logged again from its cut, as a clean run would log
it. Audited as ``seed-check`` (``ok`` for a child found right, ``relogged`` otherwise); a child
the watcher first records with a complete seed is ``ok`` at once, so the start-up check reads
only the fork children an older worker recorded.
"""

from __future__ import annotations

import logging

from dsh_memory_worker.memory.entries import message_name
from dsh_memory_worker.memory.store.base import MemoryStore, StoreError
from dsh_memory_worker.worker.jobs.context import JobContext
from dsh_memory_worker.worker.jobs.errors import PermanentJobError, TransientJobError
from dsh_memory_worker.worker.jobs.forget import remove_memory
from dsh_memory_worker.worker.jobs.housekeeping import has_message_entry
from dsh_memory_worker.worker.jobs.relog import stale_renderings
from dsh_memory_worker.worker.jobs.repair import Repairer
from dsh_memory_worker.worker.jobs.repair_plan import model_client
from dsh_memory_worker.worker.jobs.retract import with_session_lease
from dsh_memory_worker.worker.jobs.runtime import Runtime
from dsh_memory_worker.worker.jobs.seed_pending import unchecked_children
from dsh_memory_worker.worker.jobs.storeview import message_entries
from dsh_memory_worker.worker.jobs.withdrawals import read_session_log
from dsh_memory_worker.worker.names import ACTION_SEED_CHECK, JOB_SESSION_NODE
from dsh_memory_worker.worker.state.progress import Progress
from dsh_memory_worker.worker.state.sessions import SessionState

log = logging.getLogger(__name__)


def relog_if_partial(ctx: JobContext, session: SessionState, progress: Progress) -> bool:
    """Before a span of a fork child: when entries exist although the watermark is at or below
    the cut (they were written from an incomplete seed), remove them and log the session again
    from its cut; True when it did. Asks the store only for a child whose watermark moved and
    is still at or below its cut (a fresh child's first span asks nothing)."""
    if (
        session.inherited_cut <= 0
        or progress.version == 0
        or progress.last_logged_seq > session.inherited_cut
    ):
        return False
    store = ctx.store()
    if not has_message_entry(store, ctx.session_id):
        return False
    cut = session.inherited_cut
    relog(ctx, store, session, f"entries written before its seed ended (cut {cut})")
    return True


def relog(ctx: JobContext, store: MemoryStore, session: SessionState, why: str) -> list[str]:
    """Remove everything ``session`` put in memory, clear a title taken from its parent, reset
    its watermarks (it is logged again from its cut) and audit it; the names removed."""
    sid = ctx.session_id
    repairer = Repairer(ctx, store, session.project, model_client(ctx.runtime, sid))
    if not repairer.usable():
        raise PermanentJobError(f"fork child {sid}: {why}, and this store cannot delete them")
    removed = remove_memory(store, repairer, sid, ctx.heartbeat)
    with ctx.state() as repos:
        repos.progress.reset(ctx.shelf, sid)
        if session.last_title_seq is not None and session.last_title_seq < session.inherited_cut:
            repos.sessions.scrub_title(sid)  # the parent's title, taken as the child's
        repos.audit.record(
            ACTION_SEED_CHECK,
            "relogged",
            shelf=ctx.shelf,
            session_id=sid,
            detail=f"{why}; {len(removed)} entries removed, logged again from the cut",
        )
    ctx.runtime.state.after_purge()
    enqueue = ctx.runtime.enqueue
    title = session.last_title_seq
    if enqueue is not None and title is not None and title >= session.inherited_cut:
        enqueue(JOB_SESSION_NODE, sid, ctx.shelf)  # its own title's node went with the rest
    log.warning("fork child %s: %s; logged again from its cut", sid, why)
    return removed


def _written_wrong(runtime: Runtime, store: MemoryStore, session: SessionState, logged: int) -> str:
    """Why ``session``'s stored messages are not what its log renders (empty: they are)."""
    found = read_session_log(session, runtime.settings.withdrawal_kinds, segments=runtime.segments)
    expected = {
        message_name(session.session_id, ordinal)
        for seq, ordinal in found.ordinals.items()
        if seq < logged
    }
    extra = set(message_entries(store, session.session_id)) - expected
    if extra:
        return f"{len(extra)} entries beyond its own messages"
    stale = stale_renderings(runtime, store, found, logged).messages
    if stale:
        return f"{len(stale)} entries hold other text than its own messages"
    return ""


def _check(ctx: JobContext) -> bool:
    """Check one fork child under its lease; True when it was stored wrong and is relogged."""
    sid, shelf = ctx.session_id, ctx.shelf
    with ctx.state() as repos:
        session = repos.sessions.get(sid)
        progress = repos.progress.get(shelf, sid)
    if session is None:
        return False
    store = ctx.store()
    why = _written_wrong(ctx.runtime, store, session, progress.last_logged_seq)
    if why:
        relog(ctx, store, session, why)
        return True
    with ctx.state() as repos:
        repos.audit.record(
            ACTION_SEED_CHECK, "ok", shelf=shelf, session_id=sid, detail="stored right"
        )
    return False


def check_seeded_sessions(runtime: Runtime, shelf: str) -> list[str]:
    """At start-up: every unchecked fork child
    (:func:`worker.jobs.seed_pending.unchecked_children`) is compared with its log once; one
    stored wrong is removed and logged again (:func:`relog`). Returns the sessions relogged and
    those that could not be checked now (their lease, the store, the log: tried again at the
    next start) — work a run did or still owes, so it is not at rest."""
    acted: list[str] = []
    for sid in unchecked_children(runtime, shelf):
        try:
            if with_session_lease(runtime, sid, shelf, ACTION_SEED_CHECK, _check, wait_s=0):
                acted.append(sid)
        except (PermanentJobError, TransientJobError, StoreError, OSError) as exc:
            log.warning("seed check of %s skipped for now: %s", sid, " ".join(str(exc).split()))
            acted.append(sid)
    return acted
