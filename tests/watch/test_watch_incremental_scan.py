"""The watcher reads only new bytes (raw lines and zstd frames), keeps a checkpoint index with the
message ordinal at each checkpoint, waits out torn tails without losing them, and reports a
missing DSH home or a duplicated session id in one line."""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO

from dsh_memory_worker.memory.dsh.reader import read_log
from dsh_memory_worker.memory.messages import is_loggable
from dsh_memory_worker.worker.jobs.logread import read_window
from dsh_memory_worker.worker.run.runner import InProcessRunner
from dsh_memory_worker.worker.watch.watcher import Watcher
from hypatia_lite.store import LiteStore

sys.path.insert(0, str(REPO / "benchmarks"))
from worker_dshgen import SessionLogWriter, embedded_runtime

CWD = "/home/dev/proj"


def session(runtime: Any, sid: str) -> Any:
    with runtime.state.transaction() as repos:
        return repos.sessions.get(sid)


@pytest.mark.parametrize("compressed", [False, True], ids=["raw", "zstd"])
def test_each_poll_reads_only_what_was_appended(tmp_path: Path, compressed: bool) -> None:
    runtime = embedded_runtime(tmp_path)
    watcher = Watcher(runtime, lambda *_: None)
    log = SessionLogWriter(tmp_path / "dsh", "s-inc", CWD, compressed=compressed)
    log.turn("a", "b")
    log.flush()
    first = watcher.poll_once()
    assert (first.sessions, first.changed, first.new_events) == (1, 1, 6)
    state = session(runtime, "s-inc")
    assert state.scan_offset == log.path.stat().st_size and state.durable_end_seq == 6
    assert watcher.poll_once().new_events == 0
    log.turn("c", "d")
    log.turn("e", "f")
    log.flush()
    assert watcher.poll_once().new_events == 12
    state = session(runtime, "s-inc")
    assert (state.durable_end_seq, state.last_turn_end_seq) == (18, 17)
    assert state.scan_offset == log.path.stat().st_size
    runtime.close()


def test_checkpoints_carry_the_message_ordinal_so_spans_read_from_near_their_start(
    tmp_path: Path,
) -> None:
    runtime = embedded_runtime(tmp_path)
    watcher = Watcher(runtime, lambda *_: None)
    log = SessionLogWriter(tmp_path / "dsh", "s-long", CWD, compressed=True)
    for batch in range(4):
        for i in range(60):
            log.turn(f"q{batch}.{i}", f"a{batch}.{i}")
        log.flush()
        watcher.poll_once()
    state = session(runtime, "s-long")
    assert len(state.checkpoints) >= 2
    events = read_log(log.path).events
    for point in state.checkpoints:
        assert point.ordinal == sum(1 for e in events if e.seq < point.seq and is_loggable(e))
    window = read_window(state, 1200, segments=None)
    assert window.first_seq == state.checkpoint_at_or_before(1200).seq > 0
    assert window.base_ordinal(1200) == sum(1 for e in events if e.seq < 1200 and is_loggable(e))
    runtime.close()


