"""``run --once`` imports the job stack only when there is work, and behaves the same either way.

Each case runs ``memory-worker run --once`` twice, each time in a new process on a home of its
own made the same way: once as the command starts (the lazy path: the job stack, the log reader
and SQLAlchemy's ORM load only when a session needs them; a fresh interpreter), and once with
all of that imported before the command starts (the full path, what every run imported before;
forked from a parent that imported the runtime, :mod:`cli_fork`). The two must agree
on the exit status, standard output, standard error, the state database's schema and row counts
and the files of the hypatia-lite home; the lazy path must not have imported the job stack when
nothing needed it, and must have imported it when jobs ran."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from cli_fork import run_cli

from dsh_memory_worker.worker.commands.demo_home import demo_session_id

pytestmark = pytest.mark.integration

#: What ``run --once`` imported at start-up before it imported them only for a session's work.
FULL_STACK = (
    "sqlalchemy.orm",
    "sqlalchemy.dialects.postgresql",
    "tenacity",
    "psutil",
    "dsh_memory_worker.worker.jobs.guard",
    "dsh_memory_worker.worker.jobs.registry",
    "dsh_memory_worker.worker.jobs.retract",
    "dsh_memory_worker.worker.jobs.lease_keeper",
    "dsh_memory_worker.worker.jobs.logread",
    "dsh_memory_worker.worker.run.cpu_budget",
    "dsh_memory_worker.worker.watch.poll_source",
    "dsh_memory_worker.worker.watch.scan_digest",
    "dsh_memory_worker.memory.dsh.reader",
    "dsh_memory_worker.memory.dsh.scanner",
    "dsh_memory_worker.memory.store.cli",
)
#: Of those, what a run that finds nothing to do must not import.
JOB_STACK = (
    "sqlalchemy.orm",
    "sqlalchemy.dialects.postgresql",
    "dsh_memory_worker.worker.jobs.guard",
    "dsh_memory_worker.worker.jobs.registry",
    "dsh_memory_worker.worker.jobs.retract",
    "dsh_memory_worker.worker.jobs.logread",
    "dsh_memory_worker.memory.dsh.reader",
    "dsh_memory_worker.memory.dsh.scanner",
    "dsh_memory_worker.memory.store.cli",
)
#: Imports the modules named in ``$PREIMPORT`` (comma separated) and, at exit, writes the names
#: of the modules imported by then to the file ``$MODULES``: the start of :data:`PROBE`, and the
#: ``sitecustomize`` of a forked full-path run.
PRELUDE = (
    "import atexit, importlib, json, os, sys\n"
    "for name in filter(None, os.environ.get('PREIMPORT', '').split(',')):\n"
    "    importlib.import_module(name)\n"
    "def _modules():\n"
    "    with open(os.environ['MODULES'], 'w') as out:\n"
    "        out.write(json.dumps(sorted(sys.modules)))\n"
    "atexit.register(_modules)\n"
)
#: The full path's runs never take the first-run-on-an-empty-home answer
#: (:mod:`worker.run.empty_home`): they open the runtime as every run did before it.
NO_EMPTY_HOME_PATH = (
    "import dsh_memory_worker.worker.run.empty_home as _empty\n"
    "_empty.first_run_on_empty_home = lambda *args, **kwargs: False\n"
)
#: Runs ``memory-worker ARGS`` in a fresh interpreter after :data:`PRELUDE`.
PROBE = (
    PRELUDE + "from dsh_memory_worker.worker.cli import main\nsys.argv = ['memory-worker', "
    "*sys.argv[1:]]\nmain()\n"
)


def _env(home: Path) -> dict[str, str]:
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("MEMORY_WORKER_", "XDG_"))
        and name not in ("DSH_HOME", "HYPATIA_LITE_HOME")
    }
    return {**env, "HOME": str(home), "COLUMNS": "200"}


def _run(home: Path, args: list[str], *, full: bool) -> tuple[int, str, str, set[str]]:
    """``memory-worker ARGS`` on ``home``: the lazy path in a fresh interpreter (what it imports
    is what is probed); the full path in a process forked from a parent that imported the
    runtime (:mod:`cli_fork`), which imports :data:`FULL_STACK` before the command starts."""
    modules = home.parent / f"{home.name}-modules.json"
    env = {**_env(home), "MODULES": str(modules), "PREIMPORT": ",".join(FULL_STACK) if full else ""}
    if full:
        site = home.parent / f"{home.name}-site"
        site.mkdir(exist_ok=True)
        (site / "sitecustomize.py").write_text(PRELUDE + NO_EMPTY_HOME_PATH)
        done = run_cli(args, env=env, timeout=300, site_dir=site)
    else:
        done = subprocess.run(
            [sys.executable, "-c", PROBE, *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
    return done.returncode, done.stdout, done.stderr, set(json.loads(modules.read_text()))


def _timeless(text: str) -> str:
    """Standard error without what the clock changes: log lines' times, the progress bar's
    elapsed time."""
    text = re.sub(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}", "TIME", text)
    return re.sub(r"\b\d+:\d\d:\d\d\b", "H:MM:SS", text)


def _database(path: Path) -> dict[str, Any]:
    """The schema of the SQLite database at ``path`` and the row count of each of its tables."""
    conn = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)  # no -wal, -shm
    try:
        schema = conn.execute(
            "SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name"
        ).fetchall()
        tables = [name for kind, name, _, _ in schema if kind == "table"]
        counts = {t: conn.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0] for t in tables}
        version = conn.execute("SELECT version_num FROM alembic_version").fetchall()
        pragmas = {
            name: conn.execute(f"PRAGMA {name}").fetchone()
            for name in ("page_size", "auto_vacuum", "user_version", "application_id", "encoding")
        }
    finally:
        conn.close()
    wal = (path.read_bytes()[18:20] == b"\x02\x02") if path.stat().st_size >= 20 else None
    return {"schema": schema, "counts": counts, "version": version, "pragmas": pragmas, "wal": wal}


def _files(root: Path) -> list[str]:
    """Every path under ``root``, relative, with ``/`` after a directory."""
    return sorted(str(p.relative_to(root)) + ("/" if p.is_dir() else "") for p in root.rglob("*"))


def _outcome(home: Path, found: tuple[int, str, str, set[str]]) -> dict[str, Any]:
    code, out, err, _modules = found
    lite = home / ".hypatia-lite"
    return {
        "code": code,
        "stdout": out,
        "stderr": _timeless(err),
        "state": _database(home / ".local/share/dsh-memory-worker/state.db"),
        "lite files": _files(lite),
        "shelf": _database_counts(lite / "default" / "hypatia.sqlite"),
        "dsh files": _files(home / ".dsh"),
    }


def _database_counts(path: Path) -> dict[str, Any]:
    """The hypatia-lite shelf's schema and row counts (it has no ``alembic_version``)."""
    conn = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)  # no -wal, -shm
    try:
        schema = conn.execute(
            "SELECT type, name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' "
            "ORDER BY type, name"
        ).fetchall()
        # Full-text index internals (segments, merges) are left out: only what was stored.
        counts = {
            name: conn.execute(f'SELECT count(*) FROM "{name}"').fetchone()[0]
            for kind, name, _ in schema
            if kind == "table" and "fts" not in name
        }
    finally:
        conn.close()
    return {"schema": schema, "counts": counts}


