"""The FTS indexing benchmark runs end to end on a few documents (not a performance test): both
indexed variants pass FTS5's integrity check and find every edge."""

from __future__ import annotations

import subprocess
import sys

import pytest
from conftest import REPO


@pytest.mark.integration
def test_fts_index_benchmark_runs() -> None:
    out = subprocess.run(
        [
            sys.executable,
            str(REPO / "benchmarks/fts_index_bench.py"),
            "--docs",
            "400",
            "--batches",
            "4",
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout
    lines = out.splitlines()
    assert [line.split("  ")[0].strip() for line in lines[:3]] == [
        "no index",
        "insert trigger",
        "insert … select",
    ]
    assert all(line.endswith("µs/document") for line in lines[:3])
    assert lines[3].startswith("indexing cost (above the bare rows), trigger / insert … select: ")
