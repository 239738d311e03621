"""``memory-worker relog``: after a redaction pattern is added (``redact_extra_patterns``), a
secret that slipped through is removed from the message entries, the session node, the summaries
and archives built on them and the work units derived from those; a dry run changes nothing; a
second run has nothing to do."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from model_server import ModelServer, model_server_fixture  # noqa: F401
from pipeline_support import dump
from rewrite_support import (
    SESSIONS,
    consolidate_with_a,
    env_for,
    knowledge,
    scripted,
    shelf_bytes,
    triples,
    write_sessions,
)
from typer.testing import CliRunner

from dsh_memory_worker.memory.entries import archive_name
from dsh_memory_worker.worker.cli import _register, app
from hypatia_lite.store import LiteStore

pytestmark = pytest.mark.integration

SECRET = "ZEBRA-4242-SECRET"
PATTERN = json.dumps([r"ZEBRA-\d+-SECRET"])


def relog(root: Path, server: ModelServer, *args: str) -> tuple[int, str, str]:
    _register()
    env = env_for(root, server, "model-a", MEMORY_WORKER_REDACT_EXTRA_PATTERNS=PATTERN)
    result = CliRunner().invoke(app, ["relog", *args], env=env)
    return result.exit_code, result.stdout, result.stderr


def test_relog_removes_a_planted_secret_from_everything_that_held_it(
    tmp_path: Path, model_server: ModelServer
) -> None:
    model_server.responder = scripted
    ends = write_sessions(tmp_path, secret=SECRET)
    consolidate_with_a(tmp_path, model_server)
    summaries = {sid: f"sum-{sid}-0-{ends[sid]}" for sid in SESSIONS}
    archive = archive_name(2, [summaries["s-1"], summaries["s-2"]])
    held = {name for name, data in knowledge(tmp_path).items() if SECRET in data}
    assert {
        "msg-s-1-0",
        "msg-s-2-0",
        "msg-s-3-0",
        "session-s-1",
        archive,
        *summaries.values(),
    } <= held
    assert sum(1 for n in held if n.startswith("wu-")) == 6
    edges_before = {t for t in triples(tmp_path) if t[1] == "summary"}

    full = dump(tmp_path)
    code, out, err = relog(tmp_path, model_server, "--all", "--dry-run")
    assert code == 0, err
    assert out.splitlines()[0] == (
        "s-1: would re-render 1 message, 1 session node; would rewrite 1 summary, 1 archive, "
        "re-extract 2 work units — 2 model calls, ~" + out.splitlines()[0].split("~")[1]
    )
    assert dump(tmp_path) == full

    calls = len(model_server.requests)
    code, out, err = relog(tmp_path, model_server, "--all", "--wait")
    assert code == 0, err
    assert len(model_server.requests) - calls == 5
    lines = out.splitlines()
    assert lines[0] == (
        "s-1: re-rendered 1 message, 1 session node; rewrote 1 summary, "
        "1 archive, 2 work units; removed 2 entries the new pass no longer "
        "produces"
    )
    assert lines[2] == (
        "s-3: re-rendered 1 message, 0 session nodes; rewrote 1 summary, "
        "0 archives, 2 work units; removed 2 entries the new pass no longer "
        "produces"
    )
    now = knowledge(tmp_path)
    assert "fix the build of s-1 [REDACTED:custom]" in now["msg-s-1-0"]
    assert now["session-s-1"] == "Build fixes [REDACTED:custom]"
    assert now[summaries["s-1"]] == "- ALPHA: U: fix the build of s-1 [REDACTED:custom]"
    assert "ALPHA saw ALPHA: U: fix the build of s-2 [REDACTED:custom]" in now[archive]
    assert SECRET not in json.dumps(dump(tmp_path))
    assert SECRET.encode() not in shelf_bytes(tmp_path)  # not in freed pages or the WAL either
    with LiteStore("default", home=tmp_path / "lite") as store:
        assert store.search("ZEBRA") == []
    assert {t for t in triples(tmp_path) if t[1] == "summary"} == edges_before
    assert all(h in now for h, _, _ in triples(tmp_path))

    calls = len(model_server.requests)
    code, out, err = relog(tmp_path, model_server, "--all", "--wait")
    assert code == 0, err
    assert out.splitlines() == [f"{sid}: already current: nothing to do" for sid in SESSIONS]
    assert len(model_server.requests) == calls
