"""Truncated, garbled and bit-flipped logs never raise and yield exactly the complete lines."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import zstandard
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dsh_memory_worker.memory.dsh.reader import read_log, scan_log
from dsh_memory_worker.memory.dsh.synthetic import synthetic_rows, write_log

SETTINGS = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def _lines_in_prefix(data: bytes) -> int:
    """Oracle: complete body lines in a plaintext prefix (minus the header line)."""
    return max(data.count(b"\n") - 1, 0)


def test_zstd_truncated_at_every_byte_of_last_frame(tmp_path: Path) -> None:
    path = tmp_path / "session.v4.jsonl.zstd"
    # Two small complete frames before the 40-row last one: what precedes the last frame only
    # has to be complete frames; their size just multiplies the cost of each of the ~1,500 reads.
    starts = write_log(
        path, synthetic_rows(49), compressed=True, batch=40, level=1, first_batches=(5, 4)
    )
    full = read_log(path)
    assert len(starts) == 3 and len(full.events) == 49 and full.problems == []
    data = path.read_bytes()
    last = starts[-1]
    plain_before = zstandard.ZstdDecompressor().decompressobj().decompress(data[:0]) or b""
    # plaintext of the complete frames, decoded independently
    complete_plain = b"".join(
        zstandard.ZstdDecompressor().decompressobj().decompress(data[a:b])
        for a, b in zip([0, *starts], [*starts], strict=False)
    )
    assert plain_before == b""
    cut = tmp_path / "cut.zstd"
    for size in range(last, len(data)):
        cut.write_bytes(data[:size])
        log = read_log(cut)
        recovered = zstandard.ZstdDecompressor().decompressobj().decompress(data[last:size])
        expected = _lines_in_prefix(complete_plain + recovered)
        assert log.events == full.events[:expected], size
        assert log.position.offset == last
        assert log.position.next_seq == expected
        assert log.ok, (size, log.problems)
        if size > last:
            assert log.torn and [p.kind for p in log.problems] == ["torn"]


def test_zstd_torn_multi_block_frame_recovers_complete_lines(tmp_path: Path) -> None:
    """A last frame of several zstd blocks: a torn copy yields the lines of its whole blocks."""
    path = tmp_path / "session.v4.jsonl.zstd"
    # One small complete frame (a turn) before the 1,500-row last frame of several blocks: the
    # rows before the last frame only have to be whole; each of the ~80 reads parses them again.
    starts = write_log(
        path, synthetic_rows(1509), compressed=True, batch=1500, level=1, first_batches=(9,)
    )
    assert len(starts) == 2
    full = read_log(path)
    data = path.read_bytes()
    last = starts[-1]
    head_plain = zstandard.ZstdDecompressor().decompressobj().decompress(data[: starts[0]])
    body_plain = zstandard.ZstdDecompressor().decompressobj().decompress(data[starts[0] : last])
    cut = tmp_path / "cut.zstd"
    counts = set()
    for size in range(last + 1, len(data), max(1, (len(data) - last) // 80)):
        cut.write_bytes(data[:size])
        log = read_log(cut)
        recovered = zstandard.ZstdDecompressor().decompressobj().decompress(data[last:size])
        expected = _lines_in_prefix(head_plain + body_plain + recovered)
        assert log.events == full.events[:expected], size
        assert log.ok and log.torn
        assert (log.position.offset, log.position.resume_seq) == (last, 9)
        counts.add(expected)
    assert min(counts) == 9 and len(counts) >= 3  # some torn copies recover part of the frame


def test_raw_truncated_at_every_byte_of_last_line(tmp_path: Path) -> None:
    path = tmp_path / "session.v4.jsonl"
    write_log(path, synthetic_rows(30), compressed=False)
    data = path.read_bytes()
    full = read_log(path)
    last = data.rstrip(b"\n").rfind(b"\n") + 1
    cut = tmp_path / "cut.jsonl"
    for size in range(last, len(data)):
        cut.write_bytes(data[:size])
        log = read_log(cut)
        assert log.events == full.events[:29], size
        assert log.position.offset == last and log.position.next_seq == 29
        assert log.ok
        assert log.torn == (size > last)


@SETTINGS
@given(where=st.integers(min_value=0, max_value=59), garbage=st.binary(min_size=1, max_size=40))
def test_garbage_line_is_damaged_or_corrupt(tmp_path: Path, where: int, garbage: bytes) -> None:
    rows = list(synthetic_rows(60))
    line = garbage.replace(b"\n", b" ")
    try:
        if isinstance(json.loads(line), dict):
            return  # a JSON object is not garbage; other tests cover bad envelopes
    except ValueError:
        pass
    path = tmp_path / "session.v4.jsonl"
    body = [r.encode() for r in rows]
    body.insert(where, line)
    path.write_bytes(b"\n".join([write_header(), *body]) + b"\n")
    log = read_log(path)
    assert [e.seq for e in log.events] == list(range(where))
    later_turn_end = any(b'"turn/end"' in r for r in body[where + 1 :])
    kinds = [p.kind for p in log.problems]
    if later_turn_end:
        assert kinds == ["corrupt"] and not log.ok
    else:
        assert kinds == ["damaged"] and log.ok and log.torn
    assert all("\n" not in str(p) for p in log.problems)


def write_header() -> bytes:
    return json.dumps(
        {"type": "session", "version": 4, "id": "g", "createdAt": 1, "isSeeded": False,
         "delegationDepth": 0}
    ).encode()  # fmt: skip


@pytest.mark.parametrize("compressed", [True, False])
def test_bit_flips_give_an_outcome_never_a_crash(tmp_path: Path, compressed: bool) -> None:
    path = tmp_path / ("session.v4.jsonl.zstd" if compressed else "session.v4.jsonl")
    write_log(path, synthetic_rows(40), compressed=compressed, batch=10)
    clean = read_log(path)
    data = bytearray(path.read_bytes())
    flipped = tmp_path / path.name.replace("session", "flipped")
    step = max(1, len(data) // 400)
    outcomes = set()
    for pos in range(0, len(data), step):
        for bit in (0, 5):
            mutated = bytearray(data)
            mutated[pos] ^= 1 << bit
            flipped.write_bytes(bytes(mutated))
            log = read_log(flipped)
            for problem in log.problems:
                assert problem.kind in {
                    "torn",
                    "damaged",
                    "corrupt",
                    "unsupported",
                    "invalid",
                    "io",
                }
                assert "\n" not in problem.message and problem.message
            if not log.problems:
                outcomes.add("clean")
                assert len(log.events) == len(clean.events)
            else:
                outcomes.update(p.kind for p in log.problems)
    assert "corrupt" in outcomes


def test_unknown_required_type_is_unsupported(tmp_path: Path) -> None:
    rows = list(synthetic_rows(12))
    rows.insert(5, json.dumps({"type": "future/thing", "seq": 5, "time": 1, "data": {}}))
    rows = [json.dumps({**json.loads(r), "seq": i}) for i, r in enumerate(rows)]
    path = tmp_path / "session.v4.jsonl"
    write_log(path, rows, compressed=False)
    log = read_log(path)
    assert [p.kind for p in log.problems] == ["unsupported"]
    assert "future/thing" in log.problems[0].message
    assert len(log.events) == 5 and not log.ok


def test_newer_version_is_unsupported_and_empty_is_torn(tmp_path: Path) -> None:
    path = tmp_path / "session.v9.jsonl"
    path.write_text(json.dumps({"type": "session", "version": 9, "id": "x"}) + "\n")
    log = read_log(path)
    assert [p.kind for p in log.problems] == ["unsupported"] and log.header is None
    empty = tmp_path / "session.jsonl"
    empty.write_bytes(b"")
    assert [p.kind for p in scan_log(empty).problems] == ["torn"]
    missing = read_log(tmp_path / "nope.jsonl")
    assert [p.kind for p in missing.problems] == ["io"]


def test_message_without_source_kind_is_reported_not_fatal(tmp_path: Path) -> None:
    rows = [json.loads(r) for r in synthetic_rows(9)]
    rows[2]["data"]["source"] = {"form": "snapshot"}
    path = tmp_path / "session.v4.jsonl"
    write_log(path, [json.dumps(r) for r in rows], compressed=False)
    log = read_log(path)
    assert len(log.events) == 9 and log.ok
    assert [str(p) for p in log.problems] == [
        "invalid: seq 2: message source has no kind (DSH's own loader refuses this log)"
    ]
    assert log.events[2].message is not None and log.events[2].message.source_kind == ""
