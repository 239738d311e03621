"""A ``run --once`` during a back-off names what waits (issue 32, defect 8 / build item 9).

A model outage fails the consolidation of two sessions: that run names them and exits 1. The
next run, inside the back-off (a minute per failed attempt), does not call the model again; it
used to do nothing, name nothing and exit 0 while ``status`` showed both sessions failing. Now
it says on one line what waits and until when, names both sessions in its summary and exits 1;
once the model answers and the back-off has passed (the failures' times moved two hours back in
the state database, not slept), a run consolidates them and exits 0."""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import sqlite3
import sys
from pathlib import Path

import pytest
from cli_fork import run_cli
from conftest import REPO
from fault_support import not_finished
from model_server import ModelServer, model_server_fixture  # noqa: F401

sys.path.insert(0, str(REPO / "benchmarks"))
from worker_dshgen import conversation

pytestmark = pytest.mark.integration

KEY = "BACKOFF_TEST_KEY"
SESSIONS = ("wait-0", "wait-1")


def _env(root: Path, server: ModelServer) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORY_WORKER_")}
    env.update(
        {
            "MEMORY_WORKER_DSH_HOME": str(root / "dsh"),
            "MEMORY_WORKER_DATA_DIR": str(root / "data"),
            "MEMORY_WORKER_LITE_HOME": str(root / "lite"),
            "MEMORY_WORKER_RETRY_BACKOFF_S": "0.1",
            "MEMORY_WORKER_ADJUDICATE": "false",
            "MEMORY_WORKER_MODEL_ROUTES": json.dumps(
                [{"base_url": server.base_url, "model": "wait", "api_key_env": KEY}]
            ),
            "XDG_CACHE_HOME": str(root / "cache"),
            "COLUMNS": "250",
            KEY: "sk-backoff-test-key-000000000000000",
        }
    )
    env.pop("HYPATIA_LITE_HOME", None)
    return env


def test_a_run_inside_the_back_off_names_what_waits_and_until_when(
    tmp_path: Path, model_server: ModelServer
) -> None:
    for i, sid in enumerate(SESSIONS):
        conversation(tmp_path / "dsh", sid, f"/home/dev/wait-{i}", 3, title=f"Wait {i}")
    env = _env(tmp_path, model_server)  # no scripted reply: every model call is HTTP 500
    failed = run_cli(["run", "--once"], env=env, timeout=300)
    assert failed.returncode == 1, failed.stderr
    assert not_finished(failed.stderr) == set(SESSIONS)
    calls = len(model_server.bodies)
    assert calls > 0

    before = dt.datetime.now(dt.UTC)
    waiting = run_cli(["run", "--once"], env=env, timeout=300)
    assert waiting.returncode == 1, waiting.stderr
    assert len(model_server.bodies) == calls  # the back-off holds: no model call
    lines = [line for line in waiting.stderr.splitlines() if "waits after a failure" in line]
    assert len(lines) == 1, waiting.stderr
    found = re.fullmatch(
        r"memory-worker: consolidate waits after a failure \(back-off\) until "
        r"(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) UTC: wait-0, wait-1; a run after that tries again "
        r"\(`memory-worker status` shows why\)",
        lines[0],
    )
    assert found is not None, lines[0]
    until = dt.datetime.strptime(found.group(1), "%Y-%m-%d %H:%M:%S").replace(tzinfo=dt.UTC)
    # A minute per failed attempt (the failing run made three: three minutes from the last).
    assert before < until <= before + dt.timedelta(minutes=3)
    last = waiting.stderr.strip().splitlines()[-1]
    assert last.startswith("2 sessions, 0 new events; 0 entries written"), last
    assert not_finished(last) == set(SESSIONS)
    assert "Traceback" not in waiting.stderr

    # The model answers again and the back-off has passed: the failures are two hours old.
    model_server.echo = True
    with sqlite3.connect(tmp_path / "data" / "state.db") as conn:
        moved = conn.execute(
            "UPDATE failures SET last_at = ? WHERE task = 'consolidate'",
            ((before - dt.timedelta(hours=2)).strftime("%Y-%m-%d %H:%M:%S.%f"),),
        ).rowcount
    assert moved == 2
    later = run_cli(["run", "--once"], env=env, timeout=300)
    assert later.returncode == 0, later.stderr
    assert "waits after a failure" not in later.stderr
    assert len(model_server.bodies) > calls
