"""The worker benchmark runs end to end on a tiny home (not a performance test): the floor (bare
decode + a bulk load of the same rows), the ratios, ``--jobs`` against one process, the profile
breakdown and the latency figures are all in its JSON, with sane values."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO


@pytest.mark.integration
def test_worker_bench_reports_floor_ratios_profile_and_latency(tmp_path: Path) -> None:
    out = tmp_path / "worker_bench.json"
    done = subprocess.run(
        [
            sys.executable,
            str(REPO / "benchmarks/worker_bench.py"),
            "--sessions",
            "2",
            "--turns",
            "4",
            "--samples",
            "3",
            "--jobs",
            "2",
            "--profile",
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
    assert result["machine"]["cpus"] >= 1
    # chat: 2 sessions × 4 turns × 2 messages, + 2 session nodes, an edge per message
    for name, messages, written, edges in (("chat", 16, 18, 16), ("tools", 10, 10, 0)):
        w = result[name]
        assert w["bare"]["messages"] == messages
        assert w["embedded"]["written"] == written and w["embedded"]["failed"] == 0
        assert w["embedded"]["edges"] == edges
        bulk = w["bulk_load"]
        # every message entry (+ session nodes) and every edge, each with its document
        assert bulk["entries"] == written and bulk["statements"] == edges
        assert bulk["documents"] == bulk["entries"] + bulk["statements"]
        assert bulk["seconds"] > 0
        assert w["floor_seconds"] == pytest.approx(w["bare"]["seconds"] + bulk["seconds"])
        assert w["floor_ratio"] > 0 and 0 < w["ratio"] < w["floor_ratio"] + 1e-9
        assert w["parallel"]["jobs"] == 2 and w["parallel"]["written"] == written
        assert w["parallel_speedup"] > 0 and w["parallel_floor_ratio"] > 0
    prof = result["profile"]
    assert prof["messages"] == 16 and prof["self_seconds"] > 0
    shares = [a["share"] for a in prof["areas"].values()]
    assert sum(shares) == pytest.approx(1.0)
    assert any(k.startswith("store writes") for k in prof["areas"])
    assert any(k.startswith("state DB") for k in prof["areas"])
    assert (tmp_path / "worker_profile.txt").read_text().strip()
    lat = result["latency"]
    assert lat["samples"] == 3 and 0 < lat["p50_s"] <= lat["p95_s"] <= lat["max_s"]
    assert "/ floor" in done.stdout and "against one process" in done.stdout
