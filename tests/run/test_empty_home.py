"""A first ``run --once`` on an empty home makes the state database and the shelf without the
runtime, and changes nothing on a home it cannot vouch for (:mod:`worker.run.empty_home`).

``tests/run/test_run_once_lazy_imports.py`` compares the command's outcome with the full path's;
here each refusal is checked, and two first runs at the same moment."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest

from dsh_memory_worker.worker.run.empty_home import first_run_on_empty_home
from dsh_memory_worker.worker.settings import Settings, load_settings
from dsh_memory_worker.worker.state.revision_files import PACKAGED_MIGRATIONS, script_head


def _settings(root: Path, **overrides: Any) -> Settings:
    (root / "dsh" / "sessions").mkdir(parents=True, exist_ok=True)
    return load_settings(
        None,
        dsh_home=root / "dsh",
        data_dir=root / "data",
        lite_home=root / "lite",
        **overrides,
    )


def _files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def test_an_empty_home_gets_the_state_database_at_head_and_the_shelf(tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    assert first_run_on_empty_home(settings) is True
    state = tmp_path / "data" / "state.db"
    conn = sqlite3.connect(state)
    try:
        assert conn.execute("SELECT version_num FROM alembic_version").fetchall() == [
            (script_head(PACKAGED_MIGRATIONS),)
        ]
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    finally:
        conn.close()
    assert _files(tmp_path / "data") == ["state.db", "state.db.lock"]
    assert _files(tmp_path / "lite") == [
        "default",
        "default/hypatia.sqlite",
        "shelves.json",
        "shelves.lock",
    ]
    # The state database exists now: a second run is not a first run.
    assert first_run_on_empty_home(settings) is False


@pytest.mark.parametrize(
    "case",
    [
        "a session directory",
        "a stray file",
        "no sessions directory",
        "state database exists",
        "shipping",
        "cli transport",
        "migrations_dir",
        "PostgreSQL state",
        "PostgreSQL shelf",
    ],
)
def test_a_home_it_cannot_vouch_for_is_left_to_the_full_path(tmp_path: Path, case: str) -> None:
    overrides: dict[str, Any] = {
        "shipping": {"shipping": True},
        "cli transport": {"store_transport": "cli", "store_binary": "hypatia-lite"},
        "migrations_dir": {"migrations_dir": PACKAGED_MIGRATIONS},
        "PostgreSQL state": {"state_url": "postgresql+psycopg://127.0.0.1:1/none"},
        "PostgreSQL shelf": {"store_shelf_url": "postgresql://127.0.0.1:1/none"},
    }.get(case, {})
    settings = _settings(tmp_path, **overrides)
    sessions = tmp_path / "dsh" / "sessions"
    if case == "a session directory":
        (sessions / "20261203-0001").mkdir()
    elif case == "a stray file":
        (sessions / ".DS_Store").write_bytes(b"")
    elif case == "no sessions directory":
        sessions.rmdir()
    elif case == "state database exists":
        (tmp_path / "data").mkdir()
        (tmp_path / "data" / "state.db").write_bytes(b"")
    before = _files(tmp_path)
    assert first_run_on_empty_home(settings) is False
    assert _files(tmp_path) == before


def test_two_first_runs_at_once_make_one_state_database(tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    start = threading.Barrier(2)
    answers: list[bool] = []

    def _first_run() -> None:
        start.wait()
        answers.append(first_run_on_empty_home(settings))

    threads = [threading.Thread(target=_first_run) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    # One made it under the migration lock; the other found it made (before taking the lock or
    # under it) and leaves the rest to the full path.
    assert sorted(answers) == [False, True]
    conn = sqlite3.connect(tmp_path / "data" / "state.db")
    try:
        assert conn.execute("SELECT version_num FROM alembic_version").fetchall() == [
            (script_head(PACKAGED_MIGRATIONS),)
        ]
    finally:
        conn.close()
    assert _files(tmp_path / "data") == ["state.db", "state.db.lock"]
