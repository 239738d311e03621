"""`run --once --jobs N` uses fewer processes when fewer cores are free or the home is small, says
so in one line, and writes exactly what one process writes.

The free cores come from a stand-in probe (the real one measures a machine whose load the test
cannot fix); the children, the split and the final pass are the real ones."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO
from pipeline_support import dump

from dsh_memory_worker.worker.jobs.runtime import build_runtime
from dsh_memory_worker.worker.run import cpu_budget
from dsh_memory_worker.worker.run.cpu_budget import (
    MIN_BYTES_PER_PROCESS,
    MIN_WINDOW_S,
    CpuProbe,
    ProcessPlan,
    plan_processes,
)
from dsh_memory_worker.worker.run.once_children import OnceChildren, OnceTotals
from dsh_memory_worker.worker.run.once_parallel import run_once
from dsh_memory_worker.worker.settings import load_settings

sys.path.insert(0, str(REPO / "benchmarks"))
from worker_dshgen import conversation

CORES = len(os.sched_getaffinity(0))


@pytest.mark.parametrize(
    ("requested", "free", "sessions", "log_bytes", "plan"),
    [
        (2, 2.0, 10, 10 << 20, ProcessPlan(2)),
        (2, 1.4, 10, 10 << 20, ProcessPlan(2)),  # 0.4 of a core counts as one
        (2, 1.3, 10, 10 << 20, ProcessPlan(1, f"1.3 of {CORES} cores free")),
        (4, 2.3, 10, 10 << 20, ProcessPlan(2, f"2.3 of {CORES} cores free")),
        (2, 0.0, 10, 10 << 20, ProcessPlan(1, f"0.0 of {CORES} cores free")),
        (3, 8.0, 2, 10 << 20, ProcessPlan(2, "2 session(s)")),
        (2, 2.0, 10, MIN_BYTES_PER_PROCESS * 2 - 1, ProcessPlan(1, "0.5 MiB of logs")),
        (2, 2.0, 10, MIN_BYTES_PER_PROCESS * 2, ProcessPlan(2)),
    ],
)
def test_plan_processes(
    requested: int, free: float, sessions: int, log_bytes: int, plan: ProcessPlan
) -> None:
    assert (
        plan_processes(requested, free_cores=free, sessions=sessions, log_bytes=log_bytes) == plan
    )


def test_probe_measures_a_window_of_at_least_its_minimum() -> None:
    started = time.monotonic()
    free = CpuProbe().free_cores()
    assert time.monotonic() - started >= MIN_WINDOW_S
    assert 0.0 <= free <= CORES


class _Probe:
    """Stands in for :class:`CpuProbe`: reports ``FREE`` cores."""

    FREE: float = 0.0
    made = 0

    def __init__(self) -> None:
        type(self).made += 1

    def free_cores(self) -> float:
        return self.FREE


def _home(root: Path, sessions: int, turns: int, answer_bytes: int = 0) -> Path:
    """Plain (uncompressed) logs, so their size is what the plan weighs (``answer_bytes``: long
    answers, for a big home of few turns)."""
    for i in range(sessions):
        conversation(
            root / "dsh",
            f"a-{i}",
            f"/home/dev/adapt-{i % 2}",
            turns,
            title=f"Adapt {i}" if i % 2 == 0 else None,
            batch_turns=10,
            created_at=1_764_000_000_000 + i,
            answer_bytes=answer_bytes,
        )
    return root / "dsh"


def _run(
    root: Path, home: Path, jobs: int, adapt: bool
) -> tuple[OnceTotals, list[str], list[int | None]]:
    settings = load_settings(
        None, dsh_home=home, data_dir=root / "data", lite_home=root / "lite", jobs_adapt=adapt
    )
    children = OnceChildren(settings, settings.store_shelf, jobs) if jobs > 1 else None
    said: list[str] = []
    try:
        runtime = build_runtime(settings, force_idle=True)
        try:
            totals = run_once(runtime, settings.store_shelf, children=children, say=said.append)
        finally:
            runtime.close()
    finally:
        if children is not None:
            children.stop()
    codes = [] if children is None else [c.process.exitcode for c in children.children]
    return totals, said, codes


def _same(root: Path, reference: Path) -> dict[str, Any]:
    got = dump(root)
    assert got == dump(reference)
    return got


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, OnceTotals]:
    """A home with more than 2 × 256 KiB of logs, and its one-process run: long answers make
    the bytes the plan weighs, so the four runs of it write a few hundred records, not ~1,800."""
    src = tmp_path_factory.mktemp("adapt-src")
    home = _home(src, sessions=6, turns=24, answer_bytes=4000)
    assert sum(p.stat().st_size for p in home.rglob("session*.jsonl*")) >= 2 * MIN_BYTES_PER_PROCESS
    one = tmp_path_factory.mktemp("adapt-one")
    totals, said, _codes = _run(one, home, 1, adapt=True)
    assert said == [] and totals.failed == 0 and totals.sessions == 6
    return home, one, totals


@pytest.fixture
def probe(monkeypatch: pytest.MonkeyPatch) -> type[_Probe]:
    """:class:`_Probe` in place of the real probe; its ``FREE`` and ``made`` are put back after
    the test."""
    monkeypatch.setattr(cpu_budget, "CpuProbe", _Probe)  # once_parallel imports it per --jobs run
    monkeypatch.setattr(_Probe, "FREE", 0.0)
    monkeypatch.setattr(_Probe, "made", 0)
    return _Probe


def _did_the_same(totals: OnceTotals, reference: OnceTotals) -> None:
    assert (totals.sessions, totals.new_events, totals.written, totals.edges, totals.failed) == (
        reference.sessions,
        reference.new_events,
        reference.written,
        reference.edges,
        0,
    )


def test_busy_cores_run_in_one_process(
    big: tuple[Path, Path, OnceTotals], tmp_path: Path, probe: type[_Probe]
) -> None:
    home, one, reference = big
    probe.FREE = 0.6
    totals, said, codes = _run(tmp_path, home, 2, adapt=True)
    assert said == [f"memory-worker: --jobs 2: 0.6 of {CORES} cores free; running in one process"]
    # Sent no sessions, they ended (or were ended by the stop) without doing anything.
    assert totals.processes == 1 and None not in codes and len(codes) == 2
    _did_the_same(totals, reference)
    assert len(_same(tmp_path, one)["knowledge"]) == reference.written


def test_free_cores_split_the_home(
    big: tuple[Path, Path, OnceTotals], tmp_path: Path, probe: type[_Probe]
) -> None:
    home, one, reference = big
    probe.FREE = 2.0
    totals, said, codes = _run(tmp_path, home, 2, adapt=True)
    assert said == [] and totals.processes == 2 and codes == [0, 0]
    _did_the_same(totals, reference)
    _same(tmp_path, one)


def test_a_small_home_runs_in_one_process(tmp_path: Path, probe: type[_Probe]) -> None:
    home = _home(tmp_path / "src", sessions=3, turns=4)
    probe.FREE = 2.0
    totals, said, _codes = _run(tmp_path / "two", home, 2, adapt=True)
    assert said == ["memory-worker: --jobs 2: 0.0 MiB of logs; running in one process"]
    # Two messages per turn, and the nodes of the two titled sessions.
    assert totals.processes == 1 and totals.sessions == 3 and totals.written == 3 * 4 * 2 + 2


def test_without_adapt_exactly_n_processes(
    big: tuple[Path, Path, OnceTotals], tmp_path: Path, probe: type[_Probe]
) -> None:
    home, one, reference = big
    totals, said, _codes = _run(tmp_path, home, 2, adapt=False)
    assert probe.made == 0 and said == [] and totals.processes == 2
    _did_the_same(totals, reference)
    _same(tmp_path, one)
