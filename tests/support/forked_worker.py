"""``memory-worker ARGS`` as :func:`hostile_support.run_worker` runs it (the hostile-input
environment, the same outcome fields) for a test that reads only the outcome: the process is
forked from a pre-imported parent (:func:`cli_fork.run_cli`), not started from a fresh
interpreter, and no peak RSS is taken (a test that measures memory keeps ``run_worker``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from cli_fork import run_cli
from hostile_support import env


@dataclass
class Ran:
    returncode: int
    stdout: str
    stderr: str
    #: stderr's non-blank lines
    lines: list[str] = field(default_factory=list)


def run_worker_forked(
    root: Path, *args: str, environ: dict[str, str] | None = None, timeout: float = 180
) -> Ran:
    root.mkdir(parents=True, exist_ok=True)
    done = run_cli(args, env=environ or env(root), timeout=timeout)
    return Ran(
        done.returncode,
        done.stdout,
        done.stderr,
        [line for line in done.stderr.splitlines() if line.strip()],
    )
