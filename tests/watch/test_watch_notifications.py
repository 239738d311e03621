"""An idle follower learns of a new session and of an appended turn from file-system
notifications (its poll interval is a minute, so nothing else can explain the hint), and follows by
polling when notifications are off or cannot start. Conditions are waited for, never slept on."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO

from dsh_memory_worker.worker.names import JOB_LOG_SPAN
from dsh_memory_worker.worker.watch.notify import Notifier
from dsh_memory_worker.worker.watch.watcher import ScanReport, Watcher

sys.path.insert(0, str(REPO / "benchmarks"))
from worker_dshgen import SessionLogWriter, embedded_runtime

CWD = "/home/dev/proj"


def wait_for(condition: Callable[[], bool], timeout: float = 10.0) -> float:
    """Seconds until ``condition`` held (fails the test after ``timeout``)."""
    started = time.monotonic()
    while not condition():
        assert time.monotonic() - started < timeout, "condition not met in time"
        time.sleep(0.005)
    return time.monotonic() - started


class Follower:
    def __init__(self, tmp_path: Path, **settings: Any) -> None:
        self.runtime = embedded_runtime(tmp_path, **settings)
        self.hints: list[tuple[str, str]] = []
        self.polls = 0
        self.watcher = Watcher(self.runtime, lambda job, sid, _shelf: self.hints.append((job, sid)))
        self.stop = threading.Event()
        self.thread = threading.Thread(
            target=self.watcher.run,
            args=(self.stop,),
            kwargs={"after_poll": self._polled},
            daemon=True,
        )

    def _polled(self, _report: ScanReport) -> None:
        self.polls += 1

    def __enter__(self) -> Follower:
        self.thread.start()
        wait_for(lambda: self.polls >= 1)
        return self

    def __exit__(self, *_: object) -> None:
        self.stop.set()
        self.thread.join(timeout=10)
        assert not self.thread.is_alive()
        self.runtime.close()

    def hinted(self, sid: str, count: int = 1) -> Callable[[], bool]:
        return lambda: self.hints.count((JOB_LOG_SPAN, sid)) >= count


def test_an_idle_follower_is_notified_of_a_new_session_and_an_appended_turn(
    tmp_path: Path,
) -> None:
    old = SessionLogWriter(tmp_path / "dsh", "s-old", CWD)
    old.turn("a", "b")
    old.flush()
    with Follower(
        tmp_path, poll_interval_s=60, safety_scan_s=3600, reconcile_interval_s=3600
    ) as follower:
        wait_for(follower.hinted("s-old"))
        new = SessionLogWriter(tmp_path / "dsh", "s-new", "/home/dev/other")  # a new project
        new.turn("c", "d")
        new.flush()
        assert wait_for(follower.hinted("s-new")) < 5
        old.turn("e", "f")
        old.flush()
        assert wait_for(follower.hinted("s-old", 2)) < 5
        assert follower.polls < 20  # woken by the changes, not by a poll every tick


@pytest.mark.parametrize("how", ["setting off", "cannot start"])
def test_the_follower_polls_when_notifications_are_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    if how == "cannot start":
        monkeypatch.setattr(Notifier, "start", lambda self: False)
    old = SessionLogWriter(tmp_path / "dsh", "s-old", CWD)
    old.turn("a", "b")
    old.flush()
    with Follower(
        tmp_path,
        poll_interval_s=0.05,
        reconcile_interval_s=3600,
        watch_notifications=how != "setting off",
    ) as follower:
        new = SessionLogWriter(tmp_path / "dsh", "s-new", CWD)
        new.turn("c", "d")
        new.flush()
        wait_for(follower.hinted("s-new"))
        old.turn("e", "f")
        old.flush()
        wait_for(follower.hinted("s-old", 2))
