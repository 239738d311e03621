"""The forgetting benchmark runs end to end on small shelves (not a performance test): it
retracts entries on both shelves, prints the ratio, the per-delete cost of each variant and the
insert throughput on both SQLite builds."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
from conftest import REPO


@pytest.mark.integration
def test_forget_benchmark_runs() -> None:
    out = subprocess.run(
        [
            sys.executable,
            str(REPO / "benchmarks/forget_bench.py"),
            "--small",
            "600",
            "--large",
            "1800",
            "--deletes",
            "5",
            "--inserts",
            "600",
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=240,
    ).stdout
    lines = out.splitlines()
    assert len(lines) == 8, out
    assert re.fullmatch(r"SQLite: sqlean\.py 3\.\d+\.\d+ \(stdlib 3\.\d+\.\d+\)", lines[0])
    for line, size in zip(lines[1:3], ("    600", "   1800"), strict=True):
        assert line.startswith(f"retract one entry, {size} entries ("), line
        assert re.search(r"median +\d+\.\d\d ms, mean +\d+\.\d\d ms$", line), line
    assert re.fullmatch(
        r"large / small per-delete ratio: \d+\.\d\d \(at most 2 allowed\)", lines[3]
    )
    variants = [line.split(", ", 1)[1].split(":")[0] for line in lines[4:7]]
    assert variants == [
        "secure + truncating checkpoint (now)",
        "secure, fsync instead of checkpoint",
        "off (before)",
    ]
    assert all(re.search(r"\d+\.\d\d ms median$", line) for line in lines[4:7])
    assert re.fullmatch(
        r"insert throughput, 600 entries: stdlib SQLite +\d+/s, sqlean\.py "
        r"without secure deletion +\d+/s, with it +\d+/s \(\d+\.\d\dx of before\)",
        lines[7],
    )
