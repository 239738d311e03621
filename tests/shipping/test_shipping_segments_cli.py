"""``memory-worker segments prune``: one line per session (and generation) pruned, then the
total; ``--dry-run`` removes nothing. And ``forget`` removes the session's shipped segments in
the transaction that marks it forgotten."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from cli_fork import run_cli
from sqlalchemy import func, select

from dsh_memory_worker.memory.dsh.synthetic import synthetic_header, synthetic_rows, write_log
from dsh_memory_worker.worker.shipping.shipper import ship_log
from dsh_memory_worker.worker.shipping.sql import SEGMENTS, SqlSegmentStore, delete_session
from dsh_memory_worker.worker.state import StateDB

BIN = Path(sys.executable).parent


def _ship(store: SqlSegmentStore, root: Path, sid: str) -> int:
    path = root / "logs" / sid / "session.v4.jsonl"
    path.parent.mkdir(parents=True)
    write_log(path, list(synthetic_rows(300)), compressed=False, header=synthetic_header(sid))
    report = ship_log(store, sid, path, segment_bytes=4096)
    assert report.problem is None
    return report.segments + 1  # and the header segment


def _count(db: StateDB, sid: str) -> tuple[int, int]:
    with db.read() as repos:
        count, size = repos.conn.execute(
            select(func.count(), func.coalesce(func.sum(SEGMENTS.c.length), 0)).where(
                SEGMENTS.c.session_id == sid
            )
        ).one()
    return int(count), int(size)


def _prune(root: Path, *args: str) -> list[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORY_WORKER_")}
    env.update(
        MEMORY_WORKER_DATA_DIR=str(root / "data"),
        MEMORY_WORKER_DSH_HOME=str(root / "no"),
        HOME=str(root),
    )
    done = run_cli(["segments", "prune", *args], env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


@pytest.mark.integration
def test_segments_prune_reports_each_session_and_the_total(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    db = StateDB.open(f"sqlite:///{tmp_path / 'data' / 'state.db'}")
    store = SqlSegmentStore(db)
    _ship(store, tmp_path, "kept")
    gone = _ship(store, tmp_path, "gone")
    assert gone > 2
    with db.transaction() as repos:
        repos.sessions.set_forgotten("gone", True)
    count, size = _count(db, "gone")
    assert count == gone
    line = f"gone: forgotten: {count} segments, {size} bytes"
    assert _prune(tmp_path, "--dry-run") == [
        line,
        f"would remove {count} segments, {size} bytes (dry run: nothing changed)",
    ]
    assert _count(db, "gone") == (count, size)
    assert _prune(tmp_path) == [line, f"removed {count} segments, {size} bytes"]
    assert _count(db, "gone") == (0, 0)
    assert _count(db, "kept")[0] > 2
    assert _prune(tmp_path) == ["removed 0 segments, 0 bytes"]
    db.dispose()


def test_forget_deletes_the_shipped_segments_with_the_mark(tmp_path: Path) -> None:
    db = StateDB.open(f"sqlite:///{tmp_path / 'state.db'}")
    store = SqlSegmentStore(db)
    shipped = _ship(store, tmp_path, "f1")
    _ship(store, tmp_path, "f2")
    with db.transaction() as repos:
        repos.sessions.set_forgotten("f1", True)
        assert delete_session(repos.conn, "f1") == shipped
    assert _count(db, "f1") == (0, 0)
    assert store.latest("f1") is None
    report = ship_log(store, "f1", tmp_path / "logs" / "f1" / "session.v4.jsonl")
    assert report.forgotten and report.segments == 0 and store.latest("f1") is None
    assert _count(db, "f2")[0] > 2
    db.dispose()
