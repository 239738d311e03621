"""The watcher and the jobs with ``shipping`` on, in process (SQLite state): the poll ships every
log and records what it scanned of the shipped bytes; the jobs then run with the DSH home moved
away (they read the segments) and write exactly what an embedded run writes; a log DSH rewrote
is shipped and recorded as the next generation."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from conftest import REPO
from pipeline_support import dump, process

from dsh_memory_worker.worker.run.runner import InProcessRunner
from dsh_memory_worker.worker.shipping.sql import SqlSegmentStore
from dsh_memory_worker.worker.watch.watcher import Watcher

sys.path.insert(0, str(REPO / "benchmarks"))
from worker_dshgen import SessionLogWriter, embedded_runtime

CWD = "/home/dev/project"


def _home(root: Path) -> None:
    for sid, turns in (("s-one", 3), ("s-two", 5)):
        log = SessionLogWriter(root / "dsh", sid, CWD)
        first = log.turn("hello", "hi")
        log.title(f"Title {sid}", first.user_seq)
        for i in range(turns):
            log.turn(f"question {i}", f"answer {i}")
        log.flush()


def test_jobs_read_the_shipped_bytes_and_write_what_an_embedded_run_writes(tmp_path: Path) -> None:
    embedded_root, shipped_root = tmp_path / "embedded", tmp_path / "shipped"
    _home(embedded_root)
    shutil.copytree(embedded_root / "dsh", shipped_root / "dsh")  # the same bytes
    runtime = embedded_runtime(embedded_root, force_idle=True)
    process(runtime, consolidation=False)
    runtime.close()

    runtime = embedded_runtime(
        shipped_root, force_idle=True, shipping=True, shipping_segment_bytes=4096
    )
    runner = InProcessRunner(runtime, keep_results=True)
    watcher = Watcher(runtime, runner.submit)
    report = watcher.poll_once()
    assert (report.sessions, report.changed, report.problems) == (2, 2, 0)
    store = SqlSegmentStore(runtime.state)
    with runtime.state.read() as repos:
        states = {s.session_id: s for s in repos.sessions.list()}
    for sid, state in states.items():
        shipped = store.latest(sid)
        file = Path(state.path)
        assert shipped is not None and shipped.generation == state.generation == 0
        assert shipped.shipped_end == state.scan_offset == file.stat().st_size
        assert store.read_exact(sid, 0, 0, shipped.shipped_end) == file.read_bytes()
    (shipped_root / "dsh").rename(shipped_root / "elsewhere")  # the jobs cannot read the home
    watcher.reconcile()
    runner.drain(timeout_s=60)
    assert not [r for r in runner.stats.results if r.status == "failed"]
    assert dump(shipped_root) == dump(embedded_root)
    runtime.close()


def test_a_rewritten_log_is_recorded_as_the_next_shipped_generation(tmp_path: Path) -> None:
    _home(tmp_path)
    runtime = embedded_runtime(tmp_path, shipping=True)
    watcher = Watcher(runtime, lambda *_: None)
    watcher.poll_once()
    path = next((tmp_path / "dsh").glob("sessions/*/s-one/session.*"))
    path.unlink()
    log = SessionLogWriter(tmp_path / "dsh", "s-one", CWD)  # DSH rewrote it, shorter
    log.turn("again", "yes")
    log.flush()
    watcher.poll_once()
    store = SqlSegmentStore(runtime.state)
    with runtime.state.read() as repos:
        state = repos.sessions.get("s-one")
    latest = store.latest("s-one")
    assert state is not None and latest is not None
    assert (latest.generation, state.generation) == (1, 1)
    assert state.durable_end_seq == log.seq
    assert latest.shipped_end == state.scan_offset == path.stat().st_size
    runtime.close()
