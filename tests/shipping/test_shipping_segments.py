"""Shipping into the state database (SQLite and PostgreSQL): every fixture log shipped and read
back from its segments gives the events of the file's complete part; logs that grow while being
shipped (raw and zstd, with torn tails in between) end with segments that are exactly the
file's complete prefix; re-shipping is a no-op; a rewritten log is a new generation."""

from __future__ import annotations

import dataclasses
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
import zstandard
from dsh_fixture_logs import fixture_logs
from sqlalchemy import select

from dsh_memory_worker.memory.dsh.reader import build_index, read_log, read_range, scan_log
from dsh_memory_worker.memory.dsh.synthetic import synthetic_header, synthetic_rows, write_log
from dsh_memory_worker.worker.shipping.shipper import ship_log
from dsh_memory_worker.worker.shipping.source import latest_source, shipped_source
from dsh_memory_worker.worker.shipping.sql import SEGMENTS, SqlSegmentStore
from dsh_memory_worker.worker.shipping.store import ShipConflict, ShippedLog
from dsh_memory_worker.worker.state import StateDB


@pytest.fixture
def store(state_db: StateDB) -> Iterator[SqlSegmentStore]:
    yield SqlSegmentStore(state_db)


def segments(store: SqlSegmentStore, sid: str, generation: int) -> list[tuple[int, bytes]]:
    with store.db.read() as repos:
        rows = repos.conn.execute(
            select(SEGMENTS.c.byte_offset, SEGMENTS.c.data)
            .where(SEGMENTS.c.session_id == sid, SEGMENTS.c.generation == generation)
            .order_by(SEGMENTS.c.byte_offset)
        ).all()
    return [(off, bytes(data)) for off, data in rows]


def shipped_bytes(store: SqlSegmentStore, sid: str, generation: int) -> bytes:
    """The segments concatenated, checking they tile [0, end) with no gap and no overlap."""
    out = b""
    for offset, data in segments(store, sid, generation):
        assert offset == len(out)
        out += data
    return out


def complete_end(path: Path) -> int:
    """Independently of the shipper: where the file's complete frames / lines end."""
    data = path.read_bytes()
    if not path.name.endswith(".zstd"):
        return data.rfind(b"\n") + 1
    end = 0
    while end < len(data):
        reader = zstandard.ZstdDecompressor().decompressobj()
        try:
            reader.decompress(data[end:])
        except zstandard.ZstdError:
            break
        if not reader.eof:
            break
        end = len(data) - len(reader.unused_data)
    return end