def test_a_restarted_watcher_does_not_decode_an_unchanged_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The ordinal at the stored end is computed only when new events arrive: a daemon restart
    over an unchanged home opens each log at its stored offset and reads nothing."""
    # the watcher imports read_range from it when it reads
    import dsh_memory_worker.memory.dsh.reader as reader

    runtime = embedded_runtime(tmp_path)
    log = SessionLogWriter(tmp_path / "dsh", "s-restart", CWD, compressed=True)
    for i in range(50):
        log.turn(f"q{i}", f"a{i}")
    log.flush()
    Watcher(runtime, lambda *_: None).poll_once()
    reads: list[tuple[int, int]] = []
    real = reader.read_range

    def counting(path: Path, start: int, end: int, *args: Any) -> Any:
        reads.append((start, end))
        return real(path, start, end, *args)

    monkeypatch.setattr(reader, "read_range", counting)
    restarted = Watcher(runtime, lambda *_: None)
    assert restarted.poll_once().new_events == 0
    assert reads == []
    log.turn("late question", "late answer")
    log.flush()
    assert restarted.poll_once().new_events == 6
    assert len(reads) == 1  # the ordinal at the old end, once
    log.turn("later", "still")
    log.flush()
    assert restarted.poll_once().new_events == 6
    assert len(reads) == 1  # cached from the previous scan
    state = session(runtime, "s-restart")
    events = read_log(log.path).events
    for point in state.checkpoints:
        assert point.ordinal == sum(1 for e in events if e.seq < point.seq and is_loggable(e))
    runtime.close()


def test_a_torn_tail_is_waited_out_and_nothing_is_lost(tmp_path: Path) -> None:
    runtime = embedded_runtime(tmp_path)
    runner = InProcessRunner(runtime)
    watcher = Watcher(runtime, runner.submit)
    log = SessionLogWriter(tmp_path / "dsh", "s-torn", CWD)
    log.turn("before", "the tear")
    log.flush()
    log.turn("the torn", "turn")
    text = "\n".join(log._pending) + "\n"
    log._pending.clear()
    cut = len(text) - 25
    with log.path.open("a", encoding="utf-8") as handle:
        handle.write(text[:cut])  # the last line (turn/end) is half written
    watcher.poll_once()
    runner.drain()
    state = session(runtime, "s-torn")
    assert state.durable_end_seq == 11  # the torn turn/end (seq 11) is not durable yet
    with LiteStore("default", home=tmp_path / "lite") as store:
        assert {r["name"] for r in store.dump()["knowledge"]} == {"msg-s-torn-0", "msg-s-torn-1"}
    with log.path.open("a", encoding="utf-8") as handle:
        handle.write(text[cut:])
    watcher.poll_once()
    runner.drain()
    with LiteStore("default", home=tmp_path / "lite") as store:
        names = {r["name"] for r in store.dump()["knowledge"]}
    assert names == {f"msg-s-torn-{n}" for n in range(4)}
    runtime.close()


def test_a_missing_dsh_home_is_one_line_then_followed_once_it_appears(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    runtime = embedded_runtime(tmp_path)
    caplog.set_level(logging.WARNING, logger="dsh_memory_worker.worker")
    watcher = Watcher(runtime, lambda *_: None)
    assert watcher.poll_once().sessions == 0
    assert watcher.poll_once().sessions == 0
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 1 and "has no sessions directory" in lines[0]
    log = SessionLogWriter(tmp_path / "dsh", "s-late", CWD)
    log.turn("x", "y")
    log.flush()
    report = watcher.poll_once()
    assert (report.sessions, report.new_events) == (1, 6)
    runtime.close()


def test_a_session_id_found_twice_is_reported_once_and_read_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    runtime = embedded_runtime(tmp_path)
    caplog.set_level(logging.WARNING, logger="dsh_memory_worker.worker")
    for cwd in ("/home/dev/one", "/home/dev/two"):
        log = SessionLogWriter(tmp_path / "dsh", "s-twice", cwd)
        log.turn("x", "y")
        log.flush()
    watcher = Watcher(runtime, lambda *_: None)
    assert watcher.poll_once().sessions == 1
    watcher.poll_once()
    lines = [r.getMessage() for r in caplog.records if "appears twice" in r.getMessage()]
    assert len(lines) == 1
    runtime.close()


def test_frequent_small_appends_keep_the_checkpoint_index_sparse(tmp_path: Path) -> None:
    runtime = embedded_runtime(tmp_path)
    watcher = Watcher(runtime, lambda *_: None)
    log = SessionLogWriter(tmp_path / "dsh", "s-sparse", CWD, compressed=True)
    for i in range(150):
        log.turn(f"q{i}", f"a{i}")
        log.flush()
        watcher.poll_once()
    state = session(runtime, "s-sparse")
    assert state.durable_end_seq == 900
    assert 1 <= len(state.checkpoints) <= 3  # about one per 512 events, not one per poll
    runtime.close()


def test_an_error_in_the_watch_loop_is_one_line_and_the_loop_goes_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    import threading

    runtime = embedded_runtime(tmp_path, poll_interval_s=0.05)
    log = SessionLogWriter(tmp_path / "dsh", "s-loop", CWD)
    log.turn("a", "b")
    log.flush()
    sent: list[str] = []
    stop = threading.Event()

    def flaky(job: str, sid: str, shelf: str) -> None:
        if len(sent) < 3:
            sent.append("boom")
            raise RuntimeError("broker exploded")
        sent.append(job)
        stop.set()

    caplog.set_level(logging.WARNING, logger="dsh_memory_worker.worker")
    watcher = Watcher(runtime, flaky)
    worker = threading.Thread(target=watcher.run, args=(stop,))
    worker.start()
    worker.join(timeout=20)
    assert not worker.is_alive()
    errors = [r.getMessage() for r in caplog.records if "watch loop error" in r.getMessage()]
    assert len(errors) == 1 and "RuntimeError: broker exploded" in errors[0]
    assert sent[-1] in ("log_span", "session_node")
    runtime.close()
