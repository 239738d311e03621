"""benchmarks/redaction_bench.py runs end to end on a tiny home and prints its ratio line (not a
performance test)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.integration
def test_redaction_bench_prints_its_share_of_the_end_to_end_time() -> None:
    done = subprocess.run(
        [sys.executable, str(REPO / "benchmarks/redaction_bench.py"), "--sessions", "2",
         "--turns", "5", "--secret-every", "3"],
        capture_output=True, text=True, timeout=300, check=True,
    )  # fmt: skip
    out = done.stdout
    assert "generated 2 sessions, 20 messages" in out
    share = re.search(r"ratio redaction / end to end (\d+\.\d{3})", out)
    assert share is not None, out
    assert 0 < float(share.group(1)) < 1
    assert re.search(r"redaction alone: 20 messages in .* us/message", out)
    result = json.loads((REPO / "benchmarks/out/redaction_bench.json").read_text())
    assert result["messages"] == 20
    assert result["written"] >= 20
