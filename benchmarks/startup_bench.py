"""Start-up time of the ``memory-worker`` command line, as a ratio to a bare interpreter.

    .venv/bin/python benchmarks/startup_bench.py [--runs 9]

Runs ``python -c pass``, ``memory-worker --help`` and ``memory-worker status --help`` in turn,
``--runs`` times each, and prints each command's median wall time and its ratio to
``python -c pass`` (goal: at most 8x). For scale it also times the floor: ``--help`` of a
one-command Typer app with a ``str`` option (Typer, Rich and, since Typer builds pydantic
adapters for options, pydantic). The commands are interleaved, so a machine that gets busier
during the run slows all of them alike.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

GOAL = 8.0
_FLOOR = """
import typer
app = typer.Typer()
@app.command()
def status(shelf: str | None = typer.Option(None, help="A shelf.")) -> None:
    pass
app()
"""


def _memory_worker() -> list[str]:
    beside = Path(sys.executable).parent / "memory-worker"
    if beside.exists():
        return [str(beside)]
    return [sys.executable, "-c", "from worker.cli import main; main()"]


def _wall(argv: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - started


def measure(runs: int) -> dict[str, float]:
    """Median wall seconds of each command over ``runs`` interleaved runs."""
    commands = {
        "python -c pass": [sys.executable, "-c", "pass"],
        "memory-worker --help": [*_memory_worker(), "--help"],
        "memory-worker status --help": [*_memory_worker(), "status", "--help"],
        "floor: a Typer app --help": [sys.executable, "-c", _FLOOR, "--help"],
    }
    times: dict[str, list[float]] = {name: [] for name in commands}
    for argv in commands.values():  # one warm-up each: file caches, .pyc files
        _wall(argv)
    for _ in range(runs):
        for name, argv in commands.items():
            times[name].append(_wall(argv))
    return {name: statistics.median(values) for name, values in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9, help="runs of each command (median)")
    args = parser.parse_args()
    found = measure(max(1, args.runs))
    base = found["python -c pass"]
    print(f"{'python -c pass':<28} {base * 1000:8.1f} ms")
    for name in ("memory-worker --help", "memory-worker status --help",
                 "floor: a Typer app --help"):
        ratio = found[name] / base
        verdict = "" if name.startswith("floor") else (
            f" ({'within' if ratio <= GOAL else 'above'} the {GOAL:.0f}x goal)")
        print(f"{name:<28} {found[name] * 1000:8.1f} ms  {ratio:5.1f}x python -c pass{verdict}")


if __name__ == "__main__":
    main()
