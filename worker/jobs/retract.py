"""Retraction runs: re-scan a whole session log for withdrawal markers, compare with what the
store holds, and remove what the user took back — message entries first, then the derived memory
built on them (:mod:`worker.jobs.repair`).

Used three ways: by ``log_span`` right after it retracted (:func:`repair_after_log_span`), by the
``retract`` job and the operator's ``memory-worker retract`` (:func:`plan_session`,
:func:`execute_plan`, optionally with extra marker kinds), and at startup to finish repairs a
crash interrupted (:func:`resume_repairs`). Every run holds the session's lease, so it is safe
while the daemon runs.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import tzinfo
from functools import partial
from typing import Literal, TypeVar

from dsh_memory_worker.memory import entries
from dsh_memory_worker.memory.constants import REL_BELONG_TO
from dsh_memory_worker.memory.store.base import MemoryStore, StoreError
from dsh_memory_worker.memory.titles import survey_titles
from dsh_memory_worker.worker.jobs.context import JobContext, JobOutput, skipped
from dsh_memory_worker.worker.jobs.lease_keeper import wait_for_lease
from dsh_memory_worker.worker.jobs.logread import TransientJobError
from dsh_memory_worker.worker.jobs.owed_archives import regenerate_in
from dsh_memory_worker.worker.jobs.pending_repairs import (
    OwedArchives,
    owed_archives,
    sessions_with_pending_repairs,
)
from dsh_memory_worker.worker.jobs.repair import Repairer, RepairReport
from dsh_memory_worker.worker.jobs.repair_plan import SummaryRepair, find_repairs, model_client
from dsh_memory_worker.worker.jobs.runtime import Runtime
from dsh_memory_worker.worker.jobs.session_node import reconcile_session_node
from dsh_memory_worker.worker.jobs.store_writes import existing_names
from dsh_memory_worker.worker.jobs.storeview import archives_above, derived_units, unit_sources
from dsh_memory_worker.worker.jobs.withdrawals import SessionLog, Withdrawn, read_session_log
from dsh_memory_worker.worker.names import JOB_RETRACT, session_lease_key
from dsh_memory_worker.worker.observability import RETRACTIONS
from dsh_memory_worker.worker.state.leases import Lease

log = logging.getLogger(__name__)

Action = Literal["retract", "regenerate", "unlink"]
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class PlanItem:
    """One entry a retraction run changes, and why."""

    session_id: str
    entry: str
    action: Action
    why: str


@dataclass(slots=True)
class SessionPlan:
    session_id: str
    messages: list[Withdrawn] = field(default_factory=list)
    repairs: list[SummaryRepair] = field(default_factory=list)
    items: list[PlanItem] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not self.items


@dataclass(slots=True)
class RunResult:
    session_id: str
    retracted: list[str] = field(default_factory=list)
    repair: RepairReport = field(default_factory=RepairReport)
    failed: list[str] = field(default_factory=list)
    node: JobOutput | None = None  # what re-deciding the session node did


def kinds_for(runtime: Runtime, extra: Iterable[str] = ()) -> list[str]:
    """The whitelist of a run: the configured one plus ``extra`` kinds for this run only."""
    kinds = list(runtime.settings.withdrawal_kinds)
    kinds += [k for k in extra if k not in kinds]
    return kinds


def plan_session(
    store: MemoryStore,
    log_: SessionLog,
    pending: Iterable[str] = (),
    *,
    model: bool = True,
    tz: tzinfo | None = None,
) -> SessionPlan:
    """What a retraction run would change for one session (nothing is written); ``tz``
    renders the session node's text as the worker does."""
    plan = SessionPlan(log_.session_id)
    names = log_.withdrawn_by_name()
    present = existing_names(store, list(names))
    plan.messages = [w for name, w in names.items() if name in present]
    for w in plan.messages:
        plan.items.append(
            PlanItem(
                log_.session_id,
                w.name,
                "retract",
                f"withdrawn by {w.kind} marker at seq {w.marker_seq} (message seq {w.seq})",
            )
        )
    plan.repairs = find_repairs(store, log_, pending)
    affected = {r.ref.name for r in plan.repairs}
    seen: set[str] = set()
    for repair in plan.repairs:
        name = repair.ref.name
        kept = log_.kept_names(repair.ref.from_seq, repair.ref.to_seq)
        what = (
            ("covers withdrawn " + ", ".join(repair.dirty))
            if repair.dirty
            else ("an interrupted repair")
        )
        action: Action = "regenerate" if kept and model else "retract"
        plan.items.append(PlanItem(log_.session_id, name, action, what))
        plan.items += downstream_items(
            store, log_.session_id, name, affected=affected, seen=seen, model=model
        )
    node = node_item(store, log_, tz)
    if node is not None:
        plan.items.append(node)
    return plan


