"""The static checks the docs promise, run as part of the suite.

``ruff check`` and ``ruff format --check`` over every Python folder, and ``mypy`` (strict, on the
installed packages, laid out by tests/support/typecheck.py). They are tests so that the README's one
test command
checks them too, and so that pytest-xdist runs them beside the other tests instead of after them
(mypy alone is half a minute of CPU on a fresh clone). Each failure shows the tool's own report.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from typecheck import run_mypy

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
#: Every folder and file of Python the project keeps (docs/development.md names the same list).
CODE = (
    "dsh_memory_worker",
    "hypatia-lite",
    "memory",
    "worker",
    "migrations",
    "tests",
    "benchmarks",
    "deploy",
    "setup.py",
)


def _run(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv, cwd=REPO, capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL
    )


def test_ruff_check_finds_nothing() -> None:
    done = _run(str(BIN / "ruff"), "check", "-q", *CODE)
    assert done.returncode == 0, f"run .venv/bin/ruff check {' '.join(CODE)}\n{done.stdout}"


def test_ruff_format_would_change_nothing() -> None:
    done = _run(str(BIN / "ruff"), "format", "-q", "--check", *CODE)
    assert done.returncode == 0, f"run .venv/bin/ruff format {' '.join(CODE)}\n{done.stdout}"


def test_mypy_strict_finds_nothing() -> None:
    done = run_mypy(str(BIN / "mypy"))
    assert done.returncode == 0, (
        f"run .venv/bin/python tests/support/typecheck.py\n{done.stdout}{done.stderr}"
    )
    assert "Success: no issues found" in done.stdout
