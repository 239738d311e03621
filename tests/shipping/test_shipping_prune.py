"""Pruning shipped segments removes only what no job can still need (SQLite and PostgreSQL):
nothing by default but forgotten sessions and superseded generations; below the lowest
watermark's checkpoint only on request, for a long-closed session with no failure or lease; the
header and the tail stay, and every read from a checkpoint at or above the floor still works."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import insert, select

from dsh_memory_worker.memory.dsh.reader import build_index, read_range, scan_log
from dsh_memory_worker.memory.dsh.synthetic import synthetic_header, synthetic_rows, write_log
from dsh_memory_worker.worker.names import session_lease_key
from dsh_memory_worker.worker.shipping.prune import prune_segments
from dsh_memory_worker.worker.shipping.shipper import ship_log
from dsh_memory_worker.worker.shipping.source import latest_source
from dsh_memory_worker.worker.shipping.sql import LOGS, SEGMENTS, SqlSegmentStore
from dsh_memory_worker.worker.state import StateDB
from dsh_memory_worker.worker.state.models import ProgressRow, utcnow
from dsh_memory_worker.worker.state.sessions import Checkpoint


@pytest.fixture
def store(state_db: StateDB) -> Iterator[SqlSegmentStore]:
    yield SqlSegmentStore(state_db)


def segments(store: SqlSegmentStore, sid: str) -> list[tuple[int, int, int]]:
    with store.db.read() as repos:
        rows = repos.conn.execute(
            select(SEGMENTS.c.generation, SEGMENTS.c.byte_offset, SEGMENTS.c.length)
            .where(SEGMENTS.c.session_id == sid)
            .order_by(SEGMENTS.c.generation, SEGMENTS.c.byte_offset)
        ).all()
    return [(g, o, n) for g, o, n in rows]


def shipped_session(store: SqlSegmentStore, tmp_path: Path, sid: str, n: int = 2000) -> Path:
    path = tmp_path / sid / "session.v4.jsonl"
    path.parent.mkdir()
    write_log(path, list(synthetic_rows(n)), compressed=False, header=synthetic_header(sid))
    assert ship_log(store, sid, path, segment_bytes=2000).problem is None
    return path


def record_state(
    db: StateDB, sid: str, path: Path, *, generation: int = 0, closed_days_ago: float | None = 40
) -> list[Checkpoint]:
    """What the follower of the shipped log records: scan end, checkpoints, closed."""
    source = latest_source(SqlSegmentStore(db), sid)
    assert source is not None
    scan = scan_log(source)
    index = build_index(source, spacing=100)
    points = [Checkpoint(s, o, 0) for s, o in zip(index.seqs, index.offsets, strict=True)]
    with db.transaction() as repos:
        repos.sessions.upsert_scan(
            sid,
            path=str(path),
            scan_offset=scan.position.offset,
            scan_seq=scan.position.next_seq,
            durable_end_seq=scan.position.next_seq,
            generation=generation,
            new_checkpoints=points,
        )
        if closed_days_ago is not None:
            repos.sessions.mark_closed(sid, utcnow() - dt.timedelta(days=closed_days_ago))
    return points


def set_progress(db: StateDB, sid: str, marks: dict[str, tuple[int, int]]) -> None:
    with db.transaction() as repos:
        for shelf, (logged, consolidated) in marks.items():
            repos.conn.execute(
                insert(ProgressRow).values(
                    shelf=shelf,
                    session_id=sid,
                    last_logged_seq=logged,
                    last_consolidated_seq=consolidated,
                )
            )


def test_below_the_floor_only_on_request_and_only_when_nothing_is_pending(
    store: SqlSegmentStore, state_db: StateDB, tmp_path: Path
) -> None:
    sid = "prune-a"
    path = shipped_session(store, tmp_path, sid)
    points = record_state(state_db, sid, path)
    set_progress(state_db, sid, {"a": (1500, 900), "b": (1800, 1200)})
    floor = max(p.offset for p in points if p.seq <= 900)
    before = segments(store, sid)
    gone = [s for s in before if s[1] > 0 and s[1] + s[2] <= floor]
    assert len(gone) > 20 and before[0][1] == 0

    assert prune_segments(state_db).segments == 0  # default: nothing below a watermark
    dry = prune_segments(state_db, consolidated=True, dry_run=True)
    assert (dry.segments, dry.bytes) == (len(gone), sum(n for _, _, n in gone))
    assert segments(store, sid) == before
    with state_db.transaction() as repos:
        repos.failures.record("log_span", sid, "boom")
    assert prune_segments(state_db, consolidated=True).segments == 0
    with state_db.transaction() as repos:
        repos.failures.clear("log_span", sid)
        lease = repos.leases.acquire(session_lease_key(sid), "w1", 60)
    assert lease is not None
    assert prune_segments(state_db, consolidated=True).segments == 0
    with state_db.transaction() as repos:
        repos.leases.release(lease)
    closed_recently = prune_segments(state_db, consolidated=True, closed_for=dt.timedelta(days=60))
    assert closed_recently.segments == 0

    report = prune_segments(state_db, consolidated=True)
    assert (report.segments, report.bytes) == (len(gone), sum(n for _, _, n in gone))
    assert report.lines == [
        f"{sid} generation 0: below byte {floor}: {len(gone)} segments, {report.bytes} bytes"
    ]
    assert segments(store, sid) == [s for s in before if s not in gone]

    source = latest_source(store, sid)
    assert source is not None
    index = build_index(path, spacing=100)
    for lo, hi in [(900, 950), (1200, 1400), (1990, 2000)]:
        assert read_range(source, lo, hi, index).events == read_range(path, lo, hi).events
    early = read_range(source, 10, 20, index)
    assert early.events == [] and [p.kind for p in early.problems] == ["io"]
    # The shipper still tells the log is the same one and ships what it gained, nothing more.
    with path.open("ab") as f:
        f.write(("\n".join(list(synthetic_rows(2010))[2000:]) + "\n").encode())
    again = ship_log(store, sid, path, segment_bytes=2000)
    assert (again.generation, again.new_generation, again.shipped_end) == (
        0,
        False,
        path.stat().st_size,
    )


def test_superseded_generations_go_once_the_state_moved_on(
    store: SqlSegmentStore, state_db: StateDB, tmp_path: Path
) -> None:
    sid = "prune-b"
    path = shipped_session(store, tmp_path, sid, n=300)
    record_state(state_db, sid, path, closed_days_ago=None)
    newer = path.parent / "session.v5.jsonl"
    write_log(
        newer,
        list(synthetic_rows(310)),
        compressed=False,
        header=synthetic_header(sid).replace('"version":4', '"version":5'),
    )
    assert ship_log(store, sid, newer, segment_bytes=2000).generation == 1
    old = [s for s in segments(store, sid) if s[0] == 0]
    assert prune_segments(state_db).segments == 0  # the state still reads generation 0
    record_state(state_db, sid, newer, generation=1, closed_days_ago=None)
    report = prune_segments(state_db)
    assert (report.segments, report.lines) == (
        len(old),
        [f"{sid} generation 0: superseded: {len(old)} segments, {sum(n for _, _, n in old)} bytes"],
    )
    assert {g for g, _, _ in segments(store, sid)} == {1}
    with state_db.read() as repos:
        kept = repos.conn.execute(select(LOGS.c.generation).where(LOGS.c.session_id == sid))
        assert list(kept.scalars()) == [1]


def test_a_forgotten_session_loses_every_segment_and_is_not_shipped_again(
    store: SqlSegmentStore, state_db: StateDB, tmp_path: Path
) -> None:
    sid = "prune-c"
    path = shipped_session(store, tmp_path, sid, n=200)
    record_state(state_db, sid, path, closed_days_ago=None)
    count = len(segments(store, sid))
    with state_db.transaction() as repos:
        repos.sessions.set_forgotten(sid)
    report = prune_segments(state_db)
    assert report.segments == count and report.lines[0].startswith(f"{sid}: forgotten: ")
    assert segments(store, sid) == []
    with path.open("ab") as f:
        f.write(b'{"type":"x"}\n')
    again = ship_log(store, sid, path)
    assert (again.forgotten, again.segments, again.generation) == (True, 0, None)
    assert segments(store, sid) == []
