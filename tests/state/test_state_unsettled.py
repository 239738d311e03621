"""The reconcile's SQL reading leaves out exactly the settled sessions, on SQLite and PostgreSQL.

Every combination of durable end, inherited cut, closed or open, title seq and watermarks (and
no progress row at all) is stored; :func:`unsettled_sessions` must return the sessions the
Python rule of :func:`worker.watch.owed.owed_work` does not skip — no more, no fewer.
"""

from __future__ import annotations

import datetime as dt
import itertools

import pytest
from sqlalchemy import insert

from dsh_memory_worker.worker.state import StateDB
from dsh_memory_worker.worker.state.models import ProgressRow, SessionRow
from dsh_memory_worker.worker.state.progress import Progress
from dsh_memory_worker.worker.state.sessions import SessionState
from dsh_memory_worker.worker.state.unsettled import (
    open_sessions,
    sessions_by_id,
    unsettled_sessions,
)

T0 = dt.datetime(2026, 3, 1, 9, 30, tzinfo=dt.UTC)
SHELF = "default"
PROGRESS = [None, *itertools.product((0, 5, 9), (0, 5, 9), (False, True))]


def _settled(state: SessionState, row: Progress | None, *, consolidating: bool) -> bool:
    """owed_work's rule, as written there."""
    row = row or Progress(SHELF, state.session_id)
    logged = max(row.last_logged_seq, state.inherited_cut)
    start = max(row.last_consolidated_seq, state.inherited_cut)
    end = min(state.durable_end_seq, row.last_logged_seq)
    owes_node = state.last_title_seq is not None and state.last_title_seq >= state.inherited_cut
    return (
        state.durable_end_seq <= logged
        and state.closed_at is not None
        and (row.has_session_node or not owes_node)
        and not (consolidating and end > start)
    )


def _fill(state_db: StateDB) -> dict[str, tuple[SessionState, Progress | None]]:
    sessions, progress, expected = [], [], {}
    grid = itertools.product((0, 5, 9), (0, 6), (None, T0), (None, 2, 6, 7), PROGRESS)
    for i, (durable_end, cut, closed, title, marks) in enumerate(grid):
        sid = f"s-{i:04d}"
        sessions.append(
            {
                "session_id": sid,
                "path": f"/h/{sid}/session.jsonl",
                "durable_end_seq": durable_end,
                "inherited_cut": cut,
                "closed_at": closed,
                "last_title_seq": title,
                "last_activity_at": T0 if i % 3 else None,
                "checkpoints": [[0, 0, 0]],
                "header": {"cwd": "/w"},
            }
        )
        row = None
        if marks is not None:
            logged, consolidated, noded = marks
            row = Progress(
                SHELF,
                sid,
                last_logged_seq=logged,
                last_consolidated_seq=consolidated,
                has_session_node=noded,
            )
            progress.append(
                {
                    "shelf": SHELF,
                    "session_id": sid,
                    "last_logged_seq": logged,
                    "last_consolidated_seq": consolidated,
                    "has_session_node": noded,
                }
            )
            # The same session on another shelf must not count for this one.
            progress.append(
                {
                    "shelf": "other",
                    "session_id": sid,
                    "last_logged_seq": 9,
                    "last_consolidated_seq": 9,
                    "has_session_node": True,
                }
            )
        expected[sid] = (
            SessionState(
                sid,
                f"/h/{sid}/session.jsonl",
                durable_end_seq=durable_end,
                inherited_cut=cut,
                closed_at=closed,
                last_title_seq=title,
            ),
            row,
        )
    # A forgotten session owes nothing, whatever its marks.
    sessions.append(
        {**sessions[-1], "session_id": "forgotten", "closed_at": None, "last_activity_at": T0}
    )
    for row in sessions:
        row["forgotten"] = row["session_id"] == "forgotten"
    with state_db.transaction() as repos:
        repos.conn.execute(insert(SessionRow.__table__), sessions)
        repos.conn.execute(insert(ProgressRow.__table__), progress)
    return expected


@pytest.mark.parametrize("consolidating", [False, True])
def test_unsettled_sessions_are_the_ones_owed_work_does_not_skip(
    state_db: StateDB, consolidating: bool
) -> None:
    expected = _fill(state_db)
    with state_db.read() as repos:
        found = unsettled_sessions(repos.conn, SHELF, consolidating=consolidating)
    want = {
        sid
        for sid, (state, row) in expected.items()
        if not _settled(state, row, consolidating=consolidating)
    }
    got = {state.session_id: (state, row) for state, row in found}
    assert set(got) == want
    assert 0 < len(want) < len(expected)
    for sid, (state, row) in got.items():
        wanted_state, wanted_row = expected[sid]
        assert (
            state.durable_end_seq,
            state.inherited_cut,
            state.closed_at,
            state.last_title_seq,
        ) == (
            wanted_state.durable_end_seq,
            wanted_state.inherited_cut,
            wanted_state.closed_at,
            wanted_state.last_title_seq,
        )
        assert state.header == {"cwd": "/w"} and state.checkpoints[0].seq == 0
        assert (row is None) == (wanted_row is None)
        if row is not None and wanted_row is not None:
            assert (row.last_logged_seq, row.last_consolidated_seq, row.has_session_node) == (
                wanted_row.last_logged_seq,
                wanted_row.last_consolidated_seq,
                wanted_row.has_session_node,
            )


def test_sessions_by_id_and_open_sessions(state_db: StateDB) -> None:
    expected = _fill(state_db)
    with state_db.read() as repos:
        named = sessions_by_id(repos.conn, SHELF, {"s-0000", "s-0001", "forgotten", "nope"})
        none = sessions_by_id(repos.conn, SHELF, set())
        open_ = open_sessions(repos.conn)
        listed = repos.sessions.list()
    assert sorted(state.session_id for state, _ in named) == ["s-0000", "s-0001"]
    assert dict((s.session_id, r) for s, r in named)["s-0000"] is None  # no progress row
    assert none == []
    assert sorted(s.session_id for s in open_) == sorted(
        s.session_id for s in listed if s.closed_at is None and s.last_activity_at is not None
    )
    assert open_ and all(expected[s.session_id][0].closed_at is None for s in open_)
    assert open_[0] == next(s for s in listed if s.session_id == open_[0].session_id)