def node_item(store: MemoryStore, log_: SessionLog, tz: tzinfo | None) -> PlanItem | None:
    """The session node's row of a plan: rewritten (``regenerate``) or deleted (``retract``)
    when its text is not the first clean host summary's (:mod:`memory.titles`)."""
    name = entries.session_name(log_.session_id)
    found = store.knowledge_get(name)
    if found is None:
        return None
    created = log_.state.header.get("created_at")
    choice = survey_titles(
        log_.events,
        {m.kind for m in log_.markers},
        cut=log_.state.inherited_cut,
        tz=tz,
        now_ms=created if isinstance(created, int) else 0,
    )
    if choice.text == found.content.data:
        return None
    why = (
        "; ".join(f"{s.summary.type} seq {s.summary.seq} {s.describe()}" for s in choice.tainted())
        or "its text is not its host summary's"
    )
    action: Action = "retract" if choice.chosen is None else "regenerate"
    return PlanItem(log_.session_id, name, action, why)


def downstream_items(
    store: MemoryStore,
    session_id: str,
    summary: str,
    *,
    affected: set[str],
    seen: set[str],
    model: bool,
) -> list[PlanItem]:
    """What removing or regenerating ``summary`` changes further on: each work unit derived from
    it (unlinked when it has a source outside ``affected``, else retracted) and every archive
    above it, up the tiers (regenerated with a model, else retracted). Units and archives
    already in ``seen`` are skipped; the new ones are added to it."""
    items: list[PlanItem] = []
    for unit in derived_units(store, summary):
        if unit in seen:
            continue
        seen.add(unit)
        others = [s for s in unit_sources(store, unit) if s not in affected]
        items.append(
            PlanItem(
                session_id,
                unit,
                "unlink" if others else "retract",
                f"derived from {summary}"
                + (f"; kept for {', '.join(others)}" if others else " only"),
            )
        )
    todo = archives_above(store, summary)
    while todo:
        archive = todo.pop(0)
        if archive in seen:
            continue
        seen.add(archive)
        items.append(
            PlanItem(
                session_id,
                archive,
                "regenerate" if model else "retract",
                f"archive above {summary}",
            )
        )
        todo.extend(archives_above(store, archive))
    return items


def execute_plan(ctx: JobContext, log_: SessionLog) -> RunResult:
    """Carry out a retraction run for ``ctx``'s session (re-planned under the lease)."""
    store = ctx.store()
    result = RunResult(ctx.session_id)
    with ctx.state() as repos:
        pending = repos.audit.pending_repairs(ctx.session_id)
    plan = plan_session(store, log_, pending)
    for w in plan.messages:
        ctx.heartbeat()
        if retract_message(ctx, store, w):
            result.retracted.append(w.name)
        else:
            result.failed.append(w.name)
    repairer = Repairer(ctx, store, log_.project, model_client(ctx.runtime, ctx.session_id))
    result.repair = repairer.repair(log_, find_repairs(store, log_, pending))
    result.failed += result.repair.failed
    # The session node is derived text too: re-decided with this run's marker kinds (a node
    # not written yet is the session_node job's, which sees the same markers).
    if node_written(ctx):
        kinds = kinds_for(ctx.runtime, sorted({m.kind for m in log_.markers}))
        result.node = reconcile_session_node(ctx, kinds)
    return result


def retract_message(ctx: JobContext, store: MemoryStore, w: Withdrawn) -> bool:
    """Delete one withdrawn message entry and its ``belongTo`` edge; audited."""
    if not store.features().delete:
        ctx.warn_once(
            "retract-no-delete",
            "withdrawn messages cannot be retracted: this store has no knowledge-delete",
        )
        ctx.record_retraction(
            w.name, w.ordinal, w.marker_seq, w.kind, "failed", "store has no knowledge-delete"
        )
        return False
    store.statement_delete(w.name, REL_BELONG_TO, entries.session_name(ctx.session_id))
    removed = store.knowledge_delete(w.name)
    ctx.record_retraction(
        w.name,
        w.ordinal,
        w.marker_seq,
        w.kind,
        "retracted" if removed else "absent",
        "retraction run",
    )
    if removed:
        RETRACTIONS.inc()
    return True


# ----------------------------------------------------------------------------------- as jobs


def retract_job(ctx: JobContext) -> JobOutput:
    """The ``retract`` job: a retraction run of one session with the configured whitelist."""
    with ctx.state() as repos:
        state = repos.sessions.get(ctx.session_id)
    if state is None or not state.path:
        return skipped("session not seen by the watcher yet")
    if state.forgotten:  # only what its forget left owed: the archives it dropped
        names = owed_archives(ctx.runtime).get(ctx.session_id, [])
        if not names:
            return skipped("session is forgotten")
        done = regenerate_in(names, ctx)
        return JobOutput(status="done", detail=f"regenerated {len(done)} owed archives")
    log_ = read_session_log(
        state, kinds_for(ctx.runtime), ctx.runtime.hand_off, segments=ctx.runtime.segments
    )
    result = execute_plan(ctx, log_)
    node_changed = result.node is not None and result.node.status == "done"
    return JobOutput(
        status="done" if result.retracted or result.repair.changed or node_changed else "skipped",
        detail=f"retracted {len(result.retracted)}, repaired {result.repair.changed}",
        retracted=len(result.retracted),
        written=len(result.repair.written),
    )


