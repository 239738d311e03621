"""The canary under a crash: ``memory-worker run --once`` is killed with SIGKILL in the middle
of a repair (its summary already regenerated, an archive regeneration under way). The repair's
intent was recorded before it acted, so the next start finishes it: the store then holds no
withdrawn canary, every kept message, and the audit closes every repair it opened."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from canary_support import (
    BIN,
    canary_reply,
    cli,
    cli_env,
    consolidated_pair,
    dump_text,
    names,
    runtime_for,
)
from model_server import ModelServer, Reply, model_server_fixture  # noqa: F401

pytestmark = pytest.mark.integration


def test_kill_9_mid_repair_is_finished_by_the_next_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, model_server: ModelServer
) -> None:
    hold = threading.Event()
    release = threading.Event()
    archive_calls: list[float] = []

    def responder(request: Any) -> Reply:
        prompt = str(request["messages"][-1]["content"])
        if "memory archivist" in prompt and hold.is_set():
            archive_calls.append(time.monotonic())
            release.wait(30)  # the repair is stuck here until the worker is killed
        return canary_reply(request)

    model_server.responder = responder
    a, b, doomed = consolidated_pair(tmp_path, model_server, monkeypatch, ("s-k1", "s-k2"))
    assert len([n for n in names(tmp_path) if n.startswith("sum2-")]) == 1
    _, withdrawn = a.rewind(doomed.user_seq)

    env = cli_env(tmp_path, model_server, MEMORY_WORKER_LEASE_TTL_S="5")
    hold.set()
    worker = subprocess.Popen(
        [str(BIN / "memory-worker"), "run", "--once"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 40
        while not archive_calls and time.monotonic() < deadline and worker.poll() is None:
            time.sleep(0.05)
        assert archive_calls, worker.stderr.read() if worker.poll() is not None else "no call"
        os.kill(worker.pid, signal.SIGKILL)
        worker.wait(10)
    finally:
        release.set()
        if worker.poll() is None:
            worker.kill()
    hold.clear()
    # Killed mid-repair: the archive still carries the withdrawn text; the intent is open.
    assert any(c in dump_text(tmp_path) for c in withdrawn)
    status = cli(["status", "--json"], env)
    pending = {
        r["session_id"]: r["retractions_pending"] for r in json.loads(status.stdout)["sessions"]
    }
    assert pending["s-k1"] == 1

    again = cli(["run", "--once"], env, timeout=90)
    assert again.returncode == 0, again.stderr
    text = dump_text(tmp_path)
    for canary in withdrawn:
        assert canary not in text, canary
    for canary in a.kept(withdrawn) + list(b.canaries.values()):
        assert canary in text, canary
    runtime = runtime_for(tmp_path, model_server, monkeypatch)
    with runtime.state.transaction() as repos:
        audit = repos.audit.entries(session_id="s-k1")
    runtime.close()
    opened = [e.subject for e in audit if e.action == "repair-intent"]
    closed = [e.subject for e in audit if e.action == "repair-summary"]
    assert opened and sorted(set(opened)) == sorted(set(closed))
    assert [e.outcome for e in audit if e.action == "repair-archive"][-1] == "regenerated"
