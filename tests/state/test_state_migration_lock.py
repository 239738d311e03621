"""The migration lock (``filelock`` on ``<state.db>.lock``) excludes other processes: real
processes that each enter and leave it many times never overlap, and while one process holds it
a plain ``flock`` on the same file is refused (filelock's Unix lock is ``flock``)."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
from pathlib import Path

import pytest
from filelock import FileLock, Timeout

from dsh_memory_worker.worker.state.revision_files import migration_lock, migration_lock_file

_ROUNDS = 25
_CHILD = """
import os, sys
from pathlib import Path
from dsh_memory_worker.worker.state.revision_files import migration_lock
database, journal, rounds = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])
for _ in range(rounds):
    with migration_lock(database):
        with journal.open("a") as out:
            out.write(f"in {os.getpid()}\\n")
            out.flush()
            os.sched_yield()
            out.write(f"out {os.getpid()}\\n")
"""
_HOLDER = """
import sys
from pathlib import Path
from dsh_memory_worker.worker.state.revision_files import migration_lock
with migration_lock(Path(sys.argv[1])):
    print("held", flush=True)
    sys.stdin.readline()
"""


def _python(code: str, *args: str, **kwargs: object) -> subprocess.Popen[str]:
    return subprocess.Popen(  # type: ignore[call-overload,no-any-return]
        [sys.executable, "-c", code, *args],
        cwd=Path(__file__).resolve().parents[2],
        text=True,
        **kwargs,
    )


def test_the_lock_file_sits_beside_the_database(tmp_path: Path) -> None:
    database = tmp_path / "state.db"
    assert migration_lock_file(database) == tmp_path / "state.db.lock"
    with migration_lock(database):
        assert migration_lock_file(database).is_file()
    assert not database.exists()  # the lock never creates the database itself


@pytest.mark.integration
def test_processes_never_hold_it_together(tmp_path: Path) -> None:
    database, journal = tmp_path / "state.db", tmp_path / "journal"
    children = [_python(_CHILD, str(database), str(journal), str(_ROUNDS)) for _ in range(4)]
    assert [child.wait(timeout=120) for child in children] == [0, 0, 0, 0]
    lines = journal.read_text().splitlines()
    assert len(lines) == 4 * _ROUNDS * 2
    for enter, leave in zip(lines[::2], lines[1::2], strict=True):
        assert enter.startswith("in ") and leave == "out " + enter[3:]
    pids = {line.split()[1] for line in lines}
    assert pids == {str(child.pid) for child in children}


@pytest.mark.integration
def test_a_held_lock_refuses_flock_and_filelock_elsewhere(tmp_path: Path) -> None:
    database = tmp_path / "state.db"
    holder = _python(_HOLDER, str(database), stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert holder.stdout is not None and holder.stdin is not None
    try:
        assert holder.stdout.readline() == "held\n"
        fd = os.open(migration_lock_file(database), os.O_RDONLY)
        try:
            with pytest.raises(BlockingIOError):
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        finally:
            os.close(fd)
        with pytest.raises(Timeout):
            FileLock(migration_lock_file(database)).acquire(timeout=0)
    finally:
        holder.stdin.write("\n")
        holder.stdin.close()
        assert holder.wait(timeout=60) == 0
    with FileLock(migration_lock_file(database)).acquire(timeout=0):
        pass  # released with the holder
