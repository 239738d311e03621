"""Start-up time of the ``memory-worker`` command line, as a ratio to a bare Typer command.

    .venv/bin/python benchmarks/startup_bench.py [--runs 9] [--warmups 1]

The yardstick (the "floor") is ``--help`` of a one-command Typer app with a ``str`` option: what
any Typer command line costs to start. Each command below is run ``--runs`` times, interleaved
with the others (a machine that gets busier during the run slows all of them alike), and its
median wall time is printed with its ratio to the floor and the goal (``--warmups`` rounds of
every command run first, untimed: file caches, ``.pyc`` files; ``--runs 1 --warmups 0`` is the
smallest run that prints every figure, what the test suite's smoke test runs):

* ``memory-worker --help`` (goal ≤ 1.2×) and ``status --help`` (no goal; for scale);
* ``run --once`` on a home at rest: the shipped fixtures as the DSH home, already written, nothing
  new (goal ≤ 1.5×; answered from the at-rest record, ``worker/at_rest.py``);
* ``status`` on that small home (goal ≤ 1.5×);
* the first ``run --once`` on a fresh HOME: a new state database (migration included) and an
  empty DSH home (goal ≤ 3×); a new HOME is made before each run, outside the timing.

Every command runs with its own HOME and no ``MEMORY_WORKER_*`` / ``XDG_*`` / ``DSH_HOME`` /
``HYPATIA_LITE_HOME`` variable, so the machine's configuration does not leak in.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

_FLOOR = """
import typer
app = typer.Typer()
@app.command()
def status(shelf: str | None = typer.Option(None, help="A shelf.")) -> None:
    pass
app()
"""
FLOOR = "floor: a Typer app --help"
#: Command → its goal as a ratio to the floor (None: printed for scale).
GOALS: dict[str, float | None] = {
    "memory-worker --help": 1.2,
    "memory-worker status --help": None,
    "run --once, home at rest": 1.5,
    "status, small home": 1.5,
    "run --once, fresh HOME": 3.0,
}


def _memory_worker() -> list[str]:
    beside = Path(sys.executable).parent / "memory-worker"
    if beside.exists():
        return [str(beside)]
    return [sys.executable, "-c", "from dsh_memory_worker.worker.cli import main; main()"]


def _env(home: Path) -> dict[str, str]:
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("MEMORY_WORKER_", "XDG_"))
        and name not in ("DSH_HOME", "HYPATIA_LITE_HOME")
    }
    return {**env, "HOME": str(home)}


def _wall(argv: list[str], env: dict[str, str], ok: tuple[int, ...] = (0,)) -> float:
    started = time.perf_counter()
    done = subprocess.run(
        argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=300
    )
    elapsed = time.perf_counter() - started
    if done.returncode not in ok:
        raise SystemExit(
            f"{' '.join(argv)} exited with {done.returncode}: "
            f"{done.stderr.decode(errors='replace')[-500:]}"
        )
    return elapsed


def _home_at_rest(root: Path) -> Path:
    """A HOME whose DSH home is the shipped fixtures, written, then left to settle and run
    again so the at-rest record exists (its files must be over a second old)."""
    home = root / "rest"
    env = _env(home)
    mw = _memory_worker()
    subprocess.run(
        [*mw, "demo-home", str(home / ".dsh")],
        env=env,
        check=True,
        capture_output=True,
        timeout=300,
    )
    subprocess.run([*mw, "run", "--once"], env=env, check=True, capture_output=True, timeout=300)
    _wait_settled(home)
    for argv in (["run", "--once"], ["status"]):
        subprocess.run([*mw, *argv], env=env, check=True, capture_output=True, timeout=300)
    return home


def _wait_settled(home: Path) -> None:
    """Wait until every file and directory under ``home`` was last changed (mtime and ctime)
    more than the at-rest record's ``SETTLE_NS`` ago: a full run records the home only then."""
    from dsh_memory_worker.worker.at_rest import SETTLE_NS

    def newest() -> int:
        found = 0
        for directory, _dirs, files in os.walk(home):
            for path in (directory, *(os.path.join(directory, name) for name in files)):
                try:
                    st = os.stat(path)
                except OSError:
                    continue
                found = max(found, st.st_mtime_ns, st.st_ctime_ns)
        return found

    while (wait := newest() + SETTLE_NS + 50_000_000 - time.time_ns()) > 0:
        time.sleep(wait / 1e9)


def measure(runs: int, root: Path, warmups: int = 1) -> dict[str, float]:
    """Median wall seconds of each command over ``runs`` interleaved runs, after ``warmups``
    untimed rounds."""
    mw = _memory_worker()
    rest = _home_at_rest(root)
    quiet = root / "quiet"
    quiet.mkdir()
    fresh_count = 0

    def fresh() -> float:
        nonlocal fresh_count
        fresh_count += 1
        home = root / f"fresh-{fresh_count}"
        (home / ".dsh" / "sessions").mkdir(parents=True)
        try:
            return _wall([*mw, "run", "--once"], _env(home))
        finally:
            shutil.rmtree(home, ignore_errors=True)

    commands: dict[str, Callable[[], float]] = {
        "python -c pass": lambda: _wall([sys.executable, "-c", "pass"], _env(quiet)),
        FLOOR: lambda: _wall([sys.executable, "-c", _FLOOR, "--help"], _env(quiet)),
        "memory-worker --help": lambda: _wall([*mw, "--help"], _env(quiet)),
        "memory-worker status --help": lambda: _wall([*mw, "status", "--help"], _env(quiet)),
        "run --once, home at rest": lambda: _wall([*mw, "run", "--once"], _env(rest)),
        "status, small home": lambda: _wall([*mw, "status"], _env(rest)),
        "run --once, fresh HOME": fresh,
    }
    times: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(warmups):  # file caches, .pyc files
        for command in commands.values():
            command()
    for _ in range(runs):
        for name, command in commands.items():
            times[name].append(command())
    return {name: statistics.median(values) for name, values in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=9, help="runs of each command (median)")
    parser.add_argument(
        "--warmups", type=int, default=1, help="untimed rounds of every command first"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="startup-bench-") as scratch:
        found = measure(max(1, args.runs), Path(scratch), max(0, args.warmups))
    floor = found[FLOOR]
    print(f"{'python -c pass':<30} {found['python -c pass'] * 1000:8.1f} ms")
    print(f"{FLOOR:<30} {floor * 1000:8.1f} ms")
    for name, goal in GOALS.items():
        ratio = found[name] / floor
        verdict = (
            ""
            if goal is None
            else (f" (goal <= {goal:.1f}x: {'within' if ratio <= goal else 'above'})")
        )
        print(f"{name:<30} {found[name] * 1000:8.1f} ms  {ratio:5.2f}x the floor{verdict}")


if __name__ == "__main__":
    main()
