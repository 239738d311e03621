"""``kill -9`` of ``memory-worker reconsolidate --all --replace --wait`` in the middle of its run
(a summary rewritten, the archive above it not yet), then a rerun: the store converges on exactly
the store of an uninterrupted run (full dump comparison), with none of A's text left."""

from __future__ import annotations

import json
import os
import re
import signal
from pathlib import Path
from typing import Any

import pytest
from cli_fork import start_cli
from cluster_support import wait_for
from model_server import ModelServer, Reply, model_server_fixture  # noqa: F401
from pipeline_support import dump as dump_of
from rewrite_support import consolidate_with_a, env_for, scripted, write_sessions
from typer.testing import CliRunner, Result

from dsh_memory_worker.worker.cli import _register, app
from dsh_memory_worker.worker.state.database import StateDB

pytestmark = pytest.mark.integration


def slow_b(request: dict[str, Any]) -> Reply:
    reply = scripted(request)
    if request.get("model") == "model-b":
        reply.delay_s = 0.6  # a window between the summary rewrite and the archive call
    return reply


def b_written(root: Path) -> int:
    state = StateDB(f"sqlite:///{root / 'data' / 'state.db'}")
    try:
        with state.read() as repos:
            return sum(1 for p in repos.provenance.list("default") if p.writer.model == "model-b")
    finally:
        state.dispose()


def replace(root: Path, server: ModelServer) -> Result:
    """The same command in this process (only the run that is killed needs its own)."""
    _register()
    return CliRunner().invoke(
        app, ["reconsolidate", "--all", "--replace", "--wait"], env=env_for(root, server, "model-b")
    )


def dump(root: Path) -> dict[str, Any]:
    """The store of ``root``, with each entry's ``_Recorded: <UTC date>_`` line read as the day
    it names, not compared: the reference and the crashed store are written minutes apart, and
    a run that straddles midnight (UTC) records the next day."""
    text = re.sub(r"_Recorded: \d{4}-\d{2}-\d{2}_", "_Recorded: <day>_", json.dumps(dump_of(root)))
    return dict(json.loads(text))


def test_kill9_mid_replace_then_rerun_converges_on_the_uninterrupted_store(
    tmp_path: Path, model_server: ModelServer
) -> None:
    model_server.responder = slow_b
    reference, crashed = tmp_path / "reference", tmp_path / "crashed"
    for root in (reference, crashed):
        write_sessions(root)
        consolidate_with_a(root, model_server)
    assert dump(reference) == dump(crashed)

    done = replace(reference, model_server)
    assert done.exit_code == 0, done.output
    expected = dump(reference)
    assert "ALPHA" not in json.dumps(expected)
    assert "_Recorded: <day>_" in json.dumps(expected)  # the entries carry a recorded day

    # A process of its own, forked from the pre-imported server (cli_fork): kill -9 ends it.
    proc = start_cli(
        ["reconsolidate", "--all", "--replace", "--wait"],
        env=env_for(crashed, model_server, "model-b"),
    )
    try:
        # s-1's summary and its new work unit are recorded as B's; the archive call is pending.
        wait_for(lambda: b_written(crashed) >= 2, 60, "the first rewritten summary")
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == -signal.SIGKILL
    half = dump(crashed)
    assert half != expected and "ALPHA" in json.dumps(half)  # it really stopped half-way

    rerun = replace(crashed, model_server)
    assert rerun.exit_code == 0, rerun.output
    assert "s-1: rewrote 1 summary, 1 archive, 1 work unit" in rerun.stdout
    assert dump(crashed) == expected
