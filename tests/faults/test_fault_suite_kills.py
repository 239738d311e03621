"""Fault suite, kills (embedded): ``kill -9`` of ``run --once`` at random points, and of a child
process of ``run --once --jobs 2``; after every kill the next run takes the dead process's leases
over at once and the last run ends with exit 0, nothing named as not finished, and a store
identical to a clean run (full dump: every entry's content, every statement). Random points are
reproducible (``MEMORY_WORKER_FAULT_SEED``); ``MEMORY_WORKER_FAULT_KILLS=N`` scales the number
of kills for longer runs (the CI form makes 20: 6 of a child, 14 of the whole process)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from fault_support import (
    children,
    clean_run,
    dump,
    env,
    kills,
    lay_home,
    not_finished,
    rng,
    run_once,
    run_once_argv,
)

pytestmark = pytest.mark.integration


def _kill_at(proc: subprocess.Popen[bytes], at: float, *, child: bool) -> bool:
    """SIGKILL ``proc`` (or, with ``child``, one of its child processes) ``at`` seconds after
    it started; False when it ended before that."""
    deadline = time.monotonic() + at
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return False
        time.sleep(0.01)
    while child:
        # Only the worker's own processes (forks: the same command line), and one may end
        # between the listing and the kill: then look again.
        kids = [kid for kid in children(proc.pid) if _cmdline(kid) == _cmdline(proc.pid)]
        if kids:
            try:
                os.kill(kids[0], signal.SIGKILL)
                return True
            except ProcessLookupError:
                pass
        if proc.poll() is not None:
            return False
        time.sleep(0.01)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)
    return True


def _cmdline(pid: int) -> bytes | None:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return None


def test_kill9_of_run_once_and_its_children_at_random_points(tmp_path: Path) -> None:
    started = time.monotonic()
    clean = clean_run(tmp_path / "clean")
    took = time.monotonic() - started
    root = tmp_path / "faulted"
    lay_home(root, like=tmp_path / "clean")
    points = rng()
    # Kill points are drawn over a clean run's duration at first; the work left shrinks as kills
    # land, so a run that ends before its kill point sets the window for the next ones.
    window = took
    made = lost_lines = 0
    for number in range(kills(6) + kills(14)):
        child = number < kills(6)  # children first, while every session still has work
        argv = run_once_argv(root, "--jobs", "2") if child else run_once_argv(root)
        proc = subprocess.Popen(
            argv, env=env(root), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        # Anywhere from start-up to the end of the work.
        began = time.monotonic()
        killed = _kill_at(proc, points.uniform(0.05, 1.0) * window, child=child)
        _out, err = proc.communicate(timeout=600)
        if not killed:
            window = time.monotonic() - began
        made += killed
        if child and killed:
            # The parent names a lost child (one that had sessions) on one line and finishes
            # its sessions itself.
            text = err.decode()
            assert proc.returncode == 0, text
            assert not_finished(text) == set()
            lost_lines += "was killed by SIGKILL; the final pass takes over" in text
    assert made >= (kills(14) + kills(6)) // 2  # most kills landed mid-run
    assert lost_lines >= 1
    last = run_once(root)
    assert last.returncode == 0, last.stderr
    assert not_finished(last.stderr) == set()
    assert dump(root) == clean
