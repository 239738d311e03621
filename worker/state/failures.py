"""Task failures: one row per (task, subject), counting attempts; the operator's retry list."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from sqlalchemy import bindparam, delete, select, update

from dsh_memory_worker.worker.state import prepared
from dsh_memory_worker.worker.state._sql import insert_ignore, one_line
from dsh_memory_worker.worker.state.leases import ClockedRepo
from dsh_memory_worker.worker.state.models import FailureRow

ERROR_MAX = 2000

# Run after every successful job (it forgets the job's failure row): built once.
_CLEAR = (
    delete(FailureRow)
    .where(FailureRow.task == bindparam("p_task"), FailureRow.session_id == bindparam("p_sid"))
    .returning(FailureRow.id)
)


@dataclass(frozen=True)
class Failure:
    task: str
    session_id: str
    attempts: int
    last_error: str
    permanent: bool
    first_at: dt.datetime
    last_at: dt.datetime


_COLUMNS = (
    FailureRow.task,
    FailureRow.session_id,
    FailureRow.attempts,
    FailureRow.last_error,
    FailureRow.permanent,
    FailureRow.first_at,
    FailureRow.last_at,
)


def describe_error(error: BaseException | str) -> str:
    """One line for an error: ``ValueError: bad input`` (capped at 2000 characters)."""
    if isinstance(error, BaseException):
        text = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
    else:
        text = error
    return one_line(text, ERROR_MAX)


class FailureRepo(ClockedRepo):
    def record(
        self, task: str, session_id: str, error: BaseException | str, permanent: bool = False
    ) -> Failure:
        """Count one more failed attempt of ``task`` for ``session_id`` (or another subject key;
        ``''`` when there is none)."""
        now = self._clock()
        insert_ignore(
            self._conn,
            FailureRow.__table__,
            {
                "task": task,
                "session_id": session_id,
                "attempts": 0,
                "last_error": "",
                "permanent": False,
                "first_at": now,
                "last_at": now,
            },
            conflict=("task", "session_id"),
        )
        self._conn.execute(
            update(FailureRow)
            .where(FailureRow.task == task, FailureRow.session_id == session_id)
            .values(
                attempts=FailureRow.attempts + 1,
                last_error=describe_error(error),
                permanent=permanent,
                last_at=now,
            )
        )
        found = self.get(task, session_id)
        assert found is not None
        return found

    def get(self, task: str, session_id: str) -> Failure | None:
        row = self._conn.execute(
            select(*_COLUMNS).where(FailureRow.task == task, FailureRow.session_id == session_id)
        ).first()
        return Failure(**row._asdict()) if row is not None else None

    def clear(self, task: str, session_id: str) -> bool:
        """Forget the failure (the task succeeded, or the operator retries it)."""
        return prepared.first(self._conn, _CLEAR, {"p_task": task, "p_sid": session_id}) is not None

    def forget_session(self, session_id: str) -> int:
        """Delete every failure row of ``session_id`` (``forget``); returns how many."""
        result = self._conn.execute(
            delete(FailureRow).where(FailureRow.session_id == session_id).returning(FailureRow.id)
        )
        return len(result.all())

    def list(self, *, permanent: bool | None = None, task: str | None = None) -> list[Failure]:
        """Failures, most recent first; filter on permanence or task when given."""
        query = select(*_COLUMNS).order_by(FailureRow.last_at.desc(), FailureRow.id.desc())
        if permanent is not None:
            query = query.where(FailureRow.permanent.is_(permanent))
        if task is not None:
            query = query.where(FailureRow.task == task)
        return [Failure(**row._asdict()) for row in self._conn.execute(query)]
