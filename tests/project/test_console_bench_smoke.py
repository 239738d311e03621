"""The console benchmark runs end to end on small homes (not a performance test) and prints its
three ratios."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
from conftest import REPO

pytestmark = pytest.mark.integration  # a real subprocess or server


def test_console_benchmark_runs() -> None:
    out = subprocess.run(
        [
            sys.executable,
            str(REPO / "benchmarks/console_bench.py"),
            "--repeat",
            "1",
            "--messages",
            "100",
            "400",
            "--sessions",
            "5",
            "60",
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    ).stdout.splitlines()
    assert len(out) == 11, out
    assert re.fullmatch(r"session page 3 of 4, 400 messages: ms: \d+\.\d", out[3])
    assert re.fullmatch(r"ratio session page 400 / 100 messages: \d+\.\d+", out[8])
    assert re.fullmatch(r"ratio session page 400 / 100 messages, first view: \d+\.\d+", out[9])
    assert re.fullmatch(r"ratio sessions page 60 / 5 sessions: \d+\.\d+", out[10])
