"""The cluster benchmark runs end to end on a tiny home (not a performance test): daemon + 1 and
2 Celery workers on the SQLite shelf and on a PostgreSQL shelf, the 4 runs in its JSON with the
exact message counts and positive rates."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO
from redis_dbs import redis_db


@pytest.mark.integration
@pytest.mark.timeout(900)
def test_cluster_bench_reports_four_runs(tmp_path: Path) -> None:
    out = tmp_path / "cluster_bench.json"
    done = subprocess.run(
        [
            sys.executable,
            str(REPO / "benchmarks/cluster_bench.py"),
            "--sessions",
            "2",
            "--turns",
            "2",
            "--out",
            str(out),
            "--redis-db",
            str(redis_db("cluster_bench_smoke")),
        ],
        capture_output=True,
        text=True,
        timeout=850,
    )
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    result = json.loads(out.read_text())
    assert result["expected_messages"] == 8  # 2 sessions × 2 turns × 2 messages
    assert result["machine"]["nproc"] >= 1
    runs = {(r["store"], r["workers"]): r for r in result["runs"]}
    assert set(runs) == {(s, w) for s in ("sqlite", "postgresql") for w in (1, 2)}
    for run in runs.values():
        assert run["messages"] == 8
        assert run["seconds"] > 0 and run["messages_per_s"] > 0
    assert all(v > 0 for v in result["ratios"]["two_over_one"].values())
    assert all(v > 0 for v in result["ratios"]["postgresql_over_sqlite"].values())
    assert "cores" in done.stdout
