"""Diagnostics of model calls: a row written before each call and settled after it.

Rows hold the route, effort, outcome, timing and token counts — never model output; ``detail``
is at most 200 characters (an error class or HTTP status).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Literal

from sqlalchemy import delete, insert, select, update

from dsh_memory_worker.worker.state._sql import one_line
from dsh_memory_worker.worker.state.leases import ClockedRepo
from dsh_memory_worker.worker.state.models import ModelCallRow

CallOutcome = Literal["pending", "ok", "incomplete", "error"]
CALL_OUTCOMES: tuple[str, ...] = ("pending", "ok", "incomplete", "error")
DETAIL_MAX = 200


@dataclass(frozen=True)
class ModelCall:
    id: int
    at: dt.datetime
    purpose: str
    route_index: int
    base_url: str
    model: str
    effort: str
    outcome: str
    ms: int | None
    input_tokens: int | None
    output_tokens: int | None
    reasoning_tokens: int | None
    session_id: str | None
    detail: str | None


_COLUMNS = tuple(getattr(ModelCallRow, f) for f in ModelCall.__dataclass_fields__)


class ModelCallRepo(ClockedRepo):
    def start(
        self,
        *,
        purpose: str,
        route_index: int,
        base_url: str,
        model: str,
        effort: str = "",
        session_id: str | None = None,
    ) -> int:
        """Record a call about to be made (outcome ``pending``); returns its id."""
        return int(
            self._conn.execute(
                insert(ModelCallRow)
                .values(
                    at=self._clock(),
                    purpose=purpose,
                    route_index=route_index,
                    base_url=base_url,
                    model=model,
                    effort=effort,
                    outcome="pending",
                    session_id=session_id,
                )
                .returning(ModelCallRow.id)
            ).scalar_one()
        )

    def settle(
        self,
        call_id: int,
        outcome: CallOutcome,
        *,
        ms: int | None = None,
        input_tokens: int | None = None,
        output_tokens: int | None = None,
        reasoning_tokens: int | None = None,
        detail: str | None = None,
    ) -> bool:
        """Record how the call ended; False when no such call exists."""
        if outcome not in CALL_OUTCOMES:
            raise ValueError(f"unknown model call outcome {outcome!r}")
        result = self._conn.execute(
            update(ModelCallRow)
            .where(ModelCallRow.id == call_id)
            .values(
                outcome=outcome,
                ms=ms,
                input_tokens=input_tokens,
                output_tokens=output_tokens,
                reasoning_tokens=reasoning_tokens,
                detail=one_line(detail, DETAIL_MAX) if detail else None,
            )
            .returning(ModelCallRow.id)
        )
        return result.first() is not None

    def recent(self, limit: int = 100) -> list[ModelCall]:
        """The newest calls first."""
        query = select(*_COLUMNS).order_by(ModelCallRow.id.desc()).limit(limit)
        return [ModelCall(**row._asdict()) for row in self._conn.execute(query)]

    def forget_session(self, session_id: str) -> int:
        """Delete every call made for ``session_id`` (``forget``); returns how many."""
        result = self._conn.execute(
            delete(ModelCallRow)
            .where(ModelCallRow.session_id == session_id)
            .returning(ModelCallRow.id)
        )
        return len(result.all())

    def prune(self, keep: int = 1000) -> int:
        """Delete all but the newest ``keep`` rows; returns how many were deleted."""
        query = delete(ModelCallRow)
        if keep > 0:
            oldest_kept = self._conn.execute(
                select(ModelCallRow.id).order_by(ModelCallRow.id.desc()).offset(keep - 1).limit(1)
            ).scalar_one_or_none()
            if oldest_kept is None:
                return 0
            query = query.where(ModelCallRow.id < oldest_kept)
        result = self._conn.execute(query.returning(ModelCallRow.id))
        return len(result.all())
