"""``celery -A dsh_memory_worker …`` — what a Celery user types first — names the worker's Celery
app:
``celery -A dsh_memory_worker inspect ping`` gets a pong from a running ``memory-worker worker`` on
Redis."""

from __future__ import annotations

import re
import subprocess
import time
import uuid
from pathlib import Path

import pytest
import redis
from cli_support import BIN, cli_env
from redis_dbs import redis_db

pytestmark = pytest.mark.integration

REDIS_DB = redis_db("celery_app_alias")  # tests/support/redis_dbs.py


def test_celery_inspect_ping_through_worker_tasks_answers_a_running_worker(tmp_path: Path) -> None:
    (tmp_path / "home").mkdir()
    queue = f"alias-{uuid.uuid4().hex[:8]}"
    node = f"alias-{uuid.uuid4().hex[:6]}@{queue}"
    env = cli_env(
        tmp_path,
        MEMORY_WORKER_BROKER_URL=f"redis://127.0.0.1:6379/{REDIS_DB}",
        MEMORY_WORKER_STATE_URL=f"sqlite:///{tmp_path / 'state.db'}",
    )
    log = (tmp_path / "worker.log").open("wb")
    worker = subprocess.Popen(
        [str(BIN / "memory-worker"), "worker", "--pool", "solo", "--queue", queue, "--name", node],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 120
        while True:
            ping = subprocess.run(
                [
                    str(BIN / "celery"),
                    "-A",
                    "dsh_memory_worker.worker.tasks",
                    "inspect",
                    "ping",
                    f"--destination={node}",
                    "--timeout=2",
                ],
                env=env,
                cwd=tmp_path,
                capture_output=True,
                text=True,
                timeout=120,
            )
            if (
                ping.returncode == 0
                or "not found" in ping.stderr
                or "Unable to load" in ping.stderr
                or time.monotonic() > deadline
            ):
                break
            assert worker.poll() is None, (tmp_path / "worker.log").read_text(errors="replace")
    finally:
        worker.terminate()
        worker.wait(timeout=30)
        redis.Redis(db=REDIS_DB).delete(queue)
    assert ping.returncode == 0, ping.stdout + ping.stderr
    assert re.search(rf"^->\s+{re.escape(node)}: OK$", ping.stdout, re.M), ping.stdout
    assert "pong" in ping.stdout
