"""Two modes, one answer for the operator commands: a session id no state database can hold (250
characters, a NUL) given to ``forget``, ``retract``, ``reconsolidate`` (plain and ``--replace``)
or ``relog`` is refused before anything runs — one line, exit status 2, the other ids named on
the same command line left untouched — identically on SQLite and on the real PostgreSQL (where it
used to be a ``DataError``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from forked_worker import run_worker_forked
from hostile_support import env, write_good
from state_db_support import sqlite_url, throwaway_pg_database
from typer.testing import CliRunner

from dsh_memory_worker.worker.watch.scan_problems import MAX_SESSION_ID

TOO_LONG = "t" * 250
WITH_NUL = "n-\0-id"
COMMANDS = (
    ["forget"],
    ["retract"],
    ["reconsolidate"],
    ["reconsolidate", "--replace", "--wait"],
    ["relog", "--wait"],
)


def _refusals(root: Path, state_url: str) -> dict[str, tuple[int, list[str]]]:
    home = root / "dsh"
    write_good(home, "good", 1)
    environ = env(root, MEMORY_WORKER_STATE_URL=state_url, DSH_HOME=str(home))
    done = run_worker_forked(root, "run", "--once", environ=environ)
    assert done.returncode == 0, done.stderr
    seen: dict[str, tuple[int, list[str]]] = {}
    for command in COMMANDS:
        out = run_worker_forked(root, *command, "good", TOO_LONG, environ=environ)
        assert "Traceback" not in out.stderr and "DataError" not in out.stderr, out.stderr
        assert out.stdout == "", out.stdout
        seen[" ".join(command)] = (out.returncode, out.lines)
    status = run_worker_forked(root, "status", "--audit", "--json", environ=environ)
    assert status.returncode == 0, status.stderr
    found = json.loads(status.stdout)
    rows = {row["session_id"]: row for row in found["sessions"]}
    assert set(rows) == {"good"}  # nothing recorded for the refused id
    assert rows["good"]["forgotten"] is False and rows["good"]["lag"] == 0
    assert found["audit"] == []  # no forget, no retract-run recorded
    return seen


@pytest.mark.integration
def test_too_long_id_is_refused_the_same_on_sqlite_and_postgresql(tmp_path: Path) -> None:
    lite = _refusals(tmp_path / "sqlite", sqlite_url(tmp_path))
    with throwaway_pg_database() as url:
        pg = _refusals(tmp_path / "pg", url)
    assert pg == lite
    for name, (code, lines) in lite.items():
        command = name.split()[0]
        assert code == 2, (name, lines)
        assert lines == [
            f"memory-worker {command}: session id {'t' * 60}… is 250 characters long; the limit "
            f"is {MAX_SESSION_ID}; no session has such an id, nothing was done"
        ], lines


def test_nul_id_is_refused_before_the_state_database_is_touched(tmp_path: Path) -> None:
    # argv cannot carry a NUL, so this one runs the commands in this process (CliRunner).
    from dsh_memory_worker.worker.cli import _register, app

    _register()
    environ = {k: v for k, v in env(tmp_path).items() if k.startswith("MEMORY_WORKER_")}
    environ["MEMORY_WORKER_STATE_URL"] = sqlite_url(tmp_path)
    for command in COMMANDS:
        result = CliRunner().invoke(app, [*command, WITH_NUL], env=environ)
        assert result.exit_code == 2, (command, result.output)
        assert result.output.splitlines() == [
            f"memory-worker {command[0]}: session id n-\\x00-id contains a NUL character, which "
            "a state database cannot store; no session has such an id, nothing was done"
        ]
    assert not (tmp_path / "state.db").exists()  # refused up front: nothing opened