def _fresh(root: Path, name: str) -> Path:
    home = root / name
    (home / ".dsh" / "sessions").mkdir(parents=True)
    return home


def _with_sessions(root: Path, name: str) -> Path:
    home = root / name
    laid = run_cli(["demo-home", str(home / ".dsh")], env=_env(home), timeout=300)
    assert laid.returncode == 0, laid.stderr
    return home


SUMMARY_EMPTY = (
    "0 sessions, 0 new events; 0 entries written, 0 retracted, 0 edges; 0 jobs done, 0 failed"
)


def test_a_fresh_home_takes_the_lazy_path_with_the_full_paths_outcome(tmp_path: Path) -> None:
    lazy_home, full_home = _fresh(tmp_path, "lazy"), _fresh(tmp_path, "full")
    lazy = _run(lazy_home, ["run", "--once"], full=False)
    full = _run(full_home, ["run", "--once"], full=True)
    assert lazy[0] == 0, lazy[2]
    assert lazy[2].splitlines()[-1] == SUMMARY_EMPTY
    assert _outcome(lazy_home, lazy) == _outcome(full_home, full)
    assert sorted(set(JOB_STACK) & lazy[3]) == []
    assert set(JOB_STACK) <= full[3]
    # Nothing to do on a home that was never run: decided without SQLAlchemy or the runtime.
    assert sorted(name for name in lazy[3] if name.split(".")[0] == "sqlalchemy") == []
    assert (
        "dsh_memory_worker.worker.jobs.runtime" not in lazy[3]
        and "dsh_memory_worker.worker.jobs.runtime" in full[3]
    )
    # The state database was made from the template at the packaged head, and is empty.
    state = _outcome(lazy_home, lazy)["state"]
    assert len(state["version"]) == 1 and not any(
        count for table, count in state["counts"].items() if table != "alembic_version"
    )
    assert _files(lazy_home / ".hypatia-lite") == [
        "default/",
        "default/hypatia.sqlite",
        "shelves.json",
        "shelves.lock",
    ]


