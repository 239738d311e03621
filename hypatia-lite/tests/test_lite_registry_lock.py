"""The shelf registry's lock (``filelock`` on ``<home>/shelves.lock``): two processes updating
``shelves.json`` at once lose no update, and the lock is the ``flock`` of that same file the
earlier hand-written code took, so an older process and a newer one still exclude each other."""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from filelock import FileLock, Timeout

from hypatia_lite import shelves

PER_PROCESS = 40

# Each process connects PER_PROCESS shelves of its own and disconnects every other one, from a
# common start time: every change is a read-modify-write of shelves.json.
_UPDATER = r"""
import sys, time
from pathlib import Path
from hypatia_lite import shelves

home, start_at, me = Path(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
time.sleep(max(0.0, start_at - time.time()))
for i in range(int(sys.argv[4])):
    shelves.connect(home, home / "dirs" / f"{me}-{i}", f"{me}-{i}")
    if i % 2:
        shelves.disconnect(home, f"{me}-{i}")
print("done")
"""


@pytest.mark.integration
def test_two_processes_updating_the_registry_lose_no_update(tmp_path: Path) -> None:
    home = tmp_path / "home"
    start_at = f"{time.time() + 1.0:.3f}"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _UPDATER, str(home), start_at, me, str(PER_PROCESS)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for me in ("a", "b")
    ]
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert (proc.returncode, out.strip()) == (0, "done"), err
    registry = json.loads((home / "shelves.json").read_text())["shelves"]
    kept = {f"{me}-{i}" for me in ("a", "b") for i in range(0, PER_PROCESS, 2)}
    assert set(registry) - {"default"} == kept
    assert registry["b-38"] == str(home / "dirs" / "b-38")
    assert not list(home.glob(".shelves.*.tmp"))


def _old_flock(path: Path) -> int:
    """The earlier code's lock: ``open(path, "a+")`` then ``flock(LOCK_EX | LOCK_NB)``; the fd."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise
    return fd


def test_the_registry_lock_excludes_the_old_flock_both_ways(tmp_path: Path) -> None:
    home = tmp_path / "home"
    lock_path = home / "shelves.lock"
    with shelves._locked(home), pytest.raises(BlockingIOError):
        _old_flock(lock_path)
    inode = lock_path.stat().st_ino  # released: the file stays, the old lock is free again
    fd = _old_flock(lock_path)
    try:
        with pytest.raises(Timeout):
            FileLock(lock_path, timeout=0, preserve_lock_file=True).acquire()
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)
    assert shelves.connect(home, tmp_path / "d", "d") == "d"
    assert lock_path.stat().st_ino == inode
