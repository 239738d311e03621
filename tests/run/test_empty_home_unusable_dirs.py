"""A first ``run --once`` on an empty home whose data directory (or hypatia-lite home) sits under
a regular file ends in one line, never a traceback (issue 32, defect 8 / build item 9): the fast
path of :mod:`worker.run.empty_home` leaves such a home to the full path, which says what is
wrong and exits 2 (the run could not start); the file is left as it was. A real process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

BIN = Path(sys.executable).parent / "memory-worker"


def _run(tmp_path: Path, data: Path, lite: Path) -> subprocess.CompletedProcess[str]:
    (tmp_path / "dsh" / "sessions").mkdir(parents=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORY_WORKER_")}
    env.update(
        MEMORY_WORKER_DATA_DIR=str(data),
        MEMORY_WORKER_LITE_HOME=str(lite),
        XDG_CACHE_HOME=str(tmp_path / "cache"),
        COLUMNS="250",
    )
    env.pop("HYPATIA_LITE_HOME", None)
    return subprocess.run(
        [str(BIN), "run", "--once", "--dsh-home", str(tmp_path / "dsh")],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize("under", ["data", "lite"])
def test_a_directory_under_a_regular_file_is_one_line(tmp_path: Path, under: str) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_bytes(b"not a directory\n")
    data = blocker / "data" if under == "data" else tmp_path / "data"
    lite = blocker / "lite" if under == "lite" else tmp_path / "lite"
    done = _run(tmp_path, data, lite)
    assert "Traceback" not in done.stderr, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("memory-worker: "), lines[0]
    assert str(blocker) in lines[0] and "Not a directory" in lines[0], lines[0]
    assert done.returncode == 2, done.stderr
    assert blocker.read_bytes() == b"not a directory\n"