@pytest.mark.parametrize("path", fixture_logs(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_a_fixture_shipped_reads_back_the_same(
    path: Path, store: SqlSegmentStore, tmp_path: Path
) -> None:
    sid = read_log(path).header.id  # type: ignore[union-attr]
    report = ship_log(store, sid, path, segment_bytes=2000)
    assert report.problem is None
    assert report.generation == 0 and report.new_generation
    end = complete_end(path)
    assert report.shipped_end == end
    assert shipped_bytes(store, sid, 0) == path.read_bytes()[:end]
    prefix = tmp_path / path.name
    prefix.write_bytes(path.read_bytes()[:end])
    source = latest_source(store, sid)
    assert source is not None
    from_file, from_segments = scan_log(prefix), scan_log(source)
    assert from_segments.events == from_file.events
    assert from_segments.position == from_file.position
    assert from_segments.index == from_file.index
    assert from_segments.problems == from_file.problems
    index = build_index(source, spacing=4)
    assert index == build_index(prefix, spacing=4)
    last = from_file.position.next_seq
    for lo, hi in [(0, 5), (last // 3, last // 3 + 7), (max(last - 6, 0), last)]:
        assert read_range(source, lo, hi, index).events == read_range(prefix, lo, hi).events
    again = ship_log(store, sid, path, segment_bytes=2000)
    assert (again.segments, again.generation, again.new_generation) == (0, 0, False)


def _append_raw(path: Path, rows: list[str], torn: bool) -> None:
    with path.open("ab") as f:
        f.write(("\n".join(rows) + "\n").encode())
        if torn:
            f.write(b'{"type":"assistant/mess')


def _truncate_torn(path: Path, end: int) -> None:
    with path.open("r+b") as f:
        f.truncate(end)


@pytest.mark.parametrize("compressed", [False, True], ids=["raw", "zstd"])
def test_a_growing_log_is_shipped_complete_part_by_part(
    compressed: bool, store: SqlSegmentStore, tmp_path: Path
) -> None:
    sid = "grow-0001"
    path = tmp_path / ("session.v4.jsonl.zstd" if compressed else "session.v4.jsonl")
    rows = list(synthetic_rows(900))
    write_log(path, [], compressed=compressed, header=synthetic_header(sid))
    cctx = zstandard.ZstdCompressor(write_checksum=True)
    at = 0
    for step, size in enumerate([1, 40, 3, 200, 77, 579]):
        batch, at = rows[at : at + size], at + size
        complete = path.stat().st_size
        if compressed:
            with path.open("ab") as f:
                f.write(
                    b"".join(
                        cctx.compress(("\n".join(batch[i : i + 10]) + "\n").encode())
                        for i in range(0, len(batch), 10)
                    )
                )
                complete = f.tell()
                torn = cctx.compress(b'{"type":"x"}\n' * 30)
                f.write(torn[: len(torn) // 2])
        else:
            _append_raw(path, batch, torn=True)
            complete = path.read_bytes().rfind(b"\n") + 1
        report = ship_log(store, sid, path, segment_bytes=1500)
        assert (report.problem, report.generation) == (None, 0)
        assert report.new_generation == (step == 0)
        assert report.shipped_end == complete
        assert shipped_bytes(store, sid, 0) == path.read_bytes()[:complete]
        _truncate_torn(path, complete)  # DSH truncates a torn tail before writing again
        from_file, from_segments = scan_log(path), scan_log(latest_source(store, sid))  # type: ignore[arg-type]
        assert from_segments.events == from_file.events
        assert len(from_file.events) == at
    assert len(segments(store, sid, 0)) > 10


def test_reshipping_a_range_is_a_no_op_and_a_gap_is_refused(
    store: SqlSegmentStore, tmp_path: Path
) -> None:
    sid = "idem-0001"
    path = tmp_path / "session.v4.jsonl"
    write_log(path, list(synthetic_rows(50)), compressed=False, header=synthetic_header(sid))
    report = ship_log(store, sid, path, segment_bytes=1000)
    before = segments(store, sid, 0)
    data = path.read_bytes()
    offset, piece = before[2]
    assert store.append(sid, 0, offset, piece) is False
    assert store.append(sid, 0, 0, data) is False
    with pytest.raises(ShipConflict, match="does not start at the shipped end"):
        store.append(sid, 0, report.shipped_end + 1, b"x\n")
    with pytest.raises(ShipConflict, match="does not start at the shipped end"):
        store.append(sid, 0, report.shipped_end - 2, b"ab\ncd\n")
    with pytest.raises(ShipConflict, match="never started"):
        store.append(sid, 1, 0, b"x\n")
    assert segments(store, sid, 0) == before
    assert store.get(sid, 0).shipped_end == len(data)  # type: ignore[union-attr]


def test_a_rewritten_log_is_shipped_as_a_new_generation(
    store: SqlSegmentStore, tmp_path: Path
) -> None:
    sid = "gen-0001"
    home = tmp_path / "s"
    home.mkdir()
    v3 = home / "session.v3.jsonl.zstd"
    rows = list(synthetic_rows(120))
    header = synthetic_header(sid)
    write_log(v3, rows[:100], compressed=True, header=header.replace('"version":4', '"version":3'))
    first = ship_log(store, sid, v3)
    assert (first.generation, first.new_generation) == (0, True)
    # DSH publishes the next generation beside it: a new log, shipped from byte 0.
    v4 = home / "session.v4.jsonl.zstd"
    write_log(v4, rows, compressed=True, header=header)
    second = ship_log(store, sid, v4)
    assert (second.generation, second.new_generation) == (1, True)
    assert shipped_bytes(store, sid, 1) == v4.read_bytes()
    assert shipped_bytes(store, sid, 0) == v3.read_bytes()  # the old one is kept as it was
    # The same file name rewritten with other contents (shorter, then same length): new again.
    write_log(v4, rows[:60], compressed=True, header=header)
    third = ship_log(store, sid, v4)
    assert (third.generation, third.new_generation) == (2, True)
    write_log(v4, list(reversed(rows[:60])), compressed=True, header=header)
    fourth = ship_log(store, sid, v4)
    assert (fourth.generation, fourth.new_generation) == (3, True)
    assert shipped_bytes(store, sid, 3) == v4.read_bytes()
    source = latest_source(store, sid)
    assert source is not None and scan_log(source).events == scan_log(v4).events
    old = store.get(sid, 1)
    assert (
        old is not None
        and scan_log(shipped_source(store, old)).events
        == scan_log(tmp_path_copy(v4, rows, header, tmp_path)).events
    )


def tmp_path_copy(v4: Path, rows: list[str], header: str, tmp_path: Path) -> Path:
    """What generation 1 held: the 120-row v4 log."""
    path = tmp_path / "gen1" / v4.name
    path.parent.mkdir()
    write_log(path, rows, compressed=True, header=header)
    return path


def test_what_is_not_shipped(store: SqlSegmentStore, tmp_path: Path) -> None:
    sid = "none-0001"
    path = tmp_path / "session.v4.jsonl"
    path.write_bytes(b'{"type":"session","version":4,"id":"none-0001"')  # header still torn
    report = ship_log(store, sid, path)
    assert (report.generation, report.problem, store.latest(sid)) == (None, None, None)
    write_log(path, list(synthetic_rows(5)), compressed=False, header=synthetic_header("other"))
    report = ship_log(store, sid, path)
    assert report.problem == "header id 'other' is not 'none-0001'; not shipped"
    link = tmp_path / "link.jsonl"
    link.symlink_to(path)
    report = ship_log(store, sid, link)
    assert report.problem == f"{link} is a symbolic link (not followed); not shipped"
    assert store.latest(sid) is None
    shutil.rmtree(tmp_path / "missing", ignore_errors=True)


class StaleStore(SqlSegmentStore):
    """Answers ``latest`` with the shipped end as an earlier read saw it (a racing shipper)."""

    def __init__(self, db: StateDB, stale_end: int) -> None:
        super().__init__(db)
        self.stale_end = stale_end

    def latest(self, session_id: str) -> ShippedLog | None:
        log = super().latest(session_id)
        return None if log is None else dataclasses.replace(log, shipped_end=self.stale_end)


def test_a_racing_shipper_with_a_stale_end_writes_nothing_twice(
    store: SqlSegmentStore, tmp_path: Path
) -> None:
    sid = "race-0001"
    path = tmp_path / "session.v4.jsonl"
    rows = list(synthetic_rows(600))
    write_log(path, rows[:400], compressed=False, header=synthetic_header(sid))
    first = ship_log(store, sid, path, segment_bytes=1000)
    before = segments(store, sid, 0)
    stale = StaleStore(store.db, before[3][0])
    late = ship_log(stale, sid, path, segment_bytes=1500)  # all of it already shipped
    assert (late.segments, late.generation, late.new_generation, late.problem) == (
        0,
        0,
        False,
        None,
    )
    assert segments(store, sid, 0) == before
    _append_raw(path, rows[400:], torn=False)
    late = ship_log(stale, sid, path, segment_bytes=1500)
    # Pieces cut from the stale end lie inside what is shipped (no-ops) until one straddles
    # its end: refused, nothing written. Never a second copy.
    assert late.segments == 0 and late.problem is not None
    assert re.fullmatch(
        rf"{sid} generation 0: a segment at byte (\d+) does not start at the shipped end "
        rf"{first.shipped_end}; shipped up to \1",
        late.problem,
    )
    assert (
        shipped_bytes(store, sid, 0)[: first.shipped_end] == path.read_bytes()[: first.shipped_end]
    )
    done = ship_log(store, sid, path, segment_bytes=1000)
    assert done.problem is None and done.shipped_end == path.stat().st_size
    assert shipped_bytes(store, sid, 0) == path.read_bytes()
