"""``worker.state.prepared``: the hot statements run on SQLite's DBAPI connection read and write
exactly what ``Connection.execute`` reads and writes, raise the same SQLAlchemy exceptions, and
leave PostgreSQL (and statements with column defaults) on ``Connection.execute``."""

from __future__ import annotations

import datetime as dt

import pytest
from sqlalchemy import Table, event
from sqlalchemy.exc import IntegrityError

from dsh_memory_worker.worker.state import StateDB, prepared
from dsh_memory_worker.worker.state._sql import update_by_key
from dsh_memory_worker.worker.state.leases import _ACQUIRE, _RELEASE
from dsh_memory_worker.worker.state.models import SessionRow
from dsh_memory_worker.worker.state.progress import ProgressRepo
from dsh_memory_worker.worker.state.sessions import _GET, Checkpoint

_SESSIONS: Table = SessionRow.__table__  # type: ignore[assignment]
_NOW = dt.datetime(2026, 3, 4, 5, 6, 7, 891_000, tzinfo=dt.UTC)


def _seed(state_db: StateDB) -> None:
    with state_db.transaction() as repos:
        repos.sessions.upsert_scan(
            "s-prep",
            path="/logs/s-prep",
            scan_offset=120,
            scan_seq=7,
            durable_end_seq=7,
            header={"id": "s-prep", "version": 4, "nested": {"a": [1, 2]}},
            new_checkpoints=[Checkpoint(0, 0, 0), Checkpoint(5, 90, 2)],
            last_activity_at=_NOW,
            title=(3, "Ünïcode title"),
        )
        repos.sessions.mark_closed("s-prep", at=_NOW + dt.timedelta(seconds=1))


def test_rows_equal_connection_execute_on_both_dialects(state_db: StateDB) -> None:
    _seed(state_db)
    with state_db.transaction() as repos:
        fast = prepared.fetch(repos.conn, _GET, {"p_sid": "s-prep"})
        slow = [tuple(row) for row in repos.conn.execute(_GET, {"p_sid": "s-prep"})]
        assert fast == slow and len(fast) == 1
        if repos.conn.dialect.name == "sqlite":  # it did run on the DBAPI connection
            assert prepared._for(_GET, repos.conn.dialect) is not None
        state = repos.sessions.get("s-prep")
    assert state is not None
    assert state.header == {"id": "s-prep", "version": 4, "nested": {"a": [1, 2]}}
    assert state.checkpoints == (Checkpoint(0, 0, 0), Checkpoint(5, 90, 2))
    assert state.last_activity_at == _NOW and state.last_activity_at.tzinfo is not None
    assert state.closed_at == _NOW + dt.timedelta(seconds=1)
    assert state.title_text == "Ünïcode title" and state.forgotten is False


def test_returning_statements_and_bound_times_match(state_db: StateDB) -> None:
    now = dt.datetime.now(dt.UTC)
    expires = now + dt.timedelta(seconds=30)
    params = {"p_key": "k-prep", "p_owner": "me", "p_now": now, "p_expires": expires}
    with state_db.transaction() as repos:
        lease = repos.leases.acquire("k-prep", "me", 30)
        assert lease is not None and lease.token == 1
        assert prepared.first(repos.conn, _ACQUIRE, params) is None  # held: not taken again
        assert prepared.fetch(
            repos.conn, _RELEASE, {"p_key": "k-prep", "p_token": 1, "p_owner": "me"}
        ) == [(1,)]
        assert prepared.first(repos.conn, _ACQUIRE, params) == (2,)  # free: token + 1
        held = repos.leases.holder("k-prep")
    assert held is not None and held.token == 2
    assert held.expires_at == expires


def test_first_advance_creates_the_row_and_moves_it_once(state_db: StateDB) -> None:
    with state_db.transaction() as repos:
        lease = repos.leases.acquire("session:s-adv", "me", 60)
        assert lease is not None
        progress: ProgressRepo = repos.progress
        assert progress.find("default", "s-adv") is None
        assert progress.advance(
            "default",
            "s-adv",
            expected_version=0,
            lease_token=lease.token,
            last_logged_seq=40,
            has_session_node=True,
        )
        assert not progress.advance(
            "default", "s-adv", expected_version=0, lease_token=lease.token, last_logged_seq=50
        )
        found = progress.find("default", "s-adv")
    assert found is not None
    assert (found.last_logged_seq, found.has_session_node, found.version) == (40, True, 1)


def test_a_driver_error_is_the_sqlalchemy_exception(state_db: StateDB) -> None:
    _seed(state_db)
    with pytest.raises(IntegrityError), state_db.transaction() as repos:
        repos.sessions.scrub_title("s-prep")  # written, then rolled back with the error
        update_by_key(repos.conn, _SESSIONS, "session_id", "s-prep", {"path": None})  # NOT NULL
    with state_db.read() as repos:  # rolled back as a whole
        state = repos.sessions.get("s-prep")
    assert state is not None and state.title_text == "Ünïcode title"


def test_statements_with_column_defaults_keep_connection_execute(state_db: StateDB) -> None:
    with state_db.transaction() as repos:
        state = repos.sessions.upsert_scan(
            "s-new", path="/logs/s-new", scan_offset=0, scan_seq=0, durable_end_seq=0
        )
    assert (state.generation, state.project, state.header, state.forgotten) == (0, "", {}, False)


def test_a_cursor_listener_still_sees_every_statement(state_db: StateDB) -> None:
    _seed(state_db)
    seen: list[str] = []

    def record(_conn: object, _cursor: object, statement: str, *_rest: object) -> None:
        seen.append(" ".join(statement.split())[:30])

    event.listen(state_db.engine, "after_cursor_execute", record)
    try:
        with state_db.transaction() as repos:
            assert repos.sessions.get("s-prep") is not None
            assert repos.failures.clear("log_span", "s-prep") is False
    finally:
        event.remove(state_db.engine, "after_cursor_execute", record)
    assert [s.split()[0] for s in seen if not s.startswith("BEGIN")] == ["SELECT", "DELETE"]
    if state_db.engine.dialect.name == "sqlite":
        assert seen[0] == "BEGIN IMMEDIATE"
