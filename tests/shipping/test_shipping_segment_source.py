"""The byte-source seam: a log read through ``SegmentSource`` (bytes fetched by offset) gives the
same events, positions, checkpoint index, range reads and problems as the file; the complete
pieces log shipping sends are exactly the file's complete prefix (a torn tail never is)."""

from __future__ import annotations

import io
import itertools
import shutil
from pathlib import Path

import pytest
import zstandard
from dsh_fixture_logs import fixture_logs

from dsh_memory_worker.memory.dsh.complete import complete_pieces
from dsh_memory_worker.memory.dsh.reader import (
    build_index,
    iter_log,
    read_log,
    read_range,
    scan_log,
)
from dsh_memory_worker.memory.dsh.source import FileSource, SegmentSource, as_source
from dsh_memory_worker.memory.dsh.synthetic import synthetic_rows, write_log


def memory_source(data: bytes, name: str, piece: int = 7) -> SegmentSource:
    """Bytes served in stored pieces of ``piece`` bytes, as segments are."""
    segments = {off: data[off : off + piece] for off in range(0, len(data), piece)}

    def fetch(offset: int, size: int) -> bytes:
        out = bytearray()
        at = offset
        while at < min(offset + size, len(data)):
            start = at - at % piece
            chunk = segments[start]
            out += chunk[at - start : offset + size - start]
            at = start + len(chunk)
        return bytes(out)

    return SegmentSource(name, len(data), fetch)


def complete_prefix(path: Path) -> bytes:
    with path.open("rb") as f:
        pieces = list(complete_pieces(f, path.name.endswith(".zstd"), 0, target=1000))
    return b"".join(p.data for p in pieces)


