"""Crash-point sweeps: run a ``memory-worker`` command that dies just before its N-th
hypatia-lite write (``crash_points/sitecustomize.py``), for every N a clean run makes, then run it
again and compare the store with the clean run's.

Every run happens in the same directory (``work``), restored from a snapshot first, so the paths
the state database and the shelf registry hold stay true."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from cli_fork import run_cli
from conftest import REPO
from pipeline_support import dump

CRASH_POINTS = REPO / "tests" / "support" / "crash_points"
KILLED = 137


def restore(snapshot: Path, work: Path) -> None:
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(snapshot, work)


def differences(got: dict[str, Any], want: dict[str, Any]) -> tuple[dict[str, str], ...]:
    """Entries and edges that are extra (``+``), missing (``-``) or changed (``~``)."""
    out = []
    for rows, key in (("knowledge", "name"), ("statements", "triple")):
        have = {row[key]: row for row in got[rows]}
        need = {row[key]: row for row in want[rows]}
        out.append(
            {
                name: "+" if name not in need else "-" if name not in have else "~"
                for name in sorted(have.keys() | need.keys())
                if have.get(name) != need.get(name)
            }
        )
    return tuple(out)


def sweep(
    work: Path,
    snapshot: Path,
    args: Sequence[str],
    env: dict[str, str],
    counted: Path,
    check: Callable[[subprocess.CompletedProcess[str]], None],
) -> int:
    """The clean run of ``memory-worker ARGS`` (``check`` looks at it; its store is the
    reference), then one killed run per write it made, each followed by a run that must finish
    with the reference's store. Returns the number of crash points.

    Every run is a process of its own with the hook on its path, forked from the pre-imported
    server (``cli_fork``): the hook reads the run's environment, and ``os._exit(137)`` ends that
    process as ``kill -9`` would."""

    def run(**extra: str) -> subprocess.CompletedProcess[str]:
        return run_cli(args, env={**env, **extra}, site_dir=CRASH_POINTS, timeout=300)

    restore(snapshot, work)
    clean = run(MEMORY_WORKER_TEST_CRASH_COUNT=str(counted))
    assert clean.returncode == 0, clean.stderr
    check(clean)
    expected = dump(work)
    writes = counted.read_text().split()
    for point in range(1, len(writes) + 1):
        restore(snapshot, work)
        crashed = run(MEMORY_WORKER_TEST_CRASH_AT=str(point))
        assert crashed.returncode == KILLED, (point, crashed.stderr[-2000:])
        again = run()
        assert again.returncode == 0, (point, again.stderr[-2000:])
        got, where = dump(work), f"died before write {point} of {len(writes)} ({writes[point - 1]})"
        diff = differences(got, expected)
        assert diff == ({}, {}), f"{where}: entries {diff[0]}, edges {diff[1]}"
        assert got == expected, where
    return len(writes)
