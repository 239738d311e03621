"""``run --once --jobs 2`` stops like one process (issue 32, defect 7 / build item 8): SIGTERM or
SIGINT, to the parent or to its whole process group (a terminal's Ctrl-C), while both children
are in the middle of a store call, stops every child, prints ``stopped by SIG…:`` and the summary
naming every session not finished, and exits 1; no child and no store process is left. Before,
SIGTERM ended the parent at once (exit 143, no summary), SIGINT gave a summary naming no
session, and a Ctrl-C while the children were being forked was ignored (the run went on to exit
0). Real processes: the worker, its two children, a ``cli`` store whose writes hang (each records
its pid: the marker that a child reached the store); waits are on conditions."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fault_support import LITE, children, dump, env, lay_home, not_finished, run_once, wait_for
from fault_support import run_once_argv as argv
from store_contract.fake_binary import alive

pytestmark = pytest.mark.integration

SESSIONS = [(f"sig-{i}", f"/home/dev/sig-{i % 2}", 4) for i in range(4)]
ALL = {sid for sid, _, _ in SESSIONS}
#: Start-up, two children and the stop, on a busy 2-core machine; a run that did not stop waits
#: on a store call of 600 s.
BOUND_S = 60.0

HANGING = """#!/bin/sh
case "$1 $2" in
  *--help*) ;;
  knowledge-create*|statement-create*) echo $$ >> "$HANG_PIDS"; exec sleep 600 ;;
esac
exec "$HANG_LITE" "$@"
"""


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("clean")
    lay_home(root, sessions=SESSIONS)
    done = run_once(root)
    assert done.returncode == 0, done.stderr
    return root


def _pids(path: Path) -> list[int]:
    return [int(p) for p in path.read_text().split()] if path.exists() else []


@pytest.mark.parametrize("target", ["parent", "group"])
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_jobs_2_stops_like_one_process(
    tmp_path: Path, clean: Path, signum: signal.Signals, target: str
) -> None:
    lay_home(tmp_path, like=clean)
    wrapper = tmp_path / "hang-hypatia"
    wrapper.write_text(HANGING)
    wrapper.chmod(0o755)
    hangs = tmp_path / "hangs"
    worker = subprocess.Popen(
        argv(tmp_path, "--jobs", "2"),
        env=env(
            tmp_path,
            MEMORY_WORKER_STORE_TRANSPORT="cli",
            MEMORY_WORKER_STORE_BINARY=str(wrapper),
            MEMORY_WORKER_STORE_TIMEOUT_S="600",
            HANG_PIDS=str(hangs),
            HANG_LITE=str(LITE),
        ),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group, as a terminal gives a command
    )
    try:
        wait_for(lambda: len(_pids(hangs)) >= 2, 120, "both children to hang in a store write")
        kids = [pid for pid in children(worker.pid) if alive(pid)]
        started = time.monotonic()
        if target == "group":
            os.killpg(worker.pid, signum)
        else:
            os.kill(worker.pid, signum)
        _, stderr = worker.communicate(timeout=BOUND_S)
        elapsed = time.monotonic() - started
    finally:
        if worker.poll() is None:
            os.killpg(worker.pid, signal.SIGKILL)
            worker.wait(timeout=30)
    assert worker.returncode == 1, stderr
    assert elapsed < BOUND_S
    assert "Traceback" not in stderr, stderr
    last = stderr.strip().splitlines()[-1]
    assert last.startswith(f"stopped by {signal.Signals(signum).name}: 4 sessions, "), stderr
    assert not_finished(last) == ALL, stderr
    wait_for(lambda: not any(alive(pid) for pid in kids), 30, "the children to be gone")
    wait_for(lambda: not any(alive(pid) for pid in _pids(hangs)), 30, "the store calls to die")
    healthy = run_once(tmp_path)
    assert healthy.returncode == 0, healthy.stderr
    assert dump(tmp_path) == dump(clean)


#: In a process of its own: a Ctrl-C that arrives while OnceChildren forks (sent from inside the
#: second fork's start) must reach this process once the children exist, not be dropped.
FORK_WINDOW = """
import os, signal, sys
from multiprocessing.context import ForkProcess
from dsh_memory_worker.worker.run.once_children import OnceChildren
from dsh_memory_worker.worker.settings import Settings

start = ForkProcess.start
calls = []
def start_then_ctrl_c(self):
    calls.append(1)
    if len(calls) == 2:
        os.kill(os.getpid(), signal.SIGINT)
    start(self)
ForkProcess.start = start_then_ctrl_c
try:
    children = OnceChildren(Settings(), "default", 2)
except KeyboardInterrupt:
    print("interrupted")
    sys.exit(0)
children.stop()
print("lost")
"""


def test_ctrl_c_while_the_children_are_forked_is_not_lost(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", FORK_WINDOW],
        env=env(tmp_path),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["interrupted"]


def test_a_stop_before_the_sessions_are_handed_out_names_them_all(
    tmp_path: Path, clean: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C while the parent splits the home (before any child has a session): every session
    of the home is named, as one process stopped before its scan names them."""
    from dsh_memory_worker.worker.jobs.runtime import build_runtime
    from dsh_memory_worker.worker.run.once_children import OnceChildren, OnceTotals
    from dsh_memory_worker.worker.run.once_parallel import run_once as run_once_in_process
    from dsh_memory_worker.worker.settings import load_settings

    lay_home(tmp_path, like=clean)
    settings = load_settings(
        None, dsh_home=tmp_path / "dsh", data_dir=tmp_path / "data", lite_home=tmp_path / "lite"
    )

    def ctrl_c(self: OnceChildren, groups: object) -> None:
        raise KeyboardInterrupt

    children = OnceChildren(settings, settings.store_shelf, 2)
    monkeypatch.setattr(OnceChildren, "assign", ctrl_c)
    totals = OnceTotals()
    try:
        runtime = build_runtime(settings, force_idle=True)
        try:
            with pytest.raises(KeyboardInterrupt):
                run_once_in_process(runtime, settings.store_shelf, children=children, totals=totals)
        finally:
            runtime.close()
    finally:
        children.stop()
    assert totals.sessions == 4
    assert totals.unfinished_sessions == sorted(ALL)
    assert not any(child.process.is_alive() for child in children.children)
