"""Forgetting a session takes the provenance rows of what it removes with it.

Three sessions are consolidated with route A (``rewrite_support``: a summary and two work units
each, ``s-1`` and ``s-2`` folded into one archive). ``memory-worker forget s-2`` removes its
summary and units and drops the archive (owed); every provenance row left must name an entry
still in the store, no row may name ``s-2``, and the rows of ``s-1`` and ``s-3`` stay as they
were. (Before, forget deleted the entries and kept their rows for ever.)"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from cli_fork import run_cli
from convergence_oracle import consolidated
from model_server import ModelServer, model_server_fixture  # noqa: F401
from pipeline_support import dump
from rewrite_support import consolidate_with_a, env_for, scripted, write_sessions

pytestmark = pytest.mark.integration


def rows(root: Path) -> list[tuple[str, str, str | None]]:
    with sqlite3.connect(root / "data" / "state.db") as conn:
        return sorted(conn.execute("SELECT name, kind, session_id FROM provenance").fetchall())


def test_forget_deletes_the_provenance_rows_of_the_entries_it_removes(
    tmp_path: Path, model_server: ModelServer
) -> None:
    model_server.responder = scripted
    write_sessions(tmp_path)
    consolidate_with_a(tmp_path, model_server)
    before = rows(tmp_path)
    assert sorted({(kind, sid) for _, kind, sid in before}, key=str) == sorted(
        {("archive", None)}
        | {(kind, sid) for sid in ("s-1", "s-2", "s-3") for kind in ("summary", "work-unit")},
        key=str,
    )
    archives = [name for name, kind, _ in before if kind == "archive"]
    assert len(archives) == 1

    # forget never waits for a model: the archive over s-2 is dropped now and owed
    done = run_cli(["forget", "s-2"], env=env_for(tmp_path, model_server, "model-a"), timeout=120)
    assert done.returncode == 0, done.stderr

    after = rows(tmp_path)
    assert [r for r in after if r[2] == "s-2"] == []
    assert [r for r in after if r[1] == "archive"] == []
    assert after == [r for r in before if r[2] in ("s-1", "s-3")]
    found = consolidated(tmp_path, dump(tmp_path))
    assert found["provenance rows without an entry"] == set()
    assert found["entries without a provenance row"] == set()
