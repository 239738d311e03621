"""Which fork children still owe their one check against an incomplete seed: read from the state
database alone.

Kept apart from :mod:`worker.jobs.seed_repair`, which checks and repairs them, so that asking
(every start of ``run``) does not import the repair machinery when the answer is none.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlalchemy import select

from dsh_memory_worker.worker.names import ACTION_SEED_CHECK
from dsh_memory_worker.worker.state.models import AuditRow, ProgressRow, SessionRow

if TYPE_CHECKING:
    from dsh_memory_worker.worker.jobs.runtime import Runtime


def unchecked_children(runtime: Runtime, shelf: str) -> list[str]:
    """Fork children logged on ``shelf`` with no ``seed-check`` record of that shelf (nor the
    watcher's, made when it first saw the child with its whole seed)."""
    checked = (
        select(AuditRow.session_id)
        .where(AuditRow.action == ACTION_SEED_CHECK)
        .where((AuditRow.shelf == shelf) | AuditRow.shelf.is_(None))
        .where(AuditRow.session_id.is_not(None))
    )
    query = (
        select(SessionRow.session_id)
        .join(ProgressRow, ProgressRow.session_id == SessionRow.session_id)
        .where(ProgressRow.shelf == shelf)
        .where(SessionRow.inherited_cut > 0)
        .where(SessionRow.forgotten.is_(False))
        .where(ProgressRow.last_logged_seq > 0)
        .where(SessionRow.session_id.not_in(checked))
        .order_by(SessionRow.session_id)
    )
    with runtime.state.read() as repos:
        return [sid for (sid,) in repos.conn.execute(query)]
