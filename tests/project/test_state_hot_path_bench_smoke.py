"""The state hot-path benchmark runs end to end (not a performance test): a few rounds on SQLite
and on the PostgreSQL server at 127.0.0.1:5432, one line per dialect with the three paths'
figures and their ratios, and the throwaway PostgreSQL database dropped again."""

from __future__ import annotations

import re
import subprocess
import sys

import psycopg
import pytest
from conftest import REPO

_LINE = re.compile(
    r"^\[(sqlite|postgresql)\] one job's state round .*: prepared (\d+) µs, core (\d+) µs, "
    r"floor (\d+) µs; core / prepared (\d+\.\d\d), prepared / floor (\d+\.\d\d)$"
)


def _bench_databases() -> set[str]:
    with psycopg.connect("host=127.0.0.1 port=5432 user=postgres dbname=test") as conn:
        rows = conn.execute("SELECT datname FROM pg_database WHERE datname LIKE 'mw_bench_%'")
        return {row[0] for row in rows}


@pytest.mark.integration
def test_state_hot_path_bench_prints_both_dialects() -> None:
    before = _bench_databases()
    done = subprocess.run(
        [sys.executable, str(REPO / "benchmarks/state_hot_path_bench.py"), "--rounds", "20"],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    found = [_LINE.match(line) for line in lines]
    assert [m.group(1) if m else line for m, line in zip(found, lines, strict=True)] == [
        "sqlite",
        "postgresql",
    ]
    for match in found:
        assert match is not None and all(int(match.group(i)) > 0 for i in (2, 3, 4))
    assert _bench_databases() == before
