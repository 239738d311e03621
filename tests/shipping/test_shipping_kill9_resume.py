"""A shipper killed with ``kill -9`` in the middle of shipping a growing log, then restarted:
the shipped segments concatenated are exactly the file's bytes (no duplicate, no missing byte),
on SQLite and PostgreSQL, for raw and zstd logs written with torn tails along the way."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import zstandard
from cli_fork import CliProcess, start_cli
from sqlalchemy import select

from dsh_memory_worker.memory.dsh.reader import scan_log
from dsh_memory_worker.memory.dsh.synthetic import synthetic_header, synthetic_rows, write_log
from dsh_memory_worker.worker.shipping.source import latest_source
from dsh_memory_worker.worker.shipping.sql import SEGMENTS, SqlSegmentStore
from dsh_memory_worker.worker.state import StateDB

REPO = Path(__file__).resolve().parents[2]
SID = "kill-0001"


def wait_for(condition: Callable[[], bool], what: str, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def start_shipper(url: str, path: Path) -> CliProcess:
    """``python -m dsh_memory_worker.worker.shipping.follow``: a process of its own (kill -9 ends
    it, SIGTERM stops
    its loop), forked from the tests' pre-imported server (``cli_fork``) rather than a fresh
    interpreter. Its standard error is drained while it runs (a shipper with much to say must
    not block on a full pipe and miss SIGTERM's end of the loop)."""
    return start_cli(
        [url, f"{SID}={path}", "--segment-bytes", "1024", "--interval", "0.01"],
        module="dsh_memory_worker.worker.shipping.follow",
        cwd=REPO,
        preload=("dsh_memory_worker.worker.shipping.follow", "psycopg"),
    )


def stop(proc: CliProcess, sig: int) -> None:
    os.kill(proc.pid, sig)
    proc.wait(timeout=60)


class Writer(threading.Thread):
    """Appends rows as DSH would: whole lines or frames, each written in two halves (a torn
    tail exists between them), until ``rows`` are written."""

    def __init__(self, path: Path, rows: list[str], compressed: bool) -> None:
        super().__init__(daemon=True)
        self.path, self.rows, self.compressed = path, rows, compressed
        self.error: BaseException | None = None

    def run(self) -> None:
        cctx = zstandard.ZstdCompressor(write_checksum=True)
        try:
            with self.path.open("ab") as f:
                for i in range(0, len(self.rows), 4):
                    data = ("\n".join(self.rows[i : i + 4]) + "\n").encode()
                    blob = cctx.compress(data) if self.compressed else data
                    half = len(blob) // 2
                    f.write(blob[:half])
                    f.flush()
                    time.sleep(0.001)
                    f.write(blob[half:])
                    f.flush()
        except BaseException as exc:  # pragma: no cover - reported by the test
            self.error = exc


@pytest.fixture
def store(state_db: StateDB) -> Iterator[SqlSegmentStore]:
    yield SqlSegmentStore(state_db)


def shipped(store: SqlSegmentStore) -> bytes:
    with store.db.read() as repos:
        rows = repos.conn.execute(
            select(SEGMENTS.c.byte_offset, SEGMENTS.c.data)
            .where(SEGMENTS.c.session_id == SID)
            .order_by(SEGMENTS.c.byte_offset)
        ).all()
    out = b""
    for offset, data in rows:
        assert offset == len(out), "segments overlap or leave a gap"
        out += bytes(data)
    return out


def shipped_end(store: SqlSegmentStore) -> int:
    log = store.latest(SID)
    return 0 if log is None else log.shipped_end


@pytest.mark.integration
@pytest.mark.parametrize("compressed", [False, True], ids=["raw", "zstd"])
def test_kill9_mid_shipping_then_restart_ships_each_byte_once(
    compressed: bool, store: SqlSegmentStore, state_url: str, tmp_path: Path
) -> None:
    path = tmp_path / ("session.v4.jsonl.zstd" if compressed else "session.v4.jsonl")
    rows = list(synthetic_rows(3000))
    write_log(path, rows[:1500], compressed=compressed, header=synthetic_header(SID), batch=4)
    backlog = path.stat().st_size
    writer = Writer(path, rows[1500:], compressed)
    shipper = start_shipper(state_url, path)
    writer.start()
    try:
        wait_for(lambda: shipped_end(store) > backlog // 3, "a third of the backlog shipped")
        stop(shipper, signal.SIGKILL)  # mid-run: the backlog alone takes many transactions
        killed_at = shipped_end(store)
        assert 0 < killed_at < path.stat().st_size
        shipper = start_shipper(state_url, path)
        wait_for(lambda: shipped_end(store) > killed_at, "the restarted shipper moving on")
        stop(shipper, signal.SIGKILL)  # and once more, while the writer still writes
        shipper = start_shipper(state_url, path)
        writer.join(timeout=120)
        assert writer.error is None and not writer.is_alive()
        final = path.stat().st_size
        wait_for(lambda: shipped_end(store) == final, "the whole file shipped")
    finally:
        if shipper.poll() is None:
            stop(shipper, signal.SIGTERM)
    assert shipper.returncode == 0, shipper.stderr
    assert shipped(store) == path.read_bytes()
    log = store.latest(SID)
    assert log is not None and log.generation == 0
    source = latest_source(store, SID)
    assert source is not None
    assert scan_log(source).events == scan_log(path).events
    assert len(scan_log(path).events) == 3000
