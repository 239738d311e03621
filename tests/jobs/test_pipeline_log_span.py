"""``log_span`` end to end on generated V4 logs, in process: spans end at turn boundaries, a
withdrawal that lands after its messages were written retracts them (and records it), a crash
between the writes and the watermark advance is re-done idempotently, idle-close flushes the tail
and owes a consolidation, and store errors leave the watermark where it was."""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO
from pipeline_support import dump, names, progress

from dsh_memory_worker.worker.jobs.context import JobContext
from dsh_memory_worker.worker.jobs.guard import run_job
from dsh_memory_worker.worker.jobs.log_span import log_span
from dsh_memory_worker.worker.jobs.logread import TransientJobError
from dsh_memory_worker.worker.names import session_lease_key
from dsh_memory_worker.worker.run.runner import InProcessRunner
from dsh_memory_worker.worker.state.leases import Lease
from dsh_memory_worker.worker.watch.watcher import Watcher

sys.path.insert(0, str(REPO / "benchmarks"))
from worker_dshgen import SessionLogWriter, embedded_runtime

CWD = "/home/dev/proj"


def process(runtime: Any, *, reconcile: bool = False) -> InProcessRunner:
    runner = InProcessRunner(runtime, keep_results=True)
    watcher = Watcher(runtime, runner.submit)
    watcher.poll_once()
    if reconcile:
        watcher.reconcile()
    runner.drain(timeout_s=30)
    return runner


def test_only_finished_turns_are_logged_until_the_open_turn_ends(tmp_path: Path) -> None:
    runtime = embedded_runtime(tmp_path)
    log = SessionLogWriter(tmp_path / "dsh", "s-turns", CWD)
    log.turn("what is 2+2", "4")
    second = log.turn("and 3+3", "6")
    log.open_turn("now 4+4")
    log.flush()
    process(runtime)
    assert names(tmp_path) == {f"msg-s-turns-{n}" for n in range(4)}
    assert progress(runtime, "s-turns").last_logged_seq == second.turn_end_seq + 1
    log.close_turn("8")
    log.flush()
    runner = process(runtime)
    assert names(tmp_path) == {f"msg-s-turns-{n}" for n in range(6)}
    rows = {row["name"]: row["content"] for row in dump(tmp_path)["knowledge"]}
    assert rows["msg-s-turns-4"]["data"].endswith("## Content\nnow 4+4")
    assert rows["msg-s-turns-5"]["data"].endswith("## Turn\n3\n\n## Content\n8")
    assert rows["msg-s-turns-5"]["scopes"] == ["proj"]
    assert [r.written for r in runner.stats.results if r.job == "log_span"] == [2]
    runtime.close()


def test_withdrawal_after_messages_were_written_retracts_and_records(tmp_path: Path) -> None:
    runtime = embedded_runtime(tmp_path)
    log = SessionLogWriter(tmp_path / "dsh", "s-rewind", CWD)
    log.turn("keep this", "kept")
    second = log.turn("take this back", "taken back")
    log.turn("and this", "also taken back")
    log.flush()
    process(runtime)
    assert names(tmp_path) == {f"msg-s-rewind-{n}" for n in range(6)}

    marker = log.rewind(second.user_seq)
    log.turn("after the rewind", "fresh answer")
    log.flush()
    runner = process(runtime)
    assert names(tmp_path) == {f"msg-s-rewind-{n}" for n in (0, 1, 6, 7)}
    assert "taken back" not in str(dump(tmp_path))
    assert sum(r.retracted for r in runner.stats.results) == 4
    with runtime.state.transaction() as repos:
        audit = repos.audit.retractions(session_id="s-rewind")
    assert [(a.entry, a.ordinal, a.marker_seq, a.source_kind, a.outcome) for a in audit] == [
        (f"msg-s-rewind-{n}", n, marker, "dsh-rewind", "retracted") for n in (2, 3, 4, 5)
    ]
    # Replaying the whole session from scratch never writes the withdrawn messages back.
    with runtime.state.transaction() as repos:
        repos.progress.reset("default", "s-rewind")
    process(runtime)
    assert names(tmp_path) == {f"msg-s-rewind-{n}" for n in (0, 1, 6, 7)}
    runtime.close()


def test_withdrawn_in_span_messages_are_never_written(tmp_path: Path) -> None:
    runtime = embedded_runtime(tmp_path)
    log = SessionLogWriter(tmp_path / "dsh", "s-skip", CWD)
    log.turn("one", "uno")
    second = log.turn("two", "dos")
    log.rewind(second.user_seq, kind="plugin:rollback")
    log.turn("three", "tres")
    log.flush()
    runner = process(runtime)
    assert names(tmp_path) == {f"msg-s-skip-{n}" for n in (0, 1, 4, 5)}
    result = next(r for r in runner.stats.results if r.job == "log_span")
    assert (result.written, result.withdrawn, result.retracted) == (4, 2, 0)
    with runtime.state.transaction() as repos:
        assert repos.audit.retractions(session_id="s-skip") == []
    runtime.close()


