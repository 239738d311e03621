"""The operator's numbers, computed once from the state database for both ``memory-worker
status`` and the Prometheus state gauges: per session and in total — durable end, logged and
consolidated watermarks, logging lag, consolidation lag, last failure, retractions pending
(repairs started and not finished, plus retractions the store refused) — and retraction records
by outcome, and the model calls and tokens the ``model_calls`` table keeps, by purpose."""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select

from dsh_memory_worker.worker.names import session_lease_key
from dsh_memory_worker.worker.state.database import StateDB
from dsh_memory_worker.worker.state.models import ModelCallRow


def _failure(last: Any) -> dict[str, Any] | None:
    if last is None:
        return None
    return {
        "task": last.task,
        "attempts": last.attempts,
        "error": last.last_error,
        "permanent": last.permanent,
        "at": last.last_at.isoformat(),
    }


def unrecorded_row(session_id: str) -> dict[str, Any]:
    """The row of a session the state database holds no scan of: its figures unknown, nothing
    pending, no lease, no failure (the caller adds what it knows)."""
    return {
        "session_id": session_id,
        "project": "",
        "path": "",
        "durable_end_seq": None,
        "inherited_cut": None,
        "last_logged_seq": None,
        "last_consolidated_seq": None,
        "last_belong_to_index": None,
        "has_session_node": False,
        "lag": None,
        "consolidation_lag": None,
        "closed": False,
        "forgotten": False,
        "retractions_pending": 0,
        "lease": None,
        "last_failure": None,
    }


def figures(state: StateDB, shelf: str) -> dict[str, Any]:
    """``{"sessions": [...], "total": {...}}`` (JSON-ready).

    Long on purpose: one read transaction gathers every row and one pass per session turns them
    into figures, so ``status`` and the metrics never see two different moments."""

    rows: list[dict[str, Any]] = []
    with state.transaction() as repos:
        progress = {p.session_id: p for p in repos.progress.list(shelf)}
        failures: dict[str, list[Any]] = {}
        for failure in repos.failures.list():
            failures.setdefault(failure.session_id, []).append(failure)
        outcomes: dict[str, int] = {}
        pending_by_session: dict[str, int] = {}
        last_outcome: dict[tuple[str, str], str] = {}
        for retraction in repos.audit.retractions(shelf=shelf):
            outcomes[retraction.outcome] = outcomes.get(retraction.outcome, 0) + 1
            last_outcome[(retraction.session_id, retraction.entry)] = retraction.outcome
        unretracted: dict[str, int] = {}
        for (session_id, _entry), outcome in last_outcome.items():
            if outcome == "failed":
                unretracted[session_id] = unretracted.get(session_id, 0) + 1
        for session in repos.sessions.list(include_forgotten=True):
            row = progress.get(session.session_id)
            logged = row.last_logged_seq if row is not None else 0
            consolidated = row.last_consolidated_seq if row is not None else 0
            start = max(logged, session.inherited_cut)
            lease = repos.leases.holder(session_lease_key(session.session_id))
            pending = len(repos.audit.pending_repairs(session.session_id)) + unretracted.get(
                session.session_id, 0
            )
            pending_by_session[session.session_id] = pending
            rows.append(
                {
                    "session_id": session.session_id,
                    "project": session.project,
                    "path": session.path,
                    "durable_end_seq": session.durable_end_seq,
                    "inherited_cut": session.inherited_cut,
                    "last_logged_seq": logged,
                    "last_consolidated_seq": consolidated,
                    "last_belong_to_index": row.last_belong_to_index if row else 0,
                    "has_session_node": bool(row and row.has_session_node),
                    "lag": 0 if session.forgotten else max(0, session.durable_end_seq - start),
                    "consolidation_lag": 0
                    if session.forgotten
                    else max(0, logged - max(consolidated, session.inherited_cut)),
                    "closed": session.closed_at is not None,
                    "forgotten": session.forgotten,
                    "retractions_pending": pending,
                    "lease": None
                    if lease is None
                    else {
                        "owner": lease.owner,
                        "token": lease.token,
                        "expires_at": lease.expires_at.isoformat(),
                    },
                    "last_failure": _failure((failures.get(session.session_id) or [None])[0]),
                }
            )
        # Sessions the watcher could not record (a corrupt or unsupported log) still show up,
        # with their failure.
        listed = {row["session_id"] for row in rows}
        for session_id, found in sorted(failures.items()):
            if session_id in listed:
                continue
            rows.append({**unrecorded_row(session_id), "last_failure": _failure(found[0])})
        tokens: dict[str, dict[str, int]] = {}
        calls: dict[str, int] = {}
        for purpose, inp, out, reasoning, count in repos.conn.execute(
            select(
                ModelCallRow.purpose,
                func.sum(ModelCallRow.input_tokens),
                func.sum(ModelCallRow.output_tokens),
                func.sum(ModelCallRow.reasoning_tokens),
                func.count(),
            ).group_by(ModelCallRow.purpose)
        ):
            tokens[purpose] = {
                "input": int(inp or 0),
                "output": int(out or 0),
                "reasoning": int(reasoning or 0),
            }
            calls[purpose] = int(count)
    total = {
        "sessions": len(rows),
        "durable_end_seq": sum(r["durable_end_seq"] or 0 for r in rows),
        "lag": sum(r["lag"] or 0 for r in rows),
        "consolidation_lag": sum(r["consolidation_lag"] or 0 for r in rows),
        "failing": sum(1 for r in rows if r["last_failure"] is not None),
        "retractions_pending": sum(pending_by_session.values()),
        "retractions": outcomes,
        "model_tokens": tokens,
        "model_calls": calls,
    }
    return {"shelf": shelf, "sessions": rows, "total": total}
