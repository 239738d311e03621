"""Forget a session: remove everything it put in memory and never ingest it again.

Removed: its ``msg-<sid>-*`` entries and their ``belongTo`` edges, the ``session-<sid>`` node,
its span summaries ``sum-<sid>-*`` with their ``summary`` edges, work units derived only from
those summaries (units with other sources just lose the link), and its share of the archives —
every archive above one of its summaries is dropped (or retracted when no member is left), up the
tiers (:class:`worker.jobs.repair.Repairer`). Forgetting never waits for a model: a dropped
archive that keeps members is *owed*, and the next ``run`` with a model that answers regenerates
it from the members left under the same name (:mod:`worker.jobs.owed_archives`). Without any
model route the archives above are retracted (nothing could regenerate them).

The session is marked forgotten *before* anything is deleted (the watcher and every job skip a
forgotten session), in the transaction that overwrites its stored title (``scrub_title``, then
the post-purge hygiene of :mod:`worker.state.purge`); the run holds the session's lease, and
each step is get-before-delete, so a crash part-way is finished by running ``forget`` again.
Audited as ``forget`` (``started`` then ``done``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from dsh_memory_worker.memory import constants as C
from dsh_memory_worker.memory.entries import session_name
from dsh_memory_worker.memory.store.base import MemoryStore, StoreError
from dsh_memory_worker.worker.jobs.context import JobContext
from dsh_memory_worker.worker.jobs.logread import TransientJobError
from dsh_memory_worker.worker.jobs.repair import Repairer, RepairReport
from dsh_memory_worker.worker.jobs.repair_plan import model_client
from dsh_memory_worker.worker.jobs.retract import PlanItem, downstream_items, with_session_lease
from dsh_memory_worker.worker.jobs.runtime import Runtime
from dsh_memory_worker.worker.jobs.storeview import (
    edges,
    message_entries,
    span_summaries,
)
from dsh_memory_worker.worker.shipping.sql import delete_session
from dsh_memory_worker.worker.state.audit import ACTION_SUMMARY

ACTION_FORGET = "forget"


@dataclass(slots=True)
class ForgetResult:
    session_id: str
    items: list[PlanItem] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    repair: RepairReport = field(default_factory=RepairReport)


def plan_forget(store: MemoryStore, session_id: str, *, model: bool = True) -> list[PlanItem]:
    """What forgetting ``session_id`` changes in the store (nothing is written)."""
    items: list[PlanItem] = []
    summaries = [ref.name for ref in span_summaries(store, session_id)]
    mine = set(summaries)
    for name in message_entries(store, session_id):
        items.append(PlanItem(session_id, name, "retract", "a message of the session"))
    node = session_name(session_id)
    if store.knowledge_get(node) is not None:
        items.append(PlanItem(session_id, node, "retract", "the session node"))
    seen: set[str] = set()
    for name in summaries:
        items.append(PlanItem(session_id, name, "retract", "a span summary of the session"))
        items += downstream_items(store, session_id, name, affected=mine, seen=seen, model=model)
    return items


def forget_session(ctx: JobContext, *, dry_run: bool = False) -> ForgetResult:
    """Forget ``ctx``'s session (see the module docstring); with ``dry_run`` only plan."""
    store = ctx.store()
    client = model_client(ctx.runtime, ctx.session_id)
    sid = ctx.session_id
    result = ForgetResult(sid, plan_forget(store, sid, model=client is not None))
    if dry_run:
        return result
    with ctx.state() as repos:
        repos.sessions.set_forgotten(sid, True)
        repos.sessions.scrub_title(sid)
        # Error records hold no message text (docs/guarantees.md); they go with the session too.
        repos.failures.forget_session(sid)
        repos.model_calls.forget_session(sid)
        shipped = delete_session(repos.conn, sid)  # its shipped log bytes go with the mark
        repos.audit.record(
            ACTION_FORGET,
            "started",
            shelf=ctx.shelf,
            session_id=sid,
            detail=f"{len(result.items)} entries planned"
            + (f"; {shipped} shipped segments deleted" if shipped else ""),
        )
    ctx.runtime.state.after_purge()  # the scrubbed title leaves the state database's files
    # No model call here: archives above are dropped now and owed (or retracted, with no route).
    repairer = Repairer(ctx, store, _project(ctx), None, owe_archives=client is not None)
    if not repairer.usable():
        with ctx.state() as repos:
            repos.audit.record(
                ACTION_FORGET,
                "failed",
                shelf=ctx.shelf,
                session_id=sid,
                detail="store has no knowledge-delete",
            )
        result.repair.failed.append(sid)
        return result
    result.removed += remove_memory(store, repairer, ctx.session_id, ctx.heartbeat)
    result.repair = repairer.report
    with ctx.state() as repos:
        for subject in sorted(repos.audit.pending_repairs(sid)):  # nothing of it is left to repair
            repos.audit.record(
                ACTION_SUMMARY,
                "retracted",
                shelf=ctx.shelf,
                session_id=sid,
                subject=subject,
                detail="session forgotten",
            )
        repos.audit.record(
            ACTION_FORGET,
            "done",
            shelf=ctx.shelf,
            session_id=sid,
            detail=(
                f"removed {len(result.removed)} entries; {len(repairer.report.owed)} archives "
                "owed a regeneration; unlinked "
                f"{len(repairer.report.unlinked)} work units"
            ),
        )
    return result


