"""``memory-worker relog`` with no model route (the default): a secret that slipped through and
that a newly added redaction pattern now matches leaves every ``msg-*`` entry, the session node
and every byte of the shelf, exit 0 — messages and session nodes need no model. Summaries built
on those messages (written while a route was configured) wait for a model route: the run says
how many summaries, archives and work units wait, and a later ``relog`` with a route rewrites
them although their messages are current by then.

The secret shares its sentence with kept words (and the kept words recur in other messages and
sessions), so a run that dropped whole messages instead of re-rendering them would fail too.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from bytes_support import present, shelf_files, token
from model_server import ModelServer, model_server_fixture  # noqa: F401
from pipeline_support import process
from rewrite_support import (
    KEY_ENV,
    SESSIONS,
    consolidate_with_a,
    env_for,
    knowledge,
    scripted,
    shelf_bytes,
    write_sessions,
)
from typer.testing import CliRunner
from worker_dshgen import embedded_runtime

from dsh_memory_worker.memory.entries import archive_name
from dsh_memory_worker.worker.cli import _register, app

pytestmark = pytest.mark.integration

SECRET = token("relog-without-model")
PATTERN = json.dumps([SECRET[:2] + r"[0-9a-f]{10}" + SECRET[-6:]])
REDACTED = "[REDACTED:custom]"


def _env(root: Path, server: ModelServer | None, **extra: str) -> dict[str, str]:
    """``env_for`` with the new pattern; without ``server``, no model route at all."""
    if server is not None:
        return env_for(
            root, server, "model-b", MEMORY_WORKER_REDACT_EXTRA_PATTERNS=PATTERN, **extra
        )
    env = {
        k: v for k, v in os.environ.items() if not k.startswith("MEMORY_WORKER_") and k != KEY_ENV
    }
    env.update(
        MEMORY_WORKER_DSH_HOME=str(root / "dsh"),
        MEMORY_WORKER_DATA_DIR=str(root / "data"),
        MEMORY_WORKER_LITE_HOME=str(root / "lite"),
        MEMORY_WORKER_CONFIG="",
        MEMORY_WORKER_REDACT_EXTRA_PATTERNS=PATTERN,
        **extra,
    )
    return env


def _relog(root: Path, server: ModelServer | None, *args: str) -> tuple[int, str, str]:
    _register()
    result = CliRunner().invoke(app, ["relog", *args], env=_env(root, server))
    return result.exit_code, result.stdout, result.stderr


def _messages(root: Path) -> dict[str, str]:
    return {n: d for n, d in knowledge(root).items() if n.startswith("msg-")}


def test_relog_without_a_model_scrubs_every_message_and_byte(tmp_path: Path) -> None:
    write_sessions(tmp_path, secret=f"{SECRET} near the build of")
    runtime = embedded_runtime(tmp_path, force_idle=True, model_routes=[])
    try:
        process(runtime)
    finally:
        runtime.close()
    before = _messages(tmp_path)
    assert {n for n, d in before.items() if SECRET in d} == {"msg-s-1-0", "msg-s-2-0", "msg-s-3-0"}
    assert SECRET in knowledge(tmp_path)["session-s-1"]
    assert not any(n.startswith(("sum", "wu-")) for n in knowledge(tmp_path))
    assert present(shelf_files(tmp_path / "lite"), [SECRET]) == {SECRET}

    code, out, err = _relog(tmp_path, None, "--all", "--dry-run")
    assert code == 0, err
    assert out.splitlines()[0] == ("s-1: would re-render 1 message, 1 session node — 0 model calls")
    assert _messages(tmp_path) == before

    code, out, err = _relog(tmp_path, None, "--all", "--wait")
    assert code == 0, out + err
    assert out.splitlines() == [
        "s-1: re-rendered 1 message, 1 session node",
        "s-2: re-rendered 1 message, 0 session nodes",
        "s-3: re-rendered 1 message, 0 session nodes",
    ]
    after = _messages(tmp_path)
    assert set(after) == set(before)  # re-rendered in place, nothing dropped
    for sid in SESSIONS:
        name = f"msg-{sid}-0"
        assert SECRET not in after[name]
        assert f"fix the build of {sid} {REDACTED} near the build of" in after[name]
    for name, text in before.items():  # the kept messages, the same words, untouched
        if not name.endswith("-0"):
            assert after[name] == text
    assert knowledge(tmp_path)["session-s-1"] == f"Build fixes {REDACTED} near the build of"
    assert present(shelf_files(tmp_path / "lite"), [SECRET]) == set()
    assert SECRET.encode() not in shelf_bytes(tmp_path)
    assert SECRET.lower().encode()[:12] not in shelf_bytes(tmp_path).lower()

    code, out, _ = _relog(tmp_path, None, "--all", "--wait")
    assert code == 0
    assert out.splitlines()[0] == "s-1: already current: nothing to do"


def test_summaries_wait_for_a_model_route_and_a_later_relog_rewrites_them(
    tmp_path: Path, model_server: ModelServer
) -> None:
    model_server.responder = scripted
    ends = write_sessions(tmp_path, secret=SECRET)
    consolidate_with_a(tmp_path, model_server)
    summaries = {sid: f"sum-{sid}-0-{ends[sid]}" for sid in SESSIONS}
    archive = archive_name(2, [summaries["s-1"], summaries["s-2"]])
    assert SECRET in knowledge(tmp_path)[summaries["s-1"]]

    calls = len(model_server.requests)
    code, out, err = _relog(tmp_path, None, "--all", "--wait")
    assert code == 0, out + err
    assert len(model_server.requests) == calls
    assert out.splitlines()[0] == (
        "s-1: re-rendered 1 message, 1 session node; 1 summary, 1 archive, 2 work units wait "
        "for a model route (set MEMORY_WORKER_MODEL_ROUTES, then rerun relog)"
    )
    now = knowledge(tmp_path)
    assert not any(SECRET in d for n, d in now.items() if n.startswith(("msg-", "session-")))
    assert SECRET in now[summaries["s-1"]]  # it waits: nothing could rewrite it

    # The messages are current now; the owed summaries are found all the same.
    code, out, err = _relog(tmp_path, model_server, "--all", "--dry-run")
    assert code == 0, err
    assert out.splitlines()[0].startswith(
        "s-1: would re-render 0 messages, 0 session nodes; would rewrite 1 summary, 1 archive"
    )
    code, out, err = _relog(tmp_path, model_server, "--all", "--wait")
    assert code == 0, out + err
    assert len(model_server.requests) - calls == 5
    now = knowledge(tmp_path)
    assert not any(SECRET in d for d in now.values())
    assert now[summaries["s-1"]] == f"- BRAVO: U: fix the build of s-1 {REDACTED}"
    assert archive in now
    assert SECRET.encode() not in shelf_bytes(tmp_path)

    code, out, _ = _relog(tmp_path, model_server, "--all", "--dry-run")
    assert code == 0
    assert out.splitlines()[0] == "s-1: already current: nothing to do"
