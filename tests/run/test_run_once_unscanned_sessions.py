"""A session whose scan could not be recorded (the state database refused the write: full, locked
past its timeout) fails the run: ``run --once`` exits 1 and its summary counts and names every such
session, and ``status`` lists them as on disk but not recorded. Once the database takes writes
again the next run processes them and exits 0."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from forked_worker import run_worker_forked
from hostile_support import store_dump, write_good

STUCK = [f"stuck-{n}" for n in range(1, 5)]
FINE = ["fine-1", "fine-2"]
# A real SQLite error on every insert of a stuck session's row (what a full disk returns).
FULL = (
    "CREATE TRIGGER disk_full BEFORE INSERT ON sessions WHEN NEW.session_id LIKE 'stuck-%' "
    "BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END"
)


def _status(root: Path, home: Path) -> dict[str, dict[str, object]]:
    shown = run_worker_forked(root, "status", "--json", "--dsh-home", str(home))
    assert shown.returncode == 0, shown.stderr
    return {row["session_id"]: row for row in json.loads(shown.stdout)["sessions"]}


@pytest.mark.integration
def test_sessions_that_cannot_be_recorded_fail_the_run_by_name(tmp_path: Path) -> None:
    home = tmp_path / "dsh"
    for sid in [*FINE, *STUCK]:
        write_good(home, sid, 1)
    made = run_worker_forked(tmp_path, "migrate", "upgrade")  # makes the state database
    assert made.returncode == 0, made.stderr
    with sqlite3.connect(tmp_path / "data" / "state.db") as db:
        db.execute(FULL)

    done = run_worker_forked(tmp_path, "run", "--once", "--dsh-home", str(home))
    assert done.returncode == 1, done.stderr
    summary = done.lines[-1]
    assert f"{len(STUCK)} sessions not scanned: {', '.join(STUCK)}" in summary, summary
    for sid in STUCK:
        said = [line for line in done.lines if "cannot scan" in line and f"/{sid}/" in line]
        assert len(said) == 1 and "database or disk is full" in said[0], done.lines
    rows = _status(tmp_path, home)
    assert set(rows) == {*FINE, *STUCK}
    for sid in FINE:
        assert rows[sid]["recorded"] is True and rows[sid]["lag"] == 0
    for sid in STUCK:
        assert rows[sid]["recorded"] is False and rows[sid]["lag"] is None
        assert "not recorded" in str(rows[sid]["problem"])
    names = {row["name"] for row in store_dump(tmp_path)["knowledge"]}
    assert {n for n in names if n.startswith("msg-")} == {
        f"msg-{sid}-{i}" for sid in FINE for i in range(2)
    }

    # With --jobs the children's scans are counted and named the same way.
    parallel = run_worker_forked(tmp_path, "run", "--once", "--jobs", "2", "--dsh-home", str(home))
    assert parallel.returncode == 1, parallel.stderr
    assert f"{len(STUCK)} sessions not scanned: {', '.join(STUCK)}" in parallel.lines[-1]

    with sqlite3.connect(tmp_path / "data" / "state.db") as db:
        db.execute("DROP TRIGGER disk_full")
    again = run_worker_forked(tmp_path, "run", "--once", "--dsh-home", str(home))
    assert again.returncode == 0, again.stderr
    assert "not scanned" not in again.stderr
    rows = _status(tmp_path, home)
    assert all(row["recorded"] is True and row["lag"] == 0 for row in rows.values())
    names = {row["name"] for row in store_dump(tmp_path)["knowledge"]}
    assert {n for n in names if n.startswith("msg-")} == {
        f"msg-{sid}-{i}" for sid in [*FINE, *STUCK] for i in range(2)
    }
