"""The reader benchmarks run end to end on a small synthetic log (not a performance test)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.integration
def test_generator_and_benchmark_run(tmp_path: Path) -> None:
    log = tmp_path / "small.v4.jsonl.zstd"
    gen = subprocess.run(
        [sys.executable, str(REPO / "benchmarks/dsh_generate.py"), "--events", "2000",
         "--out", str(log)],
        capture_output=True, text=True, check=True, timeout=120,
    )  # fmt: skip
    assert "wrote 2000 events in 41 frames" in gen.stdout
    bench = subprocess.run(
        [sys.executable, str(REPO / "benchmarks/dsh_read_bench.py"), str(log), "--repeat", "1"],
        capture_output=True, text=True, check=True, timeout=120,
    )  # fmt: skip
    out = bench.stdout
    assert "(a) full decode of 2000 events" in out
    assert "ratio ours / bare" in out and "ratio end / start" in out
    assert "(c) peak RSS" in out
