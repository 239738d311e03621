"""End to end, embedded: the real ``memory-worker run`` process against a local chat-completions
server writes span summaries, a tier-2 archive and work units into hypatia-lite after the
sessions' turns (``--once``), and while following a live log the turn-end gate holds the summary
back until enough turns and tokens have passed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from cli_fork import run_cli
from cluster_support import wait_for
from conftest import REPO
from model_server import ModelServer, Reply, model_server_fixture  # noqa: F401
from pipeline_support import dump

from dsh_memory_worker.memory.entries import archive_name
from dsh_memory_worker.worker.state.database import StateDB

sys.path.insert(0, str(REPO / "benchmarks"))
from worker_dshgen import SessionLogWriter

pytestmark = pytest.mark.integration

BIN = Path(sys.executable).parent
CWD = "/home/dev/e2e-proj"
UNIT = {
    "title": "Pin the ruff version",
    "classification": "bug-fix",
    "content": "## Context\nCI drifted.\n## Solution\nPin ruff==0.8.",
    "tags": ["ci"],
}


def scripted(request: dict[str, Any]) -> Reply:
    """Replies by prompt: consolidation → summary + one unit; cascade → archive; judge →
    unrelated."""
    text = request["messages"][-1]["content"]
    if "memory consolidation engine" in text:
        first = text.split("<transcript>\n", 1)[1].split("\n", 1)[0]
        return Reply(content=json.dumps({"summary": f"- {first}", "workUnits": [UNIT]}))
    if "memory archivist" in text:
        return Reply(content=json.dumps({"title": "Project digest", "summary": "- both"}))
    return Reply(content=json.dumps({"verdict": "unrelated", "target": ""}))


def worker_env(root: Path, server: ModelServer, **extra: str) -> dict[str, str]:
    return {
        **os.environ,
        "MEMORY_WORKER_DSH_HOME": str(root / "dsh"),
        "MEMORY_WORKER_DATA_DIR": str(root / "data"),
        "MEMORY_WORKER_LITE_HOME": str(root / "lite"),
        "MEMORY_WORKER_MODEL_ROUTES": json.dumps(
            [{"base_url": server.base_url, "model": "deepseek-chat", "api_key_env": "E2E_KEY"}]
        ),
        "E2E_KEY": "sk-e2e-0000000000000000",
        **extra,
    }


def test_run_once_writes_summaries_archive_and_work_units(
    tmp_path: Path, model_server: ModelServer
) -> None:
    model_server.responder = scripted
    ends = {}
    for sid in ("e-one", "e-two"):
        log = SessionLogWriter(tmp_path / "dsh", sid, CWD)
        log.turn(f"fix the CI of {sid}", "pinned ruff")
        log.turn("thanks", "welcome")
        log.flush()
        ends[sid] = log.seq
    done = run_cli(
        ["run", "--once"],
        env=worker_env(tmp_path, model_server, MEMORY_WORKER_CASCADE_BATCH_SIZE="2"),
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    store = dump(tmp_path)
    knowledge = {row["name"]: row["content"] for row in store["knowledge"]}
    statements = {(r["head"], r["relation"], r["tail"]) for r in store["statements"]}
    summaries = [f"sum-{sid}-0-{ends[sid]}" for sid in ("e-one", "e-two")]
    assert knowledge[summaries[0]]["data"] == "- U: fix the CI of e-one"
    for sid, summary in zip(("e-one", "e-two"), summaries, strict=True):
        assert {(summary, "summary", f"msg-{sid}-{n}") for n in range(4)} <= statements
    archive = archive_name(2, summaries)
    assert knowledge[archive]["data"] == "# Project digest\n\n- both"
    assert knowledge[archive]["scopes"] == ["e2e-proj"]
    assert {(archive, "summary", s) for s in summaries} <= statements
    (unit,) = [name for name in knowledge if name.startswith("wu-pin-the-ruff-version-")]
    assert knowledge[unit]["tags"] == ["memory", "work-unit", "ci"]
    # The same lesson from the second session is not stored twice; it gains a derivedFrom edge.
    assert {(unit, "derivedFrom", s) for s in summaries} | {(unit, "is_a", "work-unit")} == {
        t for t in statements if t[0] == unit
    }


def test_follow_mode_waits_for_the_turn_and_token_gates(
    tmp_path: Path, model_server: ModelServer
) -> None:
    model_server.responder = scripted
    log = SessionLogWriter(tmp_path / "dsh", "e-live", CWD)
    log.turn("a" * 2400, "first answer")
    log.flush()
    env = worker_env(
        tmp_path,
        model_server,
        MEMORY_WORKER_CHECK_EVERY_TURNS="2",
        MEMORY_WORKER_MIN_NEW_TOKENS="500",
        MEMORY_WORKER_POLL_INTERVAL_S="0.2",
    )
    out = (tmp_path / "run.log").open("wb")
    proc = subprocess.Popen(
        [str(BIN / "memory-worker"), "run"], env=env, stdout=out, stderr=subprocess.STDOUT
    )
    try:
        names = lambda: {row["name"] for row in dump(tmp_path)["knowledge"]}  # noqa: E731
        wait_for(lambda: {"msg-e-live-0", "msg-e-live-1"} <= names(), 30, "the first turn")
        state = StateDB(f"sqlite:///{tmp_path / 'data' / 'state.db'}")

        def judged() -> Any:
            with state.transaction() as repos:
                found = repos.progress.get("default", "e-live")
            return found if found.pending_tokens > 0 else None

        progress = wait_for(judged, 30, "the turn-end gate to judge the first turn")
        state.dispose()
        assert (progress.last_consolidated_seq, progress.last_check_turn) == (0, 0)
        assert not any(n.startswith("sum") for n in names())  # one turn: too soon
        assert model_server.requests == []
        log.turn("second", "second answer")
        log.flush()
        summary = f"sum-e-live-0-{log.seq}"
        wait_for(lambda: summary in names(), 30, "the summary after the second turn")
    finally:
        proc.terminate()
        proc.wait(timeout=20)
