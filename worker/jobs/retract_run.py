"""The operator's retraction run as work, without printing: plan each session, carry the plans out
under each session's lease, and audit the run. ``memory-worker retract`` prints around these, and
the console's "retract now" calls them too (one path for both)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dsh_memory_worker.memory.store.base import StoreError
from dsh_memory_worker.worker.jobs.logread import PermanentJobError, TransientJobError
from dsh_memory_worker.worker.jobs.repair_plan import model_client
from dsh_memory_worker.worker.jobs.retract import (
    SessionPlan,
    execute_plan,
    kinds_for,
    plan_session,
    with_session_lease,
)
from dsh_memory_worker.worker.jobs.runtime import Runtime
from dsh_memory_worker.worker.jobs.withdrawals import SessionLog, read_session_log
from dsh_memory_worker.worker.names import JOB_RETRACT


@dataclass(frozen=True, slots=True)
class Planned:
    """One session of a run: its log and plan, or the line saying why it has none."""

    session_id: str
    log: SessionLog | None
    plan: SessionPlan | None
    error: str


def plan_one(runtime: Runtime, shelf: str, sid: str, kinds: list[str], model: bool) -> Planned:
    """The session's log and plan, or an error line."""
    with runtime.state.transaction() as repos:
        state = repos.sessions.get(sid)
        pending = repos.audit.pending_repairs(sid)
    if state is None or not state.path:
        return Planned(sid, None, None, "unknown session (not seen by the watcher)")
    if state.forgotten:
        return Planned(sid, None, None, "session is forgotten")
    try:
        log_ = read_session_log(state, kinds, runtime.hand_off, segments=runtime.segments)
        tz = runtime.timezone()
        plan = plan_session(runtime.store(shelf), log_, pending, model=model, tz=tz)
        return Planned(sid, log_, plan, "")
    except (PermanentJobError, TransientJobError, StoreError, OSError) as exc:
        return Planned(sid, None, None, " ".join(str(exc).split()))


def plan_run(
    runtime: Runtime, shelf: str, targets: list[str], extra: list[str]
) -> tuple[list[str], list[Planned]]:
    """The marker kinds of this run (configured + ``extra``) and each target's plan."""
    kinds = kinds_for(runtime, extra)
    model = model_client(runtime) is not None
    return kinds, [plan_one(runtime, shelf, sid, kinds, model) for sid in targets]


def execute_one(runtime: Runtime, shelf: str, sid: str, log_: SessionLog) -> dict[str, Any]:
    """Carry out ``sid``'s plan under its lease: what was retracted, repaired, written, failed."""
    try:
        result = with_session_lease(
            runtime, sid, shelf, JOB_RETRACT, lambda ctx: execute_plan(ctx, log_)
        )
    except (TransientJobError, StoreError, OSError) as exc:
        return {"retracted": [], "repaired": [], "failed": [], "error": " ".join(str(exc).split())}
    repair = result.repair
    return {
        "retracted": result.retracted + repair.retracted,
        "repaired": repair.regenerated + repair.unlinked,
        "written": repair.written,
        "failed": result.failed,
        "error": None,
    }


def audit_run(
    runtime: Runtime,
    shelf: str,
    targets: list[str],
    kinds: list[str],
    results: dict[str, dict[str, Any]],
) -> None:
    """One ``retract-run`` audit row per session the run carried out."""
    with runtime.state.transaction() as repos:
        for sid in targets:
            found = results.get(sid)
            if found is None:
                continue
            outcome = "failed" if found["error"] or found["failed"] else "done"
            repos.audit.record(
                "retract-run",
                outcome,
                shelf=shelf,
                session_id=sid,
                detail=(
                    f"kinds {', '.join(kinds)}; retracted {len(found['retracted'])}, "
                    f"repaired {len(found['repaired'])}"
                    + (f"; {found['error']}" if found["error"] else "")
                ),
            )


def undone(planned: list[Planned], results: dict[str, dict[str, Any]]) -> list[str]:
    """Sessions the run could not plan, or whose plan was not fully carried out."""
    return [p.session_id for p in planned if p.error] + [
        sid for sid, r in results.items() if r["error"] or r["failed"]
    ]
