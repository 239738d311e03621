"""The idle benchmark runs end to end on tiny homes (not a performance test): it settles each
home, follows it with ``run`` and ``daemon`` (half a second of warm-up, a one-second window: two
RSS samples), and reports CPU and RSS figures in its JSON."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO


@pytest.mark.integration
def test_idle_bench_reports_cpu_and_rss(tmp_path: Path) -> None:
    out = tmp_path / "idle_bench.json"
    done = subprocess.run(
        [
            sys.executable,
            str(REPO / "benchmarks/idle_bench.py"),
            "--sessions",
            "2",
            "4",
            "--turns",
            "2",
            "--seconds",
            "1",
            "--warmup",
            "0.5",
            "--daemon-state",
            "sqlite",
            "--rewritten",
            "2",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(out.read_text())
    assert [r["sessions"] for r in result["runs"]] == [2, 4]
    # The audit trail of a finished rewrite (2 summaries a session) went into each state database.
    assert done.stdout.count("each): 16 rows") == 2 and done.stdout.count("each): 32 rows") == 2
    assert result["poll_interval_s"] > 0
    for run in result["runs"]:
        for mode in ("run", "daemon"):
            m = run[mode]
            assert m["seconds"] >= 1
            assert 0 <= m["cpu_percent_of_core"] < 400
            assert 10 < m["rss_steady_mb"] <= m["rss_peak_mb"] < 4096
            assert m["processes"] >= 1 and m["settle_s"] > 0
        assert run["daemon"]["hints_sent"] is not None  # parsed from the daemon's last line
        assert run["run"]["hints_sent"] is None and run["run"]["entries_written"] == 0
        costs = run["poll_costs"]
        assert costs["discover_cpu_s"] >= 0 and 0 <= costs["poll_cpu_s"] < 60
        assert 0 < costs["reconcile_cpu_s"] < 60 and costs["predicted_cpu_percent"] > 0
        assert costs["hints"] == 0  # settled, and the seeded history owes nothing
        assert run["rewritten_summaries"] == 2
    assert "run: 4 / 2 sessions" in done.stdout and "daemon: 4 / 2 sessions" in done.stdout