def test_crash_between_writes_and_advance_is_redone_idempotently(tmp_path: Path) -> None:
    runtime = embedded_runtime(tmp_path / "crash")
    log = SessionLogWriter(tmp_path / "crash" / "dsh", "s-crash", CWD)
    for i in range(3):
        log.turn(f"q{i}", f"a{i}")
    log.flush()
    Watcher(runtime, lambda *_: None).poll_once()
    key = session_lease_key("s-crash")
    with runtime.state.transaction() as repos:
        lease = repos.leases.acquire(key, "doomed", 60)
    assert lease is not None
    superseded = Lease(key, lease.owner, lease.token + 1, lease.expires_at)
    with pytest.raises(TransientJobError):
        log_span(JobContext(runtime, "log_span", "s-crash", "default", superseded))
    assert len(names(tmp_path / "crash")) == 6  # the writes happened ...
    assert progress(runtime, "s-crash").last_logged_seq == 0  # ... the advance did not
    with runtime.state.transaction() as repos:
        repos.leases.release(lease)
    again = run_job(runtime, "log_span", "s-crash", "default")
    assert (again.status, again.written, again.duplicates) == ("done", 0, 6)
    assert progress(runtime, "s-crash").last_logged_seq == log.seq

    clean_root = tmp_path / "clean"
    clean = embedded_runtime(clean_root)
    SessionLogWriter(clean_root / "dsh", "s-crash", CWD)  # header only; then copy the log
    (clean_root / "dsh" / "sessions").mkdir(parents=True, exist_ok=True)
    target = clean_root / "dsh" / log.path.relative_to(tmp_path / "crash" / "dsh")
    target.write_bytes(log.path.read_bytes())
    process(clean)
    assert dump(clean_root) == dump(tmp_path / "crash")
    runtime.close()
    clean.close()


@pytest.mark.integration  # a `cli` store starts the process-group reaper, a real process
def test_unreachable_store_leaves_the_watermark_and_nothing_is_lost(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    log = SessionLogWriter(tmp_path / "dsh", "s-store", CWD)
    log.turn("hello", "hi")
    log.flush()
    broken = embedded_runtime(
        tmp_path, store_transport="cli", store_binary=str(tmp_path / "no-such-hypatia")
    )
    caplog.set_level(logging.WARNING, logger="dsh_memory_worker.worker")
    Watcher(broken, lambda *_: None).poll_once()
    result = run_job(broken, "log_span", "s-store", "default")
    assert result.status == "retry"
    assert "no-such-hypatia" in result.detail and "\n" not in result.detail
    failed = [r for r in caplog.records if "s-store" in r.getMessage()]
    assert len(failed) == 1 and "failed (will retry)" in failed[0].getMessage()
    assert progress(broken, "s-store").last_logged_seq == 0
    with broken.state.transaction() as repos:
        failure = repos.failures.get("log_span", "s-store")
    assert failure is not None and failure.attempts == 1 and not failure.permanent
    broken.close()

    healed = embedded_runtime(tmp_path)
    # The log did not grow, so no new hint: the reconcile re-derives the owed span.
    runner = process(healed, reconcile=True)
    assert runner.stats.failed == 0
    assert names(tmp_path) == {"msg-s-store-0", "msg-s-store-1"}
    with healed.state.transaction() as repos:
        assert repos.failures.get("log_span", "s-store") is None
    healed.close()


def test_idle_close_flushes_the_tail_and_owes_a_consolidation(tmp_path: Path) -> None:
    runtime = embedded_runtime(tmp_path, idle_close_s=1)
    owed: list[Any] = []
    runtime.consolidation_hook = owed.append
    log = SessionLogWriter(tmp_path / "dsh", "s-idle", CWD)
    log.turn("finished", "yes")
    prompt = log.open_turn("never answered")
    log.flush()
    process(runtime)
    assert names(tmp_path) == {"msg-s-idle-0", "msg-s-idle-1"}  # the open turn waits
    assert owed == []
    # No growth for the idle time: the runtime's clock, which every idleness decision reads,
    # moves on 1.1 s instead of the test sleeping them out.
    real_now_ms = runtime.now_ms
    runtime.now_ms = lambda: real_now_ms() + 1100  # type: ignore[method-assign]
    runner = process(runtime, reconcile=True)
    assert names(tmp_path) == {f"msg-s-idle-{n}" for n in range(3)}
    detail = next(r.detail for r in runner.stats.results if r.status == "done")
    assert detail == f"logged [6, {log.seq}) at idle"
    assert [(o.session_id, o.from_seq, o.to_seq, o.thresholds_waived) for o in owed] == [
        ("s-idle", 0, log.seq, True)
    ]
    with runtime.state.transaction() as repos:
        assert repos.sessions.get("s-idle").closed_at is not None
    assert prompt == log.seq - 1
    runtime.close()