def remove_memory(
    store: MemoryStore, repairer: Repairer, sid: str, heartbeat: Callable[[], None]
) -> list[str]:
    """Remove everything session ``sid`` put in memory (see the module docstring: messages,
    node, summaries and their share of the archives and work units); the names removed;
    ``heartbeat`` runs between entries. Get-before-delete throughout: run again after a crash,
    it finishes the job."""
    removed: list[str] = []
    summaries = {ref.name for ref in span_summaries(store, sid)}
    for name in sorted(summaries):
        heartbeat()
        repairer.repair_units(name, summaries)
        repairer.forget_summary(name)
    # The archives first, the summaries after: until the archives above a summary are rewritten
    # without it, the summary is how a ``forget`` run again (after a crash) finds them.
    repairer.repair_archives()
    for name in sorted(summaries):
        repairer.retract_summary(name)
    node = session_name(sid)
    for row in edges(store, C.REL_BELONG_TO, tail=node):
        store.statement_delete(row.head, row.relation, row.tail)
    for name in message_entries(store, sid):
        heartbeat()
        for row in edges(store, head=name):
            store.statement_delete(row.head, row.relation, row.tail)
        if store.knowledge_delete(name):
            removed.append(name)
    if store.knowledge_delete(node):
        removed.append(node)
    return removed + repairer.report.retracted


def forget_sessions(
    runtime: Runtime, shelf: str, sessions: list[str], *, dry_run: bool = False
) -> tuple[list[ForgetResult], dict[str, str]]:
    """Forget (or with ``dry_run`` only plan) each session under its lease, as ``memory-worker
    forget`` and the console do: the results, and a line per session that could not be
    forgotten (its lease, the store, the log; or a store without knowledge-delete)."""
    results: list[ForgetResult] = []
    failed: dict[str, str] = {}
    for sid in sessions:
        try:
            results.append(
                with_session_lease(
                    runtime,
                    sid,
                    shelf,
                    ACTION_FORGET,
                    lambda ctx: forget_session(ctx, dry_run=dry_run),
                )
            )
        except (TransientJobError, StoreError, OSError) as exc:
            failed[sid] = " ".join(str(exc).split())
    failed.update(
        {r.session_id: "store has no knowledge-delete" for r in results if r.repair.failed}
    )
    return results, failed


def _project(ctx: JobContext) -> str:
    with ctx.state() as repos:
        state = repos.sessions.get(ctx.session_id)
    return state.project if state is not None else ""
