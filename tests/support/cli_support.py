"""Run the installed ``memory-worker`` as a user would, in a temporary world: its own ``HOME``,
data directory, hypatia-lite home and DSH home under ``tmp``, no inherited ``MEMORY_WORKER_*``
setting, and an 80-column terminal width (``COLUMNS``) unless a test says otherwise."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from cli_fork import run_cli

BIN = Path(sys.executable).parent


def cli_env(tmp: Path, **extra: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("MEMORY_WORKER_", "DSH_", "HYPATIA_LITE", "PYTHON"))
    }
    env.update(
        HOME=str(tmp / "home"),
        MEMORY_WORKER_DATA_DIR=str(tmp / "data"),
        HYPATIA_LITE_HOME=str(tmp / "lite"),
        DSH_HOME=str(tmp / "dsh"),
        MEMORY_WORKER_CONFIG="",
        COLUMNS="80",
        MEMORY_WORKER_JOBS_ADAPT="false",
    )
    env.update(extra)
    return env


def memory_worker(tmp: Path, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
    """``memory-worker ARGS`` in ``tmp``'s world: a real process, forked from a pre-imported
    parent (:func:`cli_fork.run_cli`, the contract of ``subprocess.run``)."""
    return run_cli(args, env=cli_env(tmp, **extra), cwd=tmp, timeout=300)


def demo_recorded(tmp: Path) -> None:
    """The demo DSH home under ``tmp/dsh``, ingested once (``run --once``)."""
    (tmp / "home").mkdir(parents=True, exist_ok=True)
    for args in (("demo-home", str(tmp / "dsh")), ("run", "--once")):
        done = memory_worker(tmp, *args)
        assert done.returncode == 0, done.stderr


def tree(root: Path) -> list[str]:
    """Every path under ``root``, relative, sorted."""
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))
