"""Entries of a DSH home that used to be skipped without a word are named once and recorded
(issue 32, defect 8 / build item 9): an empty newer generation (``session.v99.jsonl``, 0 bytes)
beside a good log, a log whose lines end in CR alone, a file where a session directory should
be, and a sessions directory that is a symbolic link loop. ``run --once`` names each in exactly
one line (no traceback), writes exactly what a home without them gets, and ``status`` shows
each with its problem. Real files and a real ``memory-worker`` process."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hostile_support import PROJECT, copy_home, header, run_worker, session_path, store_dump
from hostile_support import write_good as good_log

pytestmark = pytest.mark.integration

# name in stderr → (status subject, text its problem holds)
SILENT: dict[str, tuple[str, str]] = {
    "s-v99": ("s-v99", "session.v99.jsonl, which is empty"),
    "s-cr": ("s-cr", "end in CR"),
    "s-file": ("s-file", "is a regular file, not a session directory"),
}


def _good(root: Path) -> Path:
    home = root / "dsh"
    good_log(home, "g-one", 2)
    good_log(home, "g-two", 1)
    return home


def _add_silent(home: Path) -> None:
    project = home / "sessions" / PROJECT
    good_log(home, "s-v99", 2)
    (project / "s-v99" / "session.v99.jsonl").write_bytes(b"")
    cr = header("s-cr") + b'{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}\n'
    session_path(home, "s-cr").write_bytes(cr.replace(b"\n", b"\r"))
    (project / "s-file").write_bytes(b"a file where a session directory should be\n")
    (project / ".DS_Store").write_bytes(b"\0\0\0\1Bud1")  # hidden: not a session, not named
    (project / "s-being-written.tmp").write_bytes(b"")  # DSH's temporary files neither


def test_run_once_names_each_silent_entry_once_and_writes_the_good(tmp_path: Path) -> None:
    good = _good(tmp_path / "good")
    clean = run_worker(good.parent, "run", "--once", "--dsh-home", str(good))
    assert clean.returncode == 0, clean.stderr
    home = copy_home(good, tmp_path / "silent" / "dsh")
    _add_silent(home)
    for attempt in range(2):  # the second run names them again, as every run does
        done = run_worker(home.parent, "run", "--once", "--dsh-home", str(home))
        assert done.returncode == 0, done.stderr
        assert "Traceback" not in done.stderr
        for name, (_subject, text) in SILENT.items():
            named = [line for line in done.lines if name in line]
            assert len(named) == 1, (attempt, name, done.lines)
            assert text in named[0], named[0]
        assert not [line for line in done.lines if ".DS_Store" in line or ".tmp" in line]
    assert store_dump(home.parent) == store_dump(good.parent)
    shown = run_worker(home.parent, "status", "--json", "--dsh-home", str(home))
    assert shown.returncode == 0, shown.stderr
    rows = {row["session_id"]: row for row in json.loads(shown.stdout)["sessions"]}
    for name, (subject, text) in SILENT.items():
        row = rows[subject]
        problem = row["last_failure"]["error"] if row["last_failure"] else row["problem"]
        assert text in problem, (name, problem)
    assert set(rows) == {"g-one", "g-two"} | {subject for subject, _ in SILENT.values()}


def test_a_sessions_directory_that_is_a_symbolic_link_loop_is_named(tmp_path: Path) -> None:
    home = tmp_path / "dsh"
    home.mkdir()
    os.symlink(home / "sessions", home / "sessions")
    done = run_worker(tmp_path, "run", "--once", "--dsh-home", str(home))
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    assert done.lines == [
        f"memory-worker: DSH home {home} has no sessions directory ({home}/sessions is a "
        "symbolic link loop); nothing to do (check --dsh-home / $DSH_HOME)"
    ]