def test_an_empty_home_run_again_takes_the_lazy_path_too(tmp_path: Path) -> None:
    lazy_home, full_home = _fresh(tmp_path, "lazy"), _fresh(tmp_path, "full")
    for home in (lazy_home, full_home):  # the state database and the shelf exist now
        made = run_cli(["run", "--once"], env=_env(home), timeout=300)
        assert made.returncode == 0, made.stderr
    # An option the first runs did not have: no at-rest record answers, the command runs.
    lazy = _run(lazy_home, ["run", "--once", "--shelf", "default"], full=False)
    full = _run(full_home, ["run", "--once", "--shelf", "default"], full=True)
    assert lazy[0] == 0, lazy[2]
    assert lazy[2].splitlines()[-1] == SUMMARY_EMPTY
    assert _outcome(lazy_home, lazy) == _outcome(full_home, full)
    assert sorted(set(JOB_STACK) & lazy[3]) == []


def test_a_missing_sessions_directory_fails_alike(tmp_path: Path) -> None:
    lazy_home, full_home = tmp_path / "lazy", tmp_path / "full"
    lazy_home.mkdir()
    full_home.mkdir()
    lazy = _run(lazy_home, ["run", "--once"], full=False)
    full = _run(full_home, ["run", "--once"], full=True)
    assert lazy[0] == full[0] == 1
    assert "has no sessions directory" in lazy[2]
    assert (lazy[1], lazy[2].replace(str(lazy_home), "HOME")) == (
        full[1],
        full[2].replace(str(full_home), "HOME"),
    )
    assert sorted(set(JOB_STACK) & lazy[3]) == []


def test_a_home_with_sessions_loads_the_jobs_and_writes_the_same(tmp_path: Path) -> None:
    lazy_home = _with_sessions(tmp_path, "lazy")
    full_home = _with_sessions(tmp_path, "full")
    lazy = _run(lazy_home, ["run", "--once"], full=False)
    full = _run(full_home, ["run", "--once"], full=True)
    assert lazy[0] == 0, lazy[2]
    found = _outcome(lazy_home, lazy)
    assert found == _outcome(full_home, full)
    summary = lazy[2].splitlines()[-1]
    sessions = int(summary.split(" sessions,")[0])
    assert sessions > 0 and found["state"]["counts"]["sessions"] == sessions
    assert summary.endswith(" 0 failed")
    assert found["shelf"]["counts"]["knowledge"] > 0
    state = sqlite3.connect(
        f"file:{lazy_home}/.local/share/dsh-memory-worker/state.db?immutable=1", uri=True
    )
    assert demo_session_id("cancel") in {
        row[0] for row in state.execute("SELECT session_id FROM sessions")
    }
    state.close()
    # The jobs ran, so their machinery was imported: by the first session that needed it.
    assert {
        "dsh_memory_worker.worker.jobs.guard",
        "dsh_memory_worker.worker.jobs.registry",
        "dsh_memory_worker.memory.dsh.scanner",
    } <= lazy[3]
    assert "sqlalchemy.orm" not in lazy[3]
