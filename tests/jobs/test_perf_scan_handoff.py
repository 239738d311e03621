"""Embedded mode hands the watcher's decode of a whole log to the jobs that run right after the
scan — and only while the file is unchanged; otherwise the job reads the log itself.

Outcome is the same either way: the store and the watermarks equal a run without hand-off.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO

from dsh_memory_worker.memory.dsh.events import Event
from dsh_memory_worker.worker.jobs import handoff, logread
from dsh_memory_worker.worker.run.runner import InProcessRunner
from dsh_memory_worker.worker.watch.watcher import Watcher
from hypatia_lite.store import LiteStore

sys.path.insert(0, str(REPO / "benchmarks"))
from worker_dshgen import SessionLogWriter, embedded_runtime

CWD = "/home/dev/proj"


def _home(root: Path, sid: str = "handoff") -> SessionLogWriter:
    log = SessionLogWriter(root / "dsh", sid, CWD)
    first = log.turn("first question", "first answer")
    log.title("Hand-off session", first.user_seq)
    second = log.turn("take back", "taken back")
    log.rewind(second.user_seq)
    log.turn("after", "answer after")
    log.flush()
    return log


def _count_reads(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int]]:
    calls: list[tuple[int, int]] = []
    real = logread.read_range

    def counting(path: Path, from_seq: int, to_seq: int, index: Any = None) -> Any:
        calls.append((from_seq, to_seq))
        return real(path, from_seq, to_seq, index)

    monkeypatch.setattr(logread, "read_range", counting)
    return calls


def _store(root: Path) -> tuple[dict[str, str], set[tuple[str, str, str]]]:
    with LiteStore("default", home=root / "lite") as store:
        dump = store.dump()
    return (
        {r["name"]: r["content"]["data"] for r in dump["knowledge"]},
        {(s["head"], s["relation"], s["tail"]) for s in dump["statements"]},
    )


def _watermarks(runtime: Any, sid: str) -> tuple[int, int, bool]:
    with runtime.state.transaction() as repos:
        p = repos.progress.get("default", sid)
    return p.last_logged_seq, p.last_belong_to_index, p.has_session_node


def _run(root: Path, *, hand_off: bool, before_jobs: Any = None) -> tuple[Any, InProcessRunner]:
    runtime = embedded_runtime(root, force_idle=True)
    runner = InProcessRunner(runtime, keep_results=True)

    def after(sid: str) -> None:
        if before_jobs is not None:
            before_jobs(sid)
        runner.run_ready()

    watcher = Watcher(runtime, runner.submit, after_session=after if hand_off else None)
    watcher.poll_once()
    watcher.reconcile()
    runner.drain(timeout_s=30)
    return runtime, runner


def test_jobs_after_the_scan_use_its_decode_and_write_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _home(tmp_path / "plain")
    shutil.copytree(tmp_path / "plain", tmp_path / "handed")
    plain_rt, _ = _run(tmp_path / "plain", hand_off=False)
    reads = _count_reads(monkeypatch)
    handed_rt, handed = _run(tmp_path / "handed", hand_off=True)
    assert reads == []  # neither log_span nor session_node decoded the log again
    assert [(r.job, r.status) for r in handed.stats.results] == [
        ("log_span", "done"),
        ("session_node", "done"),
    ]
    knowledge, edges = _store(tmp_path / "handed")
    assert (knowledge, edges) == _store(tmp_path / "plain")
    assert sorted(knowledge) == [
        "msg-handoff-0",
        "msg-handoff-1",
        "msg-handoff-4",
        "msg-handoff-5",
        "session-handoff",
    ]
    assert _watermarks(handed_rt, "handoff") == _watermarks(plain_rt, "handoff")
    plain_rt.close()
    handed_rt.close()


def test_a_file_that_changed_after_the_scan_is_read_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = _home(tmp_path)
    reads = _count_reads(monkeypatch)

    def grow(_sid: str) -> None:  # the log grows between the scan and its jobs
        log.turn("late question", "late answer")
        log.flush()

    runtime, runner = _run(tmp_path, hand_off=True, before_jobs=grow)
    assert reads and reads[0][0] == 0  # log_span decoded the file itself
    knowledge, _ = _store(tmp_path)
    # The job worked from the file as it is now (the stale decode would end at msg-handoff-5).
    assert knowledge["msg-handoff-6"].endswith("late question")
    assert knowledge["msg-handoff-7"].endswith("late answer")
    assert all(r.status in ("done", "skipped") for r in runner.stats.results)
    runtime.close()


def test_without_after_session_nothing_is_handed_off(tmp_path: Path) -> None:
    _home(tmp_path)
    runtime = embedded_runtime(tmp_path, force_idle=True)
    Watcher(runtime, lambda *_: None).poll_once()  # the daemon: jobs run elsewhere
    state_path = str(next((tmp_path / "dsh").rglob("session.v4.jsonl*")))
    assert runtime.hand_off.whole_log(state_path) is None
    runtime.close()


def test_an_offer_is_refused_when_it_is_not_a_whole_unchanged_log(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    path.write_text("x\n")
    whole = [Event(0, "session/start", None, {}), Event(1, "turn/end", None, {})]
    hand_off = handoff.LogHandOff()
    identity = handoff.file_identity(str(path))
    assert hand_off.offer(str(path), identity, whole) is True
    assert hand_off.whole_log(str(path)) is whole
    assert hand_off.offer(str(path), identity, whole[1:]) is False  # does not start at 0
    assert hand_off.offer(str(path), None, whole) is False  # identity unknown
    assert hand_off.offer(str(path), identity, []) is False
    too_many = [Event(n, "x", None, {}) for n in range(handoff.SHARED_MAX_EVENTS + 1)]
    assert hand_off.offer(str(path), identity, too_many) is False
    assert hand_off.offer(str(path), identity, whole) is True
    path.write_text("changed\n")  # the file changed after the decode
    assert hand_off.whole_log(str(path)) is None
