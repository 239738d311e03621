"""Watermarks per (shelf, session), advanced only forward and only by the lease holder.

``ProgressRepo.advance`` is one conditional ``UPDATE``: it changes the row only when the version
still equals the one the caller read, the caller's lease token is still the current unexpired
holding of the session's lease, and every watermark given is ≥ the stored one. Anything else
returns False and changes nothing (process-then-advance: the work was done first, so a lost
advance only means the work is redone, idempotently).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from sqlalchemy import ColumnElement, Executable, bindparam, select, update

from dsh_memory_worker.worker.names import session_lease_key
from dsh_memory_worker.worker.state import prepared
from dsh_memory_worker.worker.state._sql import delete_where, insert_ignore
from dsh_memory_worker.worker.state.leases import LEASE_IS_HELD, ClockedRepo, held_params
from dsh_memory_worker.worker.state.models import ProgressRow

# Watermarks that only move forward (a smaller value is refused).
FORWARD_ONLY = (
    "last_logged_seq",
    "last_consolidated_seq",
    "last_belong_to_index",
    "last_check_turn",
)


@dataclass(frozen=True)
class Progress:
    shelf: str
    session_id: str
    last_logged_seq: int = 0
    last_consolidated_seq: int = 0
    last_belong_to_index: int = 0
    has_session_node: bool = False
    pending_tokens: int = 0
    last_check_turn: int = 0
    version: int = 0


#: The columns a :class:`Progress` is read from, in field order (``Progress(*row)``).
COLUMNS = (
    ProgressRow.shelf,
    ProgressRow.session_id,
    ProgressRow.last_logged_seq,
    ProgressRow.last_consolidated_seq,
    ProgressRow.last_belong_to_index,
    ProgressRow.has_session_node,
    ProgressRow.pending_tokens,
    ProgressRow.last_check_turn,
    ProgressRow.version,
)


_TIME = ProgressRow.__table__.c.updated_at.type


@cache
def _advance_statement(
    forward: tuple[str, ...], has_session_node: bool | None, pending_tokens: bool
) -> Executable:
    """The conditional ``UPDATE`` of :meth:`ProgressRepo.advance` for one shape of call (which
    watermarks, the session-node flag, whether the token counter is set), built once: every
    value is a bound parameter (``v_<field>``; ``p_*`` for the row, version and lease)."""
    conditions: list[ColumnElement[bool]] = [
        ProgressRow.shelf == bindparam("p_shelf"),
        ProgressRow.session_id == bindparam("p_sid"),
        ProgressRow.version == bindparam("p_version"),
        LEASE_IS_HELD,
    ]
    values: dict[str, object] = {}
    for name in forward:
        conditions.append(getattr(ProgressRow, name) <= bindparam(f"v_{name}"))
        values[name] = bindparam(f"v_{name}")
    if has_session_node:
        values["has_session_node"] = True
    elif has_session_node is not None:
        conditions.append(ProgressRow.has_session_node.is_(False))
    if pending_tokens:
        values["pending_tokens"] = bindparam("v_pending_tokens")
    values["version"] = ProgressRow.version + 1
    values["updated_at"] = bindparam("p_updated", type_=_TIME)
    return update(ProgressRow).where(*conditions).values(**values).returning(ProgressRow.version)


class ProgressRepo(ClockedRepo):
    """Read and conditionally advance watermarks inside the caller's transaction."""

    # Read by every job: built once, with bound parameters.
    _FIND = select(*COLUMNS).where(
        ProgressRow.shelf == bindparam("p_shelf"), ProgressRow.session_id == bindparam("p_sid")
    )

    def find(self, shelf: str, session_id: str) -> Progress | None:
        row = prepared.first(self._conn, self._FIND, {"p_shelf": shelf, "p_sid": session_id})
        return Progress(*row) if row is not None else None

    def get(self, shelf: str, session_id: str) -> Progress:
        """The row for (shelf, session), created with every watermark at 0 when missing."""
        found = self.find(shelf, session_id)
        if found is not None:
            return found
        insert_ignore(
            self._conn,
            ProgressRow.__table__,
            {"shelf": shelf, "session_id": session_id, "updated_at": self._clock()},
        )
        created = self.find(shelf, session_id)
        assert created is not None
        return created

    def advance(
        self,
        shelf: str,
        session_id: str,
        *,
        expected_version: int,
        lease_token: int,
        lease_key: str | None = None,
        last_logged_seq: int | None = None,
        last_consolidated_seq: int | None = None,
        last_belong_to_index: int | None = None,
        last_check_turn: int | None = None,
        has_session_node: bool | None = None,
        pending_tokens: int | None = None,
    ) -> bool:
        """Apply the given fields if version, lease and forward-only rules all hold.

        ``lease_key`` defaults to the session's lease (``session_lease_key(session_id)``).
        ``has_session_node`` can become True but never go back to False. ``pending_tokens`` is
        a counter, not a watermark: it may be set to any value ≥ 0 (a reset after consolidation).
        Returns True when the row was changed (its version is then ``expected_version + 1``).
        A missing row counts as all zeros at version 0.
        """
        forward = {
            "last_logged_seq": last_logged_seq,
            "last_consolidated_seq": last_consolidated_seq,
            "last_belong_to_index": last_belong_to_index,
            "last_check_turn": last_check_turn,
        }
        given = {k: v for k, v in forward.items() if v is not None}
        if any(v < 0 for v in given.values()):
            raise ValueError("watermarks are never negative")
        if pending_tokens is not None and pending_tokens < 0:
            raise ValueError("pending_tokens is never negative")
        now = self._clock()
        params: dict[str, object] = {
            "p_shelf": shelf,
            "p_sid": session_id,
            "p_version": expected_version,
            "p_updated": now,
            **{f"v_{k}": v for k, v in given.items()},
            **held_params(lease_key or session_lease_key(session_id), lease_token, now),
        }
        if pending_tokens is not None:
            params["v_pending_tokens"] = pending_tokens
        statement = _advance_statement(tuple(given), has_session_node, pending_tokens is not None)
        if expected_version == 0:  # a first advance may find no row yet: version 0 is implied
            insert_ignore(
                self._conn,
                ProgressRow.__table__,
                {"shelf": shelf, "session_id": session_id, "updated_at": now},
            )
        return prepared.first(self._conn, statement, params) is not None

    def reset(self, shelf: str, session_id: str) -> Progress:
        """Put every watermark back to 0 (operator reset / reconcile found the store empty).

        The only way a watermark moves backward; the version still increases, so a worker
        holding the old version cannot advance over the reset.
        """
        self.get(shelf, session_id)
        self._conn.execute(
            update(ProgressRow)
            .where(ProgressRow.shelf == shelf, ProgressRow.session_id == session_id)
            .values(
                last_logged_seq=0,
                last_consolidated_seq=0,
                last_belong_to_index=0,
                has_session_node=False,
                pending_tokens=0,
                last_check_turn=0,
                version=ProgressRow.version + 1,
                updated_at=self._clock(),
            )
        )
        reset = self.find(shelf, session_id)
        assert reset is not None
        return reset

    def delete(self, shelf: str, session_id: str) -> bool:
        return delete_where(
            self._conn,
            ProgressRow,
            ProgressRow.session_id,
            ProgressRow.shelf == shelf,
            ProgressRow.session_id == session_id,
        )

    def list(self, shelf: str | None = None) -> list[Progress]:
        """Every progress row (of one shelf when given), ordered by shelf then session."""
        query = select(*COLUMNS).order_by(ProgressRow.shelf, ProgressRow.session_id)
        if shelf is not None:
            query = query.where(ProgressRow.shelf == shelf)
        return [Progress(**row._asdict()) for row in self._conn.execute(query)]
