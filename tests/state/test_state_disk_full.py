"""A full disk under the SQLite state database is named as such, with where (issue 22, item 9),
not as SQLite's "disk I/O error". The disk is real: a 4 MiB tmpfs mounted on the data directory
(this test runs as root, like the PostgreSQL fault tests), filled to the last byte after a first
run made the state database. ``run --once`` then cannot open it, and says why in one line naming
the full disk and the file (exit 2); once space is freed, the next run finishes the work."""

from __future__ import annotations

import contextlib
import errno
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from fault_support import lagging, run_once
from worker_dshgen import conversation

pytestmark = pytest.mark.integration


@contextlib.contextmanager
def _tmpfs(where: Path, size: str) -> Iterator[Path]:
    where.mkdir(parents=True)
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
        capture_output=True,
        text=True,
    )
    assert mounted.returncode == 0, f"this test mounts a tmpfs (as root): {mounted.stderr}"
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True)


def _fill(directory: Path) -> Path:
    filler = directory / "filler"
    chunk = b"\0" * 65536
    with open(filler, "wb", buffering=0) as out:
        while True:
            try:
                out.write(chunk)
            except OSError as exc:
                assert exc.errno == errno.ENOSPC
                break
    for size in (4096, 512, 1):  # the last bytes too
        with open(filler, "ab", buffering=0) as out, contextlib.suppress(OSError):
            while True:
                out.write(b"\0" * size)
    return filler


def test_a_full_disk_under_the_state_database_is_named(tmp_path: Path) -> None:
    with _tmpfs(tmp_path / "data", "4m") as data:
        conversation(tmp_path / "dsh", "full-1", "/home/dev/full", 2)
        first = run_once(tmp_path)  # the state database is made on the small disk
        assert first.returncode == 0, first.stderr
        conversation(tmp_path / "dsh", "full-2", "/home/dev/full", 40)
        filler = _fill(data)
        full = run_once(tmp_path)
        # Opening it writes (WAL index, migration check): the run cannot start, one line, exit 2.
        assert full.returncode == 2, full.stderr
        assert (
            full.stderr.strip()
            .splitlines()[-1]
            .startswith(
                "memory-worker: cannot open the state database: disk full: the state database "
                f"{data / 'state.db'} cannot grow (0 KiB free on its filesystem)"
            )
        ), full.stderr
        assert "disk I/O error" not in full.stderr
        filler.unlink()
        again = run_once(tmp_path)
        assert again.returncode == 0, again.stderr
        assert lagging(tmp_path) == set()
