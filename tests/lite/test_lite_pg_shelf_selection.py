"""Selecting a PostgreSQL shelf: ``hypatia-lite connect <postgresql URL>`` registers it (named
after its schema or database), ``list`` shows it without the password, shelves in different
schemas of one database are separate, and what can go wrong says so in one line — a bad schema,
an unreachable server, and a PostgreSQL shelf without the psycopg driver (while a SQLite shelf
still works without it)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from state_db_support import throwaway_pg_database

from hypatia_lite import shelves
from hypatia_lite.store import LiteStore

pytestmark = pytest.mark.integration
BIN = Path(sys.executable).parent / "hypatia-lite"
_NO_PSYCOPG = (
    "import sys; sys.modules['psycopg'] = None; from hypatia_lite.cli import main; sys.exit(main())"
)


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HYPATIA_LITE_")}
    return {**env, "HYPATIA_LITE_HOME": str(home), "HYPATIA_LITE_EMBEDDER": "hash"}


def _run(home: Path, *argv: str, no_psycopg: bool = False) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-c", _NO_PSYCOPG] if no_psycopg else [str(BIN)]
    return subprocess.run(
        [*cmd, *argv], capture_output=True, text=True, env=_env(home), timeout=60, check=False
    )


def test_connect_list_and_separate_schemas(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with throwaway_pg_database() as url:
        secret = url.replace("postgres@", "postgres:s3cret@")
        done = _run(home, "connect", f"{secret}?schema=team_a")
        assert (done.returncode, done.stdout) == (0, "Shelf 'team_a' connected and registered.\n")
        done = _run(home, "connect", f"{url}?schema=team_b", "-n", "b")
        assert (done.returncode, done.stdout) == (0, "Shelf 'b' connected and registered.\n")
        listing = _run(home, "list").stdout.splitlines()
        assert listing == [
            f"  b        {url}?schema=team_b  [connected]",
            f"  default  {home / 'default'}  [connected]",
            f"  team_a   {url.replace('postgres@', 'postgres:***@')}?schema=team_a  [connected]",
        ]
        assert "s3cret" not in "\n".join(listing)
        done = _run(home, "knowledge-create", "msg-1", "--data=only in a", "-s", "team_a")
        assert (done.returncode, done.stdout) == (0, "Created knowledge: msg-1\n")
        got = _run(home, "knowledge-get", "msg-1", "-s", "team_a")
        assert json.loads(got.stdout)["content"]["data"] == "only in a"
        assert _run(home, "knowledge-get", "msg-1", "-s", "b").stdout == (
            "Knowledge 'msg-1' not found.\n"
        )
        again = _run(home, "connect", f"{url}?schema=team_b")
        assert (again.returncode, again.stderr) == (
            1,
            f"Error: shelf error: {url}?schema=team_b is already connected as 'b'\n",
        )
        with pytest.raises(shelves.ShelfError, match="is stored in PostgreSQL"):
            shelves.resolve(home, "b")
        with LiteStore("b", home=home) as store:  # in process: the same shelf
            assert store.knowledge_create("msg-2", "in b") is True
            with pytest.raises(shelves.ShelfError, match="not in a directory"):
                _ = store.path
        assert _run(home, "knowledge-get", "msg-2", "-s", "team_a").stdout == (
            "Knowledge 'msg-2' not found.\n"
        )


def test_one_line_errors(tmp_path: Path) -> None:
    home = tmp_path / "home"
    bad = _run(home, "connect", "postgresql://postgres@127.0.0.1:5432/test?schema=Bad-Name")
    assert (bad.returncode, bad.stdout) == (1, "")
    assert bad.stderr == (
        "Error: shelf error: invalid schema 'Bad-Name' in "
        "postgresql://postgres@127.0.0.1:5432/test?schema=Bad-Name: use lowercase letters, "
        "digits and '_'\n"
    )
    down = "postgresql://postgres@127.0.0.1:1/none"
    assert _run(home, "connect", down, "-n", "down").returncode == 0
    failed = _run(home, "knowledge-get", "x", "-s", "down")
    assert failed.returncode == 1
    assert failed.stderr.startswith(f"Error: shelf error: cannot open shelf 'down' at {down}: ")
    assert failed.stderr.count("\n") == 1


def test_without_psycopg_only_the_postgresql_shelf_fails(tmp_path: Path) -> None:
    home = tmp_path / "home"
    assert (
        _run(
            home,
            "connect",
            "postgresql://postgres@127.0.0.1:5432/test",
            "-n",
            "pg",
            no_psycopg=True,
        ).returncode
        == 0
    )
    done = _run(home, "knowledge-create", "msg-1", "--data=x", no_psycopg=True)
    assert (done.returncode, done.stdout) == (0, "Created knowledge: msg-1\n")
    failed = _run(home, "knowledge-get", "msg-1", "-s", "pg", no_psycopg=True)
    assert (failed.returncode, failed.stdout) == (1, "")
    assert failed.stderr == (
        "Error: shelf error: shelf 'pg' is stored in PostgreSQL, which needs the psycopg "
        "driver: pip install 'hypatia-lite[postgresql]'\n"
    )
