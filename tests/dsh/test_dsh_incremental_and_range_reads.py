"""Incremental scans return each event once; range reads through the index equal full slices."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dsh_memory_worker.memory.dsh.position import CheckpointIndex, ScanPosition
from dsh_memory_worker.memory.dsh.ranges import decode_seq_ranges, encode_seq_ranges
from dsh_memory_worker.memory.dsh.reader import (
    SessionLog,
    build_index,
    read_log,
    read_range,
    scan_log,
)
from dsh_memory_worker.memory.dsh.synthetic import synthetic_rows, write_log

SETTINGS = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@given(st.lists(st.integers(min_value=0, max_value=200), max_size=40))
def test_seq_range_round_trip(seqs: list[int]) -> None:
    stored = encode_seq_ranges(seqs)
    assert list(decode_seq_ranges(stored)) == seqs


def test_range_encoding_examples() -> None:
    assert encode_seq_ranges([5, 6, 7, 8, 12]) == [[5, 8], 12]
    assert encode_seq_ranges([7, 8]) == [7, 8]
    assert encode_seq_ranges([31, 32, 5, 6, 10]) == [31, 32, 5, 6, 10]
    assert decode_seq_ranges([[47, 49]]) == (47, 48, 49)


def _grow(data: bytes, cuts: list[int], target: Path) -> list[int]:
    """Replay a log growing through the byte sizes ``cuts``; returns every seq delivered."""
    seen: list[int] = []
    position: ScanPosition | None = None
    index: CheckpointIndex | None = None
    for size in [*cuts, len(data)]:
        target.write_bytes(data[:size])
        result = scan_log(target, position, index)
        assert result.ok, result.problems
        seen.extend(e.seq for e in result.events)
        position = ScanPosition.from_json(json.loads(json.dumps(result.position.to_json())))
        index = CheckpointIndex.from_json(json.loads(json.dumps(result.index.to_json())))
    return seen


@pytest.fixture(scope="module")
def grown_logs(tmp_path_factory: pytest.TempPathFactory) -> dict[bool, bytes]:
    """The bytes of a 300-event log, zstd (True) and raw (False): the same for every example."""
    logs = {}
    for packed in (True, False):
        path = tmp_path_factory.mktemp("grow") / ("session.v4.jsonl" + ".zstd" * packed)
        write_log(path, synthetic_rows(300), compressed=packed, batch=37)
        logs[packed] = path.read_bytes()
    return logs


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(min_value=0, max_value=1), min_size=1, max_size=8), st.booleans())
def test_incremental_scan_delivers_each_event_once(
    grown_logs: dict[bool, bytes], fractions: list[float], packed: bool
) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        name = "session.v4.jsonl.zstd" if packed else "session.v4.jsonl"
        data = grown_logs[packed]
        cuts = sorted(int(f * len(data)) for f in fractions)
        seen = _grow(data, cuts, Path(tmp) / ("grow-" + name))
        assert seen == list(range(300))


@pytest.fixture(scope="module")
def range_logs(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[Path, SessionLog]]:
    """A zstd and a raw log of 1,500 events, each with its full read (the reference slices); no
    example rewrites them, so one full read per log serves all of them."""
    logs = []
    for name in ("session.v4.jsonl.zstd", "session.v4.jsonl"):
        path = tmp_path_factory.mktemp("range") / name
        write_log(path, synthetic_rows(1500), compressed=name.endswith(".zstd"), batch=23)
        logs.append((path, read_log(path)))
    return logs


@SETTINGS
@given(data=st.data())
def test_range_read_through_index_equals_slice(
    range_logs: list[tuple[Path, SessionLog]], data: st.DataObject
) -> None:
    for path, full in range_logs:
        index = CheckpointIndex.from_json(full.index.to_json())
        start = data.draw(st.integers(min_value=0, max_value=1510))
        stop = data.draw(st.integers(min_value=0, max_value=1520))
        result = read_range(path, start, stop, index)
        assert result.problems == []
        assert result.events == full.events[start:stop]


def test_index_is_sparse_and_rebuildable(tmp_path: Path) -> None:
    path = tmp_path / "session.v4.jsonl.zstd"
    write_log(path, synthetic_rows(5000), compressed=True, batch=40)
    log = read_log(path)
    assert 5000 // 512 <= len(log.index) <= 5000 // 512 + 2
    assert all(b - a >= 512 for a, b in zip(log.index.seqs, log.index.seqs[1:], strict=False))
    rebuilt = build_index(path)
    assert rebuilt == log.index
    assert read_range(path, 4900, 4905).events == log.events[4900:4905]


def test_stale_index_falls_back_to_a_full_read(tmp_path: Path) -> None:
    path = tmp_path / "session.v4.jsonl"
    write_log(path, synthetic_rows(200), compressed=False)
    full = read_log(path)
    wrong = CheckpointIndex(10, [0, 100], [full.index.offsets[0], full.index.offsets[0] + 7])
    result = read_range(path, 120, 130, wrong)
    assert result.events == full.events[120:130]
    assert [p.kind for p in result.problems] == ["invalid"]


def test_truncated_file_reports_io_for_stored_position(tmp_path: Path) -> None:
    path = tmp_path / "session.v4.jsonl"
    write_log(path, synthetic_rows(20), compressed=False)
    result = scan_log(path, ScanPosition(10_000_000, 20))
    assert result.events == [] and [p.kind for p in result.problems] == ["io"]
