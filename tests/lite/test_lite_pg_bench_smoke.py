"""The SQLite-vs-PostgreSQL shelf benchmark runs end to end on a few messages (not a performance
test): four measurements (two shelves × 1 and 2 writers), every writer's entries written."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
from conftest import REPO

pytestmark = pytest.mark.integration


def test_lite_pg_benchmark_runs() -> None:
    out = subprocess.run(
        [
            sys.executable,
            str(REPO / "benchmarks/lite_pg_bench.py"),
            "--messages",
            "40",
            "--batch",
            "20",
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    ).stdout
    lines = out.splitlines()
    assert re.match(r"^\d+ CPU cores here ", lines[0])
    assert [line.split()[0] for line in lines[1:3]] == ["sqlite", "postgresql"]
    for line in lines[1:3]:
        assert re.search(r"1 writer +\d+ msg/s +2 writers +\d+ msg/s +\(\d+\.\d\dx\)$", line)
    assert lines[3].startswith("  postgresql / sqlite: ")
