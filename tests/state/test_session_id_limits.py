"""Two modes, one memory: session ids and texts a state database cannot hold are refused (or made
storable) the same way on SQLite and on the real PostgreSQL. A 200-character id is read; a
250-character id and one holding NUL are refused with one line each and shown by ``status``, as
is a header whose cwd holds NUL; a NUL in a title is stored as U+FFFD on both. Both runs end
with the same store and the same ``status`` rows."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO
from forked_worker import run_worker_forked
from hostile_support import CWD, env, header, session_path, store_dump, write_good
from state_db_support import sqlite_url, throwaway_pg_database

from dsh_memory_worker.worker.watch.scan_problems import MAX_SESSION_ID, subject_key

sys.path.insert(0, str(REPO / "benchmarks"))
from worker_dshgen import SessionLogWriter

LONGEST = "l" * MAX_SESSION_ID
TOO_LONG = "t" * 250
WITH_NUL = "n-\0-id"


def _home(root: Path) -> Path:
    home = root / "dsh"
    write_good(home, LONGEST, 1)
    session_path(home, TOO_LONG).write_bytes(header(TOO_LONG))
    session_path(home, "n-~0000-id").write_bytes(header(WITH_NUL))
    session_path(home, "cwd-nul").write_bytes(header("cwd-nul", cwd="/home/\0dev"))
    titled = SessionLogWriter(home, "titled", CWD, created_at=1_700_000_000_000)
    prompt = titled.turn("what is NUL?", "a zero byte").user_seq
    titled.title("about \0 bytes", prompt)
    titled.flush()
    return home


def _outcome(root: Path, home: Path, state_url: str) -> tuple[Any, dict[str, Any], Any]:
    environ = env(root, MEMORY_WORKER_STATE_URL=state_url)
    done = run_worker_forked(root, "run", "--once", "--dsh-home", str(home), environ=environ)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr and "DataError" not in done.stderr
    shown = run_worker_forked(root, "status", "--json", "--dsh-home", str(home), environ=environ)
    assert shown.returncode == 0, shown.stderr
    rows = {row["session_id"]: row for row in json.loads(shown.stdout)["sessions"]}
    for row in rows.values():  # the moments differ between the two runs
        if row["last_failure"]:
            row["last_failure"].pop("at")
    return done, rows, store_dump(root)


@pytest.mark.integration
def test_sqlite_and_postgresql_refuse_and_keep_the_same_sessions(tmp_path: Path) -> None:
    home = _home(tmp_path)
    lite, lite_rows, lite_store = _outcome(tmp_path / "sqlite", home, sqlite_url(tmp_path))
    with throwaway_pg_database() as url:
        pg, pg_rows, pg_store = _outcome(tmp_path / "pg", home, url)
    assert pg_rows == lite_rows
    assert pg_store == lite_store
    for done in (lite, pg):
        assert len([line for line in done.lines if "t" * 60 in line]) == 1
        assert len([line for line in done.lines if "n-~0000-id" in line]) == 1
    long_row, nul_row = lite_rows[subject_key(TOO_LONG)], lite_rows["n-\\x00-id"]
    assert (
        f"is 250 characters long; the limit is {MAX_SESSION_ID}"
        in (long_row["last_failure"]["error"])
    )
    assert "contains a NUL character" in nul_row["last_failure"]["error"]
    assert long_row["recorded"] is False and nul_row["recorded"] is False
    assert lite_rows[LONGEST]["recorded"] is True and lite_rows[LONGEST]["lag"] == 0
    assert "cwd holds a NUL character" in lite_rows["cwd-nul"]["last_failure"]["error"]
    assert lite_rows["titled"]["recorded"] is True and lite_rows["titled"]["lag"] == 0
    names = {row["name"] for row in lite_store["knowledge"]}
    assert {f"msg-{LONGEST}-0", f"msg-{LONGEST}-1", "msg-titled-0", "msg-titled-1"} <= names
    assert not [name for name in names if TOO_LONG in name or "\0" in name or "x00" in name]
