"""The distributed mode fails loudly when its store cannot be opened as configured.

``memory-worker daemon`` and ``memory-worker worker`` open the store once at start-up: a shelf
registration hypatia-lite refuses (``store_shelf_url`` while the local ``default`` shelf holds
entries) or a login the PostgreSQL server refuses is one line on stderr and exit 2, before
anything is consumed or hinted. A job that meets such an error later (the registry changed under
a running worker) is not retried: it ends as a Celery FAILURE — what Flower and ``celery events``
show red — records the failure for ``status``, logs it once, and the worker keeps serving.
Redis database 2 is this module's.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
import uuid
from pathlib import Path
from typing import Any

import pytest
import redis
from celery_events_support import receiving
from cli_fork import run_cli
from cluster_support import BIN
from redis_dbs import redis_db
from state_db_support import throwaway_pg_database

from dsh_memory_worker.worker.jobs.runtime import build_runtime
from dsh_memory_worker.worker.run import tasks
from dsh_memory_worker.worker.settings import load_settings
from dsh_memory_worker.worker.state.database import StateDB
from dsh_memory_worker.worker.watch.watcher import Watcher
from hypatia_lite.store import LiteStore

pytestmark = pytest.mark.integration

REDIS_DB = redis_db("distributed_store_refused")  # tests/support/redis_dbs.py
BROKER = f"redis://127.0.0.1:6379/{REDIS_DB}"


def _env(root: Path, state_url: str, shelf_url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORY_WORKER_")}
    return {
        **env,
        "HOME": str(root),
        "MEMORY_WORKER_DSH_HOME": str(root / "dsh"),
        "MEMORY_WORKER_DATA_DIR": str(root / "data"),
        "HYPATIA_LITE_HOME": str(root / "lite"),
        "MEMORY_WORKER_STATE_URL": state_url,
        "MEMORY_WORKER_BROKER_URL": BROKER,
        "MEMORY_WORKER_STORE_SHELF_URL": shelf_url,
        "COLUMNS": "300",
    }


def _local_default_with_entries(lite: Path) -> None:
    with LiteStore(home=lite) as local:
        assert local.knowledge_create("msg-laptop-0", "a local shelf with history") is True


def _start(argv: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return run_cli(argv, env=env, timeout=90)


def test_daemon_and_worker_exit_2_with_one_line_on_a_refused_shelf(tmp_path: Path) -> None:
    lite = tmp_path / "lite"
    _local_default_with_entries(lite)
    (tmp_path / "dsh" / "sessions").mkdir(parents=True)
    with throwaway_pg_database() as url:
        env = _env(tmp_path, url, url)
        expected = (
            f"memory-worker: cannot open the store: shelf error: shelf 'default' is registered "
            f"as {lite / 'default'}, a local shelf holding 1 entry, not as {url}; choose another "
            "shelf name for the URL, or disconnect the local one (hypatia-lite disconnect "
            "default)"
        )
        for argv in (["daemon"], ["worker", "--pool", "solo", "--queue", f"q-{uuid.uuid4().hex}"]):
            done = _start(argv, env)
            assert (done.returncode, done.stderr.strip().splitlines()) == (2, [expected]), argv
        # A login the server refuses: the same, naming the role.
        refused = url.replace("postgres@", "no_such_role_mw@")
        env = _env(tmp_path, url, refused)
        env["MEMORY_WORKER_STORE_SHELF"] = "team"
        for argv in (["daemon"], ["worker", "--pool", "solo", "--queue", f"q-{uuid.uuid4().hex}"]):
            done = _start(argv, env)
            lines = done.stderr.strip().splitlines()
            assert done.returncode == 2 and len(lines) == 1, (argv, done.stderr)
            assert lines[0].startswith(
                "memory-worker: cannot open the store: shelf error: cannot open shelf 'team' at "
            ), lines
            assert 'role "no_such_role_mw" does not exist' in lines[0]
    with LiteStore(home=lite) as local:  # the refused local shelf is untouched
        assert [r["name"] for r in local.dump()["knowledge"]] == ["msg-laptop-0"]


def test_a_job_whose_store_is_refused_is_a_celery_failure_not_retried(tmp_path: Path) -> None:
    run_cli(["demo-home", str(tmp_path / "dsh")], timeout=120).check_returncode()
    lite = tmp_path / "lite"
    queue = f"refused-{uuid.uuid4().hex[:8]}"
    node = f"refused-{uuid.uuid4().hex[:6]}@{queue}"
    seen: list[dict[str, Any]] = []
    online, ended = threading.Event(), threading.Event()

    def on_event(event: dict[str, Any]) -> None:
        if event.get("hostname") != node:  # only this test's worker
            return
        seen.append(event)
        if event["type"] == "worker-heartbeat":
            online.set()
        if event["type"] in ("task-failed", "task-succeeded"):
            ended.set()

    with throwaway_pg_database() as state_url, throwaway_pg_database() as shelf_url:
        env = {
            **_env(tmp_path, state_url, shelf_url),
            "MEMORY_WORKER_TASK_MAX_RETRIES": "1",
            "MEMORY_WORKER_RETRY_BACKOFF_S": "0.1",
        }
        settings = load_settings(
            None,
            dsh_home=tmp_path / "dsh",
            data_dir=tmp_path / "data",
            state_url=state_url,
            broker_url=BROKER,
            lite_home=lite,
            store_shelf_url=shelf_url,
        )
        app = tasks.configure(settings, queue=queue)
        log = tmp_path / "worker.log"
        worker = subprocess.Popen(
            [
                str(BIN / "memory-worker"),
                "worker",
                "--pool",
                "solo",
                "--queue",
                queue,
                "--name",
                node,
            ],
            env=env,
            stdout=log.open("wb"),
            stderr=subprocess.STDOUT,
        )
        runtime = None
        try:
            with receiving(app, on_event, timeout_s=120):
                assert online.wait(120), log.read_text(errors="replace")[-2000:]
                # The registry changes under the running worker: `default` is a local shelf with
                # entries now (its pool opens the store with its first job).
                registry = lite / "shelves.json"
                registered = json.loads(registry.read_text()) if registry.exists() else None
                registry.parent.mkdir(parents=True, exist_ok=True)
                registry.write_text(json.dumps({"shelves": {}}))
                _local_default_with_entries(lite)
                runtime = build_runtime(settings, migrate=False)
                hints: list[tuple[str, str, str]] = []
                Watcher(runtime, lambda *hint: hints.append(hint)).poll_once()
                job, sid, shelf = next(h for h in hints if h[0] == "log_span")
                tasks.enqueue(job, sid, shelf)
                assert ended.wait(60), log.read_text(errors="replace")[-2000:]
            assert worker.poll() is None  # the worker keeps serving
        finally:
            worker.terminate()
            worker.wait(timeout=30)
            redis.Redis(db=REDIS_DB).delete(queue)
            if runtime is not None:
                runtime.close()
        kinds = [e["type"] for e in seen if e["type"].startswith("task-")]
        assert "task-retried" not in kinds and "task-succeeded" not in kinds, kinds
        # The worker had opened (and so registered) the shared shelf at start-up.
        assert registered == {"shelves": {"default": shelf_url}}
        (failed,) = [e for e in seen if e["type"] == "task-failed"]
        refusal = (
            f"shelf error: shelf 'default' is registered as {lite / 'default'}, a local "
            f"shelf holding 1 entry, not as {shelf_url}"
        )
        assert failed["exception"].startswith(
            f'JobNotFinished("log_span {sid} not finished: cannot open the store: {refusal}'
        )
        text = log.read_text(errors="replace")
        assert text.count(refusal) == 2, text  # the guard's line and Celery's FAILURE line
        assert "Traceback" not in text
        state = StateDB(state_url)
        try:
            with state.transaction() as repos:
                failure = repos.failures.get("log_span", sid)
            assert failure is not None and refusal in failure.last_error
            assert failure.attempts == 1 and not failure.permanent
        finally:
            state.dispose()
