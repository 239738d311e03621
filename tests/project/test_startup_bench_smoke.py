"""The start-up benchmark prints its ratios in one run (not a performance test), and the reason
start-up is fast holds: ``--help`` and ``status --help`` load none of the runtime."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
from conftest import REPO

RUNTIME = (
    "dsh_memory_worker.worker.settings",
    "dsh_memory_worker.worker.jobs",
    "dsh_memory_worker.worker.run",
    "dsh_memory_worker.worker.watch",
    "dsh_memory_worker.worker.observability",
    "dsh_memory_worker.worker.state",
    "sqlalchemy",
    "celery",
    "prometheus_client",
    "alembic",
    "pydantic_settings",
    "mcp",
    "openai",
    "dsh_memory_worker.memory.store",
    "dsh_memory_worker.memory.dsh",
)


@pytest.mark.integration
def test_startup_benchmark_prints_every_ratio() -> None:
    out = subprocess.run(
        [
            sys.executable,
            str(REPO / "benchmarks/startup_bench.py"),
            "--runs",
            "1",
            "--warmups",
            "0",
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
    ).stdout.splitlines()
    assert re.fullmatch(r"python -c pass +\d+\.\d ms", out[0])
    assert re.fullmatch(r"floor: a Typer app --help +\d+\.\d ms", out[1])
    goals = {
        "memory-worker --help": "1.2",
        "memory-worker status --help": None,
        "run --once, home at rest": "1.5",
        "status, small home": "1.5",
        "run --once, fresh HOME": "3.0",
    }
    assert len(out) == 2 + len(goals)
    for line, (name, goal) in zip(out[2:], goals.items(), strict=True):
        verdict = "" if goal is None else rf" \(goal <= {re.escape(goal)}x: (within|above)\)"
        assert re.fullmatch(
            rf"{re.escape(name)} +\d+\.\d ms +\d+\.\d\dx the floor{verdict}", line
        ), line


@pytest.mark.parametrize(
    "argv",
    [
        ["--help"],
        ["status", "--help"],
        ["worker", "--help"],
        ["--version"],
        ["service", "install", "--help"],
    ],
)
@pytest.mark.integration
def test_help_and_version_import_no_runtime(argv: list[str]) -> None:
    probe = (
        "import sys\nfrom dsh_memory_worker.worker.cli import main\n"
        f"sys.argv = ['memory-worker', *{argv!r}]\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        f"print(sorted(m for m in sys.modules if m.split('.')[0] in {{n.split('.')[0] for n in "
        f"{RUNTIME!r}}} and any(m == n or m.startswith(n + '.') for n in {RUNTIME!r})))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120
    )
    assert done.stdout.strip().splitlines()[-1] == "[]"
