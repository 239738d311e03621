"""The session node's pass reuses ``log_span``'s decode of an unchanged log — and only then.

``read_window`` over a whole log keeps its events in the runtime's hand-off, which hands them out
while the file is unchanged, never after it grew, for another file, or after a partial read. The
session node surveyed from the kept decode equals the one surveyed from the file.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

from conftest import REPO

from dsh_memory_worker.memory.dsh.reader import read_log
from dsh_memory_worker.worker.jobs import handoff, session_node
from dsh_memory_worker.worker.jobs.logread import END, read_window
from dsh_memory_worker.worker.run.runner import InProcessRunner
from dsh_memory_worker.worker.watch.watcher import Watcher

sys.path.insert(0, str(REPO / "benchmarks"))
from worker_dshgen import SessionLogWriter, embedded_runtime


def _session(runtime: Any, sid: str) -> Any:
    with runtime.state.transaction() as repos:
        return repos.sessions.get(sid)


def _home(root: Path) -> SessionLogWriter:
    log = SessionLogWriter(root / "dsh", "shared", "/home/dev/proj")
    first = log.turn("first question", "first answer")
    log.title("Shared decode", first.user_seq)
    second = log.turn("take back", "taken back")
    log.rewind(second.user_seq)
    log.turn("after", "answer after")
    log.flush()
    return log


def _scan(root: Path) -> Watcher:
    runtime = embedded_runtime(root, force_idle=True)
    runner = InProcessRunner(runtime, keep_results=True)
    watcher = Watcher(runtime, runner.submit)
    watcher.poll_once()
    return watcher


def test_a_whole_read_is_shared_until_the_file_changes(tmp_path: Path) -> None:
    log = _home(tmp_path)
    runtime = _scan(tmp_path).runtime
    state = _session(runtime, "shared")
    runtime.hand_off.forget()
    assert runtime.hand_off.whole_log(state.path) is None
    window = read_window(state, 0, hand_off=runtime.hand_off, segments=None)
    shared = runtime.hand_off.whole_log(state.path)
    assert shared is window.events
    assert [e.seq for e in shared] == [e.seq for e in read_log(Path(state.path)).events]
    assert runtime.hand_off.whole_log(state.path) is None  # handed out once
    read_window(state, 0, hand_off=runtime.hand_off, segments=None)
    # Another file (and now forgotten).
    assert runtime.hand_off.whole_log(state.path + ".other") is None
    # A partial read is not kept.
    read_window(state, 0, to_seq=3, hand_off=runtime.hand_off, segments=None)
    assert runtime.hand_off.whole_log(state.path) is None
    # The log grows: the kept decode no longer describes it.
    read_window(state, 0, hand_off=runtime.hand_off, segments=None)
    log.turn("one more", "answer")
    log.flush()
    assert runtime.hand_off.whole_log(state.path) is None
    window = read_window(state, 0, hand_off=runtime.hand_off, segments=None)
    assert [e.seq for e in window.events] == [e.seq for e in read_log(Path(state.path)).events]
    assert runtime.hand_off.whole_log(state.path) is not None
    runtime.close()


def test_the_session_node_survey_is_the_same_from_the_kept_decode(tmp_path: Path) -> None:
    _home(tmp_path)
    watcher = _scan(tmp_path)
    runtime = watcher.runtime
    state = _session(runtime, "shared")
    runtime.hand_off.forget()
    from_file = session_node.survey_node(runtime, state, state.durable_end_seq)
    read_window(state, 0, END, runtime.hand_off, segments=None)
    assert runtime.hand_off.kept_path() == state.path
    calls: list[Any] = []
    real = session_node.LogScan

    def counting(*args: Any, **kwargs: Any) -> Any:
        calls.append(args)
        return real(*args, **kwargs)

    session_node.LogScan = counting  # type: ignore[misc]
    try:
        from_shared = session_node.survey_node(runtime, state, state.durable_end_seq)
    finally:
        session_node.LogScan = real  # type: ignore[misc]
    assert calls == []  # the file was not decoded again
    assert runtime.hand_off.kept_path() is None  # and the decode is no longer kept
    assert from_shared == from_file
    assert from_file.choice.text == "Shared decode"
    assert from_file.skip_from(0) == frozenset({2, 3})
    runtime.close()


def test_a_kept_decode_of_another_copy_is_not_used(tmp_path: Path) -> None:
    _home(tmp_path / "a")
    shutil.copytree(tmp_path / "a" / "dsh", tmp_path / "b" / "dsh")
    watcher = _scan(tmp_path / "a")
    state = _session(watcher.runtime, "shared")
    read_window(state, 0, hand_off=watcher.runtime.hand_off, segments=None)
    copy = str(state.path).replace(str(tmp_path / "a"), str(tmp_path / "b"))
    assert Path(copy).is_file()
    assert watcher.runtime.hand_off.whole_log(copy) is None
    assert handoff.SHARED_MAX_EVENTS >= 1000
    watcher.runtime.close()
