"""The cascade and the repair of archives never rewrite one project's archives at once: while
another worker holds the project's archive lease, the ``cascade`` job builds nothing and asks to
be retried; once the lease is free it runs."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from model_server import ModelServer, Reply, model_server_fixture  # noqa: F401
from test_consolidate_pipeline import process, runtime_for

from dsh_memory_worker.worker.jobs import cascade as cascade_job
from dsh_memory_worker.worker.jobs.guard import run_job
from dsh_memory_worker.worker.names import archive_lease_key
from hypatia_lite.store import LiteStore

pytestmark = pytest.mark.integration


def reply(request: Any) -> Reply:
    text = request["messages"][-1]["content"]
    if re.search(r"building tier (\d+)", text):
        return Reply(content=json.dumps({"title": "Digest", "summary": "- merged"}))
    return Reply(content=json.dumps({"summary": "- did things", "workUnits": []}))


def archives(root: Path) -> list[str]:
    with LiteStore("default", home=root / "lite") as store:
        return [r["name"] for r in store.dump()["knowledge"] if r["name"].startswith("sum2-")]


def test_cascade_waits_while_a_repair_holds_the_archive_lease(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, model_server: ModelServer
) -> None:
    from worker_dshgen import SessionLogWriter

    model_server.responder = reply
    monkeypatch.setattr(cascade_job, "ARCHIVE_LEASE_WAIT_S", 0.3)
    runtime = runtime_for(
        tmp_path, monkeypatch, model_server, cascade_batch_size=2, cascade_enabled=False
    )
    for sid in ("s-a", "s-b"):
        log = SessionLogWriter(tmp_path / "dsh", sid, "/home/dev/proj")
        log.turn(f"question of {sid}", f"answer of {sid}")
        log.flush()
    process(runtime)
    assert archives(tmp_path) == []
    runtime.settings = runtime.settings.model_copy(update={"cascade_enabled": True})

    with runtime.state.transaction() as repos:
        held = repos.leases.acquire(archive_lease_key("proj"), "repairing-worker", 60)
    assert held is not None
    blocked = run_job(runtime, "cascade", "s-a", "default")
    assert blocked.status == "retry"
    assert "being rewritten by another worker" in blocked.detail
    assert archives(tmp_path) == []

    with runtime.state.transaction() as repos:
        assert repos.leases.release(held)
    assert run_job(runtime, "cascade", "s-a", "default").status == "done"
    assert len(archives(tmp_path)) == 1