@pytest.mark.parametrize("path", fixture_logs(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_a_fixture_reads_the_same_from_segments(path: Path) -> None:
    data = path.read_bytes()
    source = memory_source(data, path.name)
    from_file, from_segments = scan_log(path), scan_log(source)
    assert from_segments.events == from_file.events
    assert from_segments.position == from_file.position
    assert from_segments.index == from_file.index
    assert from_segments.torn == from_file.torn
    assert from_segments.problems == from_file.problems
    assert from_segments.header == from_file.header
    index = build_index(source, spacing=3)
    assert index == build_index(path, spacing=3)
    last = from_file.position.next_seq
    for lo, hi in [(0, 3), (2, 9), (last // 2, last), (max(last - 4, 0), last + 5)]:
        assert read_range(source, lo, hi, index) == read_range(path, lo, hi, index)
    assert read_log(source).events == read_log(path).events


@pytest.mark.parametrize("path", fixture_logs(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_complete_pieces_are_the_complete_prefix(path: Path, tmp_path: Path) -> None:
    shipped = complete_prefix(path)
    data = path.read_bytes()
    assert data.startswith(shipped)
    copy = tmp_path / path.name
    copy.write_bytes(shipped)
    whole, prefix = scan_log(path), scan_log(copy)
    if not whole.torn:
        assert shipped == data
    # The complete prefix holds every event of the complete frames / lines.
    assert prefix.torn is False
    assert [e.seq for e in prefix.events] == [
        e.seq for e in whole.events if e.seq < prefix.position.next_seq
    ]


def test_the_header_is_a_piece_of_its_own_and_pieces_end_on_boundaries(tmp_path: Path) -> None:
    raw = tmp_path / "session.v4.jsonl"
    zst = tmp_path / "session.v4.jsonl.zstd"
    rows = list(synthetic_rows(300))
    raw_starts = write_log(raw, rows, compressed=False, batch=10)
    zst_starts = write_log(zst, rows, compressed=True, batch=10)
    for path, starts in ((raw, raw_starts), (zst, zst_starts)):
        with path.open("rb") as f:
            pieces = list(complete_pieces(f, path.name.endswith(".zstd"), 0, target=4000))
        assert pieces[0].offset == 0
        assert pieces[0].end == starts[0]
        assert b"".join(p.data for p in pieces) == path.read_bytes()
        ends = [p.end for p in pieces]
        assert all(a.end == b.offset for a, b in itertools.pairwise(pieces))
        if path is zst:
            assert set(ends[:-1]) <= set(starts)  # whole frames only
        else:
            assert all(path.read_bytes()[end - 1 : end] == b"\n" for end in ends)


def test_a_torn_tail_is_never_a_piece(tmp_path: Path) -> None:
    rows = list(synthetic_rows(40))
    raw = tmp_path / "session.v4.jsonl"
    write_log(raw, rows, compressed=False)
    complete = raw.read_bytes()
    with raw.open("ab") as f:
        f.write(b'{"type":"user/mess')
    assert complete_prefix(raw) == complete
    zst = tmp_path / "session.v4.jsonl.zstd"
    write_log(zst, rows, compressed=True)
    complete = zst.read_bytes()
    frame = zstandard.ZstdCompressor(write_checksum=True).compress(rows[0].encode() + b"\n")
    with zst.open("ab") as f:
        f.write(frame[: len(frame) - 3])
    assert complete_prefix(zst) == complete
    with zst.open("rb") as f:  # a piece started inside the torn frame's absence: nothing
        assert list(complete_pieces(f, True, len(complete))) == []


def test_torn_tails_read_the_same_from_segments(tmp_path: Path) -> None:
    rows = list(synthetic_rows(60))
    zst = tmp_path / "session.v4.jsonl.zstd"
    write_log(zst, rows, compressed=True, batch=7)
    frame = zstandard.ZstdCompressor(write_checksum=True).compress(
        ("\n".join(rows[:3]) + "\n").encode()
    )
    with zst.open("ab") as f:
        f.write(frame[: len(frame) - 3])
    source = memory_source(zst.read_bytes(), zst.name, piece=1000)
    from_file, from_segments = scan_log(zst), scan_log(source)
    assert from_file.torn and from_segments.torn
    assert from_segments.events == from_file.events
    assert from_segments.position == from_file.position
    assert from_segments.problems == from_file.problems


def test_iter_log_streams_from_segments_and_resumes_at_a_position(tmp_path: Path) -> None:
    path = tmp_path / "session.v4.jsonl.zstd"
    write_log(path, list(synthetic_rows(500)), compressed=True, batch=25)
    source = memory_source(path.read_bytes(), path.name, piece=4096)
    first = scan_log(path)
    middle = read_range(path, 0, 200).events[-1].seq
    scan, events = iter_log(source, None)
    assert list(events) == first.events
    assert scan.position == first.position
    part = scan_log(path, None)
    resume = scan_log(source, part.position, part.index)
    assert resume.events == [] and resume.position == part.position
    assert (
        read_range(source, middle, middle + 50).events
        == read_range(path, middle, middle + 50).events
    )


def test_missing_segments_are_an_io_problem_not_an_exception(tmp_path: Path) -> None:
    path = tmp_path / "session.v4.jsonl"
    write_log(path, list(synthetic_rows(30)), compressed=False)
    data = path.read_bytes()
    source = SegmentSource(
        path.name,
        len(data),
        lambda off, n: data[off : min(off + n, 500)],
        "shipped log s1 generation 0 (session.v4.jsonl)",
    )
    result = scan_log(source)
    assert [str(p) for p in result.problems] == [
        "io: cannot read shipped log s1 generation 0 (session.v4.jsonl): "
        f"shipped bytes 500..{len(data)} are not stored (pruned?)"
    ]


def test_a_path_is_a_file_source_and_reads_unchanged(tmp_path: Path) -> None:
    src = fixture_logs()[0]
    path = tmp_path / src.name
    shutil.copy(src, path)
    assert as_source(path) == FileSource(path)
    assert as_source(str(path)) == FileSource(path)
    with as_source(path).open() as f:
        assert isinstance(f, io.BufferedReader)  # open_log's file object, as before
        assert f.read() == src.read_bytes()
    assert scan_log(FileSource(path)).events == scan_log(path).events
