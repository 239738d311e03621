"""``reconsolidate --replace --workers --wait`` in distributed mode: the rewrite runs as
``rewrite`` jobs on real Celery workers (Redis DB 14, PostgreSQL state), one session per lease;
``kill -9`` of the worker in the middle of a session's rewrite — the other worker takes the
request over once the lease expires (the daemon's reconcile re-sends the hint of the still-queued
request) — converges on exactly the store of an
uninterrupted in-process run; a second run makes no model call."""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest
from cluster_support import Cluster, throwaway_cluster, wait_for
from model_server import ModelServer, Reply, model_server_fixture  # noqa: F401
from pipeline_support import dump
from redis_dbs import redis_db
from rewrite_support import (
    BIN,
    KEY_ENV,
    SESSIONS,
    consolidate_with_a,
    env_for,
    route,
    scripted,
    write_sessions,
)
from typer.testing import CliRunner

from dsh_memory_worker.worker.cli import _register, app
from dsh_memory_worker.worker.names import session_lease_key
from dsh_memory_worker.worker.state.owners import local_pid

pytestmark = pytest.mark.integration

REDIS_DB = redis_db("rewrite_celery")  # tests/support/redis_dbs.py


def slow_b(request: dict[str, Any]) -> Reply:
    reply = scripted(request)
    if request.get("model") == "model-b":
        reply.delay_s = 0.6  # a window to kill the worker between two calls of one session
    return reply


def holder(cluster: Cluster, workers: dict[int, subprocess.Popen[bytes]]) -> Any:
    """``(session, worker process)`` for a worker holding a session's lease (owner
    ``celery:<host>:<pid>:<random>``), if any."""
    with cluster.state.read() as repos:
        for sid in SESSIONS:
            lease = repos.leases.holder(session_lease_key(sid))
            if lease is not None and lease.owner.startswith("celery:"):
                pid = local_pid(lease.owner)
                found = workers.get(pid) if pid is not None else None
                if found is not None:
                    return sid, found
    return None


def test_replace_on_celery_workers_survives_a_killed_worker(
    tmp_path: Path, model_server: ModelServer
) -> None:
    model_server.responder = slow_b
    reference = tmp_path / "reference"
    write_sessions(reference)
    consolidate_with_a(reference, model_server)
    _register()
    done = CliRunner().invoke(
        app,
        ["reconsolidate", "--all", "--replace", "--wait"],
        env=env_for(reference, model_server, "model-b"),
    )
    assert done.exit_code == 0, done.output
    expected = dump(reference)

    root = tmp_path / "cluster"
    env = {
        KEY_ENV: "sk-rewrite-test-0000000000",
        "MEMORY_WORKER_MODEL_ROUTES": json.dumps(route(model_server, "model-b")),
        "MEMORY_WORKER_ADJUDICATE": "false",
        "MEMORY_WORKER_CASCADE_BATCH_SIZE": "2",
    }
    with throwaway_cluster(root, "rw_celery", REDIS_DB, env) as cluster:
        write_sessions(root)
        consolidate_with_a(root, model_server, state_url=cluster.state_url)

        def b_written() -> int:
            with cluster.state.read() as repos:
                return sum(
                    1 for p in repos.provenance.list("default") if p.writer.model == "model-b"
                )

        cluster.start("daemon", "daemon")
        workers = {w.pid: w for w in (cluster.start_worker("w1"), cluster.start_worker("w2"))}
        follow = subprocess.Popen(
            [
                str(BIN / "memory-worker"),
                "reconsolidate",
                "--all",
                "--replace",
                "--workers",
                "--wait",
                "--timeout",
                "240",
                "--queue",
                cluster.queue,
            ],
            env=cluster.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            wait_for(lambda: b_written() >= 2, 120, "the first summary rewritten")
            killed, busy = wait_for(
                lambda: holder(cluster, workers), 30, "a worker holding a lease"
            )
            busy.send_signal(signal.SIGKILL)  # mid-session: its summary is B's, its archive not
            busy.wait(timeout=10)
            out, err = follow.communicate(timeout=300)
        finally:
            if follow.poll() is None:
                follow.kill()
        assert follow.returncode == 0, err + cluster.worker_logs()[-3000:]
        wanted = {
            "s-1": "s-1: rewrote 1 summary, 1 archive, 1 work unit",
            "s-2": "s-2: rewrote 1 summary, 1 archive, 1 work unit; removed 2 entries the new "
            "pass no longer produces",
            "s-3": "s-3: rewrote 1 summary, 0 archives, 1 work unit; removed 2 entries the new "
            "pass no longer produces",
        }
        lines = dict(zip(SESSIONS, out.splitlines(), strict=True))
        for sid, line in lines.items():
            if sid == killed and (
                line == f"{sid}: already current: nothing to do"
                or line.startswith(f"{sid}: rewrote ")
            ):
                # The retry reports what it did itself: nothing, when the kill landed after the
                # worker's last write, or fewer removals, when an entry was already gone (the
                # dump below proves the rewrite either way).
                continue
            assert line.startswith(wanted[sid]) if sid == "s-1" else line == wanted[sid], out
        assert cluster.dump() == expected

        calls = len(model_server.requests)
        again = CliRunner().invoke(
            app,
            [
                "reconsolidate",
                "--all",
                "--replace",
                "--workers",
                "--wait",
                "--timeout",
                "120",
                "--queue",
                cluster.queue,
            ],
            env=cluster.env,
        )
        assert again.exit_code == 0, again.output
        assert again.stdout.splitlines() == [
            f"{sid}: already current: nothing to do" for sid in ("s-1", "s-2", "s-3")
        ]
        assert len(model_server.requests) == calls
