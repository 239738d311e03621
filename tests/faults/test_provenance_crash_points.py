"""A ``run --once`` that dies before any one of its store writes still ends with the clean run's
provenance rows.

Three finished sessions are logged (``rewrite_support``); a clean ``memory-worker run --once``
consolidates them (a summary and two work units each) and folds two summaries into an archive;
its ``provenance`` rows are the reference, and it counts its hypatia-lite writes. For every
write N of that run, the same logs are run by a process that dies just before write N
(``os._exit``, as ``kill -9``), then once more: that run must exit 0 with a provenance row for
every entry the model wrote and an entry for every row, the reference's rows of summaries and
work units exactly (entry, kind, session, route, model, prompt version) and model A's on the
archive (which summaries it folds depends on when they were written). Before the fix, a run
killed between a summary's (or an archive's) store write and its row left the entry without a
row for ever: every later run found the entry already written and recorded nothing."""

from __future__ import annotations

import sqlite3
import subprocess
from pathlib import Path

import pytest
from cli_fork import run_cli
from convergence_oracle import consolidated
from crash_point_support import CRASH_POINTS, KILLED, restore
from model_server import ModelServer, model_server_fixture  # noqa: F401
from pipeline_support import dump
from rewrite_support import env_for, scripted, write_sessions

pytestmark = pytest.mark.integration

Row = tuple[str, str, str | None, str, str, str]


def provenance_rows(root: Path) -> list[Row]:
    with sqlite3.connect(root / "data" / "state.db") as conn:
        return sorted(
            conn.execute(
                "SELECT name, kind, session_id, route, model, prompt_version FROM provenance"
            ).fetchall()
        )


def derived(rows: list[Row]) -> list[Row]:
    """The rows of summaries and work units (the archives' rows name timing-dependent entries)."""
    return [r for r in rows if r[1] != "archive"]


def unrecorded(root: Path) -> dict[str, list[str]]:
    """Model-written entries without a row, and rows without an entry (none when both match)."""
    found = consolidated(root, dump(root))
    keys = ("entries without a provenance row", "provenance rows without an entry")
    return {key: sorted(found[key]) for key in keys if found[key]}


def test_a_run_that_dies_before_any_store_write_records_every_provenance_row(
    tmp_path: Path, model_server: ModelServer
) -> None:
    model_server.responder = scripted
    work, snapshot = tmp_path / "work", tmp_path / "logs"
    write_sessions(snapshot)
    counted = tmp_path / "writes.txt"
    env = env_for(work, model_server, "model-a")

    def run(**extra: str) -> subprocess.CompletedProcess[str]:
        return run_cli(["run", "--once"], env={**env, **extra}, site_dir=CRASH_POINTS, timeout=300)

    restore(snapshot, work)
    clean = run(MEMORY_WORKER_TEST_CRASH_COUNT=str(counted))
    assert clean.returncode == 0, clean.stderr
    want_rows = provenance_rows(work)
    assert unrecorded(work) == {}
    kinds = sorted({(name.split("-")[0], kind) for name, kind, *_ in want_rows})
    assert kinds == [("sum", "summary"), ("sum2", "archive"), ("wu", "work-unit")]
    assert len([r for r in want_rows if r[1] == "summary"]) == 3
    assert {r[4] for r in want_rows} == {"model-a"}
    writes = counted.read_text().split()
    assert len(writes) >= 20
    wrong = {}
    for point in range(1, len(writes) + 1):
        restore(snapshot, work)
        crashed = run(MEMORY_WORKER_TEST_CRASH_AT=str(point))
        assert crashed.returncode == KILLED, (point, crashed.stderr[-2000:])
        again = run()
        assert again.returncode == 0, (point, again.stderr[-2000:])
        # Which summaries an archive folds depends on when they were written: its rows are
        # compared by the entries they name; summaries and units row for row.
        got = provenance_rows(work)
        gaps = unrecorded(work)
        if gaps or derived(got) != derived(want_rows):
            wrong[point] = {**gaps, "rows": sorted(set(derived(got)) ^ set(derived(want_rows)))}
        assert {r[4] for r in got} == {"model-a"}
    assert wrong == {}
