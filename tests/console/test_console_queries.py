"""The console's read-only queries (``worker.state.browse``) on SQLite and PostgreSQL: keyset pages
of sessions visit every session exactly once, newest activity first, also when activities tie,
and the filters keep exactly what they name; a session's message pages, each decoded from the
checkpoint index, together are the whole log's messages in order."""

from __future__ import annotations

import datetime as dt
import sys
from pathlib import Path

from conftest import REPO
from state_db_support import pg_state_url, state_db, state_url  # noqa: F401

from dsh_memory_worker.worker.state import StateDB
from dsh_memory_worker.worker.state.browse import BrowseRepo

sys.path.insert(0, str(REPO / "benchmarks"))
from worker_dshgen import conversation, embedded_runtime

T0 = dt.datetime(2026, 3, 1, 12, 0, tzinfo=dt.UTC)


def _seed(db: StateDB) -> dict[str, dt.datetime]:
    """125 sessions in two projects; activities in groups of five equal times (ties)."""
    when = {}
    with db.transaction() as repos:
        for i in range(125):
            sid = f"s-{i:03d}"
            when[sid] = T0 + dt.timedelta(minutes=i // 5)
            repos.sessions.upsert_scan(
                sid,
                path=f"/x/{sid}",
                scan_offset=0,
                scan_seq=0,
                durable_end_seq=10,
                project=f"p{i % 2}",
                last_activity_at=when[sid],
            )
    return when


def test_keyset_pages_visit_every_session_once_newest_first(state_db: StateDB) -> None:  # noqa: F811
    when = _seed(state_db)
    seen: list[str] = []
    after = None
    pages = 0
    while True:
        with state_db.read() as repos:
            page = BrowseRepo(repos.conn).sessions("default", after=after, limit=20)
        seen += [line.session_id for line in page.rows]
        pages += 1
        if page.next is None:
            break
        after = page.next
    assert pages == 7
    assert seen == sorted(when, key=lambda sid: (when[sid], sid), reverse=True)
    assert len(set(seen)) == 125


def test_filters_by_project_and_activity(state_db: StateDB) -> None:  # noqa: F811
    when = _seed(state_db)
    with state_db.read() as repos:
        browse = BrowseRepo(repos.conn)
        odd = browse.sessions("default", project="p1", limit=200).rows
        window = browse.sessions(
            "default",
            since=T0 + dt.timedelta(minutes=3),
            until=T0 + dt.timedelta(minutes=5),
            limit=200,
        ).rows
        assert browse.projects() == ["p0", "p1"]
    assert {line.session_id for line in odd} == {f"s-{i:03d}" for i in range(1, 125, 2)}
    assert {line.session_id for line in window} == {
        sid
        for sid, at in when.items()
        if T0 + dt.timedelta(minutes=3) <= at < T0 + dt.timedelta(minutes=5)
    }
    assert [line.lag for line in odd][:1] == [10]  # nothing logged: the whole durable end


def test_session_pages_are_the_whole_log_in_order(tmp_path: Path) -> None:
    from dsh_memory_worker.worker.console.session_view import PAGE, Surveys, page_events, page_range
    from dsh_memory_worker.worker.watch.watcher import Watcher

    conversation(tmp_path / "dsh", "s-long", "/home/dev/long", 430)  # 860 messages
    runtime = embedded_runtime(tmp_path)
    try:
        Watcher(runtime, lambda *args: None).poll_once()
        with runtime.state.read() as repos:
            state = repos.sessions.get("s-long")
        assert state is not None and len(state.checkpoints) >= 4
        found = Surveys().get(runtime, state)
        assert found.pages == 9 and len(found.seqs) == 860
        seqs: list[int] = []
        for page in range(found.pages):
            start, end = page_range(found, state, page)
            events = page_events(runtime, state, start, end)
            assert events[0].seq == start
            loggable = [e.seq for e in events if e.seq in set(found.seqs)]
            assert len(loggable) == (PAGE if page < 8 else 60)
            seqs += loggable
        assert seqs == found.seqs
    finally:
        runtime.close()


def test_sessions_are_dated_by_their_last_message_not_the_file(tmp_path: Path) -> None:
    """The demo's V4 session was written in 2026-09 (its events' times); its file is from
    today. The sessions page dates it, sorts it and filters it by its last message's time."""
    import json

    from dsh_memory_worker.worker.commands.demo_home import lay_out_fixtures
    from dsh_memory_worker.worker.watch.watcher import Watcher

    lay_out_fixtures(REPO / "tests" / "fixtures" / "dsh", tmp_path / "dsh")
    (log,) = (tmp_path / "dsh").rglob("7d3c1f0e-*/session.v4.jsonl")
    events = [json.loads(line) for line in log.read_text().splitlines()[1:]]
    last_ms = max(e["time"] for e in events if e["type"] in ("user/message", "assistant/message"))
    last = dt.datetime.fromtimestamp(last_ms / 1000, dt.UTC)
    assert dt.datetime.fromtimestamp(log.stat().st_mtime, dt.UTC) - last > dt.timedelta(days=30)
    runtime = embedded_runtime(tmp_path)
    try:
        Watcher(runtime, lambda *args: None).poll_once()
        with runtime.state.read() as repos:
            browse = BrowseRepo(repos.conn)
            (line,) = [r for r in browse.sessions("default").rows if r.session_id in log.parts[-2]]
            day = last.replace(hour=0, minute=0, second=0, microsecond=0)
            that_day = browse.sessions("default", since=day, until=day + dt.timedelta(days=1))
            later = browse.sessions("default", since=day + dt.timedelta(days=1))
        assert line.last_message_at == last and line.activity == last
        assert line.session_id in {r.session_id for r in that_day.rows}
        assert line.session_id not in {r.session_id for r in later.rows}
    finally:
        runtime.close()
