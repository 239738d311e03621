"""The start-up benchmark prints its ratios in one run (not a performance test), and the reason
start-up is fast holds: ``--help`` and ``status --help`` load none of the runtime."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
from conftest import REPO

RUNTIME = ("worker.settings", "worker.jobs", "worker.run", "worker.watch", "worker.observability",
           "worker.state", "sqlalchemy", "celery", "prometheus_client", "alembic",
           "pydantic_settings", "mcp", "openai", "memory.store", "memory.dsh")


@pytest.mark.integration
def test_startup_benchmark_prints_both_ratios() -> None:
    out = subprocess.run(
        [sys.executable, str(REPO / "benchmarks/startup_bench.py"), "--runs", "1"],
        capture_output=True, text=True, check=True, timeout=300,
    ).stdout.splitlines()
    assert re.fullmatch(r"python -c pass +\d+\.\d ms", out[0])
    for line, name in zip(out[1:3], ("memory-worker --help", "memory-worker status --help"),
                          strict=True):
        assert re.fullmatch(rf"{re.escape(name)} +\d+\.\d ms +\d+\.\dx python -c pass "
                            r"\((within|above) the 8x goal\)", line), line
    assert re.fullmatch(r"floor: a Typer app --help +\d+\.\d ms +\d+\.\dx python -c pass",
                        out[3])


@pytest.mark.parametrize("argv", [["--help"], ["status", "--help"], ["worker", "--help"],
                                  ["--version"], ["service", "install", "--help"]])
def test_help_and_version_import_no_runtime(argv: list[str]) -> None:
    probe = (
        "import sys\nfrom worker.cli import main\n"
        f"sys.argv = ['memory-worker', *{argv!r}]\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        f"print(sorted(m for m in sys.modules if m.split('.')[0] in {{n.split('.')[0] for n in "
        f"{RUNTIME!r}}} and any(m == n or m.startswith(n + '.') for n in {RUNTIME!r})))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          check=True, timeout=120)
    assert done.stdout.strip().splitlines()[-1] == "[]"
