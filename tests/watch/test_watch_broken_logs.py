"""Broken logs cost one clear line each and never stop the other sessions: a log corrupt inside
committed history and a log from a newer DSH are reported once, recorded once as permanent
failures (not retried on every run), and everything else is written. A missing DSH home and an
unusable store are one line each too."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from cli_fork import run_cli
from conftest import REPO

from hypatia_lite.store import LiteStore

sys.path.insert(0, str(REPO / "benchmarks"))
from worker_dshgen import SessionLogWriter

BIN = Path(sys.executable).parent
CWD = "/home/dev/proj"


def _env(root: Path) -> dict[str, str]:
    env = {
        **os.environ,
        "MEMORY_WORKER_DATA_DIR": str(root / "data"),
        "MEMORY_WORKER_LITE_HOME": str(root / "lite"),
        "COLUMNS": "300",
    }
    env.pop("MEMORY_WORKER_STATE_URL", None)
    return env


def _run(root: Path, *args: str, env: dict[str, str] | None = None) -> Any:
    return run_cli(list(args), env=env or _env(root), timeout=120)


def _home(root: Path) -> Path:
    home = root / "dsh"
    good = SessionLogWriter(home, "s-good", CWD)
    good.turn("still here", "yes")
    good.flush()
    corrupt = SessionLogWriter(home, "s-corrupt", CWD)
    corrupt.turn("lost?", "no")
    corrupt.flush()
    with corrupt.path.open("a", encoding="utf-8") as handle:
        handle.write("{this is not json\n")
    corrupt.seq += 1
    corrupt.turn("after the damage", "committed")  # a later turn/end: damage is in history
    corrupt.flush()
    newer = home / "sessions" / "--home-dev-proj--" / "s-newer"
    newer.mkdir(parents=True)
    (newer / "session.v99.jsonl").write_text(
        '{"type":"session","version":99,"id":"s-newer","createdAt":1,"cwd":"/home/dev/proj",'
        '"isSeeded":false,"delegationDepth":0}\n'
    )
    return home


@pytest.mark.integration
def test_broken_logs_are_one_line_each_and_the_rest_is_written(tmp_path: Path) -> None:
    home = _home(tmp_path)
    first = _run(tmp_path, "run", "--once", "--dsh-home", str(home))
    assert first.returncode == 0, first.stderr
    lines = first.stderr.splitlines()
    corrupt = [ln for ln in lines if "s-corrupt" in ln]
    newer = [ln for ln in lines if "s-newer" in ln]
    assert len(corrupt) == 1 and "corrupt" in corrupt[0]
    assert len(newer) == 1 and "unsupported" in newer[0]
    with LiteStore("default", home=tmp_path / "lite") as store:
        names = {row["name"] for row in store.dump()["knowledge"]}
    assert names == {"msg-s-good-0", "msg-s-good-1"}

    second = _run(tmp_path, "run", "--once", "--dsh-home", str(home))
    assert second.returncode == 0, second.stderr
    status = {
        row["session_id"]: row
        for row in json.loads(_run(tmp_path, "status", "--json").stdout)["sessions"]
    }
    assert set(status) == {"s-good", "s-corrupt", "s-newer"}
    assert status["s-good"]["lag"] == 0 and status["s-good"]["last_failure"] is None
    for broken in ("s-corrupt", "s-newer"):
        failure = status[broken]["last_failure"]
        assert failure["task"] == "scan" and failure["permanent"] is True
        assert failure["attempts"] == 1 and broken in failure["error"]
        assert status[broken]["durable_end_seq"] is None
    # The permanent problems are recorded once, however often the logs are looked at.
    from dsh_memory_worker.worker.settings import load_settings
    from dsh_memory_worker.worker.state.database import StateDB

    state = StateDB.open(load_settings(None, data_dir=tmp_path / "data").effective_state_url)
    with state.transaction() as repos:
        failures = {f.session_id: f for f in repos.failures.list(permanent=True)}
    state.dispose()
    assert set(failures) == {"s-corrupt", "s-newer"}
    assert all(f.attempts == 1 for f in failures.values())


@pytest.mark.integration
def test_a_missing_dsh_home_is_one_line(tmp_path: Path) -> None:
    done = _run(tmp_path, "run", "--once", "--dsh-home", str(tmp_path / "nowhere"))
    assert done.returncode == 1
    lines = [ln for ln in done.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "has no sessions directory" in lines[0]


@pytest.mark.integration
def test_an_unusable_store_is_one_line(tmp_path: Path) -> None:
    home = _home(tmp_path)
    (tmp_path / "lite").write_text("a file where the store's directory should be")
    done = _run(tmp_path, "run", "--once", "--dsh-home", str(home))
    assert done.returncode == 2
    lines = [ln for ln in done.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("memory-worker: cannot open the store")
