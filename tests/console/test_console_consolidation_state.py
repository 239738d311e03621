"""The console and ``memory-worker status --json`` tell one story about consolidation, on every
demo session: ``off`` (and why) with no model route; with one, ``owed`` before consolidation ran,
``failing`` for a session whose consolidation failed, ``done`` after it ran — the same word for
each session on the sessions page, on the session page and in the status rows."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from canary_support import canary_reply, cli, cli_env, runtime_for
from console_support import http, running_console
from model_server import ModelServer
from pipeline_support import process

from dsh_memory_worker.worker.commands.demo_home import lay_out_fixtures
from dsh_memory_worker.worker.consolidation_state import annotate_status_rows, session_state

pytestmark = pytest.mark.integration  # real subprocesses

FIXTURES = Path(__file__).parents[1] / "fixtures" / "dsh"
_ROW = re.compile(
    r'<tr data-id="([^"]+)">.*?<td class="cons"><span class="cons cons-(\w+)" title="([^"]*)"',
    re.S,
)
_PAGE = re.compile(r'<span id="consolidation"><span class="cons cons-(\w+)"')


def _status(env: dict[str, str]) -> dict[str, tuple[str, str]]:
    done = cli(["status", "--json"], env)
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)["sessions"]
    return {r["session_id"]: (r["consolidation_state"], r["consolidation_why"]) for r in rows}


def _console(env: dict[str, str]) -> tuple[dict[str, tuple[str, str]], dict[str, str]]:
    """The sessions page's word and why per session, and each session page's word."""
    with running_console(env) as console:
        port = console.base.rsplit(":", 1)[1]
        cookie = {"Cookie": f"memory_console_{port}={console.token}"}
        status, body = http(console.base + "/sessions", headers=cookie)
        assert status == 200, body
        listed = {sid: (word, why) for sid, word, why in _ROW.findall(body)}
        pages = {}
        for sid in listed:
            status, page = http(console.base + f"/session?id={sid}", headers=cookie)
            assert status == 200, page
            pages[sid] = _PAGE.findall(page)[0]
    return {k: (w, y.replace("&#39;", "'")) for k, (w, y) in listed.items()}, pages


def _agree(env: dict[str, str], sessions: set[str]) -> dict[str, str]:
    listed, pages = _console(env)
    status = _status(env)
    assert set(listed) == sessions and set(pages) == sessions
    for sid in sessions:
        assert listed[sid] == status[sid], sid
        assert pages[sid] == status[sid][0], sid
    return {sid: word for sid, (word, _) in listed.items()}


def test_console_and_status_agree_on_every_demo_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lay_out_fixtures(FIXTURES, tmp_path / "dsh")
    server = ModelServer(canary_reply).start()
    try:
        runtime = runtime_for(tmp_path, server, monkeypatch)
        process(runtime, consolidation=False)  # logged, nothing consolidated yet
        runtime.close()
        known = set(_status(cli_env(tmp_path, server)))  # every demo session, recorded
        assert len(known) >= len([c for c in FIXTURES.iterdir() if c.is_dir()]), known
        # No model route: off, and why, everywhere.
        off_env = cli_env(tmp_path, server, MEMORY_WORKER_MODEL_ROUTES="[]")
        words = _agree(off_env, known)
        assert set(words.values()) == {"off"}
        assert {why for _, why in _status(off_env).values()} == {
            "no model route: set model_routes / MEMORY_WORKER_MODEL_ROUTES"
        }
        # A model route: owed where messages are logged and not summarised.
        env = cli_env(tmp_path, server)
        words = _agree(env, known)
        assert "owed" in words.values() and "off" not in words.values(), words
        # A failing consolidation.
        failing = sorted(sid for sid, word in words.items() if word == "owed")[0]
        runtime = runtime_for(tmp_path, server, monkeypatch)
        with runtime.state.transaction() as repos:
            repos.failures.record("consolidate", failing, "model said no")
        runtime.close()
        words = _agree(env, known)
        assert words[failing] == "failing"
        # Consolidated: done.
        runtime = runtime_for(tmp_path, server, monkeypatch)
        with runtime.state.transaction() as repos:
            repos.failures.clear("consolidate", failing)
        process(runtime)
        runtime.close()
        words = _agree(env, known)
        assert "done" in words.values() and "failing" not in words.values(), words
    finally:
        server.stop()


def test_the_vocabulary() -> None:
    off = "no model route: set model_routes / MEMORY_WORKER_MODEL_ROUTES"
    assert session_state(off=off, forgotten=False, lag=3, failing_task=None).word == "off"
    assert session_state(off=None, forgotten=False, lag=3, failing_task="log_span").word == "owed"
    failing = session_state(off=None, forgotten=False, lag=0, failing_task="cascade")
    assert (failing.word, failing.why) == ("failing", "cascade: failed")
    assert session_state(off=None, forgotten=False, lag=0, failing_task=None).word == "done"
    assert session_state(off=None, forgotten=True, lag=0, failing_task="consolidate").word == "done"
    rows: list[dict[str, object]] = [
        {"consolidation_lag": None, "forgotten": False, "last_failure": None},
        {"consolidation_lag": 2, "forgotten": False, "last_failure": {"task": "consolidate"}},
    ]
    annotate_status_rows(rows, None)
    assert [(r["consolidation_state"], r["consolidation_why"]) for r in rows] == [
        ("owed", "not scanned yet"),
        ("failing", "consolidate: failed"),
    ]