def repair_after_log_span(
    ctx: JobContext, withdrew_earlier: bool, saw_markers: bool = False
) -> JobOutput | None:
    """Called by ``log_span`` after its writes: when a marker withdrew messages of an earlier
    span, or a repair of this session is unfinished, repair the derived memory now; when the
    span held markers (``saw_markers``), re-decide a written session node. Returns what the
    session node reconciliation did, if it ran."""
    with ctx.read() as repos:
        repair = withdrew_earlier or bool(repos.audit.pending_repairs(ctx.session_id))
        state = repos.sessions.get(ctx.session_id)
    if state is None or not (repair or saw_markers):
        return None
    try:
        if not repair:
            return reconcile_session_node(ctx) if node_written(ctx) else None
        log_ = read_session_log(
            state, kinds_for(ctx.runtime), ctx.runtime.hand_off, segments=ctx.runtime.segments
        )
        result = execute_plan(ctx, log_)
    except (TransientJobError, StoreError) as exc:
        # The span is logged and its watermark advanced: hand the repair (its intent is
        # recorded) to a ``retract`` job that is retried with backoff, instead of failing the
        # span, whose retry would find nothing left to log.
        enqueue = ctx.runtime.enqueue
        if enqueue is None:
            raise
        log.warning(
            "repair of %s after a withdrawal failed (%s); a retract job retries it",
            ctx.session_id,
            " ".join(str(exc).split()),
        )
        enqueue(JOB_RETRACT, ctx.session_id, ctx.shelf)
        return None
    if result.repair.changed:
        log.info(
            "repaired %s after a withdrawal: %d regenerated, %d retracted, %d unlinked",
            ctx.session_id,
            len(result.repair.regenerated),
            len(result.repair.retracted),
            len(result.repair.unlinked),
        )
    return result.node


def node_written(ctx: JobContext) -> bool:
    """Whether the session node was written for this shelf (it may need a rewrite)."""
    with ctx.read() as repos:
        found = repos.progress.find(ctx.shelf, ctx.session_id)
    return found is not None and found.has_session_node


def with_session_lease(
    runtime: Runtime,
    session_id: str,
    shelf: str,
    job: str,
    fn: Callable[[JobContext], T],
    *,
    wait_s: float = 60.0,
) -> T:
    """Run ``fn`` holding ``session_id``'s lease, waiting up to ``wait_s`` for a busy one."""

    def acquire() -> Lease | None:
        with runtime.state.transaction() as repos:
            return repos.leases.acquire(
                session_lease_key(session_id), runtime.owner, runtime.settings.lease_ttl_s
            )

    lease = wait_for_lease(
        acquire, wait_s=wait_s, busy=f"{session_id} is busy (another worker holds its lease)"
    )
    ctx = JobContext(runtime, job, session_id, shelf, lease)
    try:
        return fn(ctx)
    finally:
        with runtime.state.transaction() as repos:
            repos.leases.release(ctx.lease)


def resume_repairs(runtime: Runtime, shelf: str) -> list[str]:
    """Finish every repair a crash interrupted (intent recorded, not done); returns the
    sessions resumed. Errors are logged, not raised (the next start tries again)."""
    pending = set(sessions_with_pending_repairs(runtime))
    with runtime.state.transaction() as repos:
        sessions = [s for s in repos.sessions.list() if s.session_id in pending]
    resumed: list[str] = []
    for state in sessions:
        try:
            with_session_lease(
                runtime,
                state.session_id,
                shelf,
                JOB_RETRACT,
                lambda ctx, state=state: execute_plan(  # type: ignore[misc]
                    ctx,
                    read_session_log(
                        state, kinds_for(runtime), runtime.hand_off, segments=runtime.segments
                    ),
                ),
            )
            resumed.append(state.session_id)
        except (StoreError, TransientJobError, OSError) as exc:
            log.warning("could not finish the interrupted repair of %s: %s", state.session_id, exc)
    if resumed:
        log.warning("finished interrupted repairs of %d session(s)", len(resumed))
    return resumed


def regenerate_owed_archives(runtime: Runtime, shelf: str) -> OwedArchives:
    """Regenerate every archive a model-less ``forget`` dropped
    (:mod:`worker.jobs.owed_archives`); errors are reported in the result, never raised (the
    next run tries again). A session whose archives are all back has no failing retract left."""
    result = OwedArchives()
    owing = owed_archives(runtime)
    for sid, names in owing.items():
        try:
            done = with_session_lease(
                runtime, sid, shelf, JOB_RETRACT, partial(regenerate_in, names)
            )
        except (StoreError, TransientJobError, OSError) as exc:
            result.owed += names
            result.why = " ".join(str(exc).split())
            continue
        result.regenerated += done
    left = owed_archives(runtime)
    settled = [sid for sid in owing if sid not in left]
    if settled:  # the retract that failed on these (the model was down) is done now
        with runtime.state.transaction() as repos:
            for sid in settled:
                repos.failures.clear(JOB_RETRACT, sid)
    result.owed = sorted(name for names in left.values() for name in names)
    if result.owed and not result.why:
        result.why = "no model route is configured"
    if result.regenerated:
        log.info("regenerated %d archive(s) forget had dropped", len(result.regenerated))
    return result
