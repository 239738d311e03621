"""The at-rest answer never skips work the full path would do (issue 32, item 2).

The oracle is the full path over the same files (and a clean run in a fresh home), never the
at-rest rule itself: after a model outage's back-off has passed (the clock is moved forward by
injection into the probed process, not by sleeping), a plain ``run --once`` must do what the
full path does; and a session whose directory is named ``__pycache__`` is read by both paths.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from cli_fork import run_cli
from cluster_support import wait_for
from conftest import REPO
from model_server import ModelServer, model_server_fixture  # noqa: F401
from pipeline_support import dump

from dsh_memory_worker.worker import at_rest

sys.path.insert(0, str(REPO / "benchmarks"))
from worker_dshgen import SessionLogWriter, conversation

pytestmark = pytest.mark.integration

#: Runs ``memory-worker ARGS`` with the wall clock moved ``OFFSET`` seconds forward (argv[1]) and
#: says on stdout's last line which path answered: the full one imports SQLAlchemy.
PROBE = (
    "import sys, time\noffset = float(sys.argv.pop(1))\nreal = time.time\n"
    "time.time = lambda: real() + offset\n"
    "from dsh_memory_worker.worker.cli import main\nsys.argv = ['memory-worker', *sys.argv[1:]]\n"
    "code = 0\ntry:\n    main()\nexcept SystemExit as exc:\n    code = exc.code or 0\n"
    "print('FULL' if 'sqlalchemy' in sys.modules else 'AT-REST')\nsys.exit(code)\n"
)
CWD = "/home/dev/rest"
KEY = "AT_REST_TEST_KEY"


def _probe(env: dict[str, str], offset_s: float = 0.0) -> tuple[int, str, str]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(offset_s), "run", "--once"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    return done.returncode, done.stderr, (done.stdout.splitlines() or [""])[-1]


def _env(root: Path, server: ModelServer | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORY_WORKER_")}
    env.update(
        {
            "MEMORY_WORKER_DSH_HOME": str(root / "dsh"),
            "MEMORY_WORKER_DATA_DIR": str(root / "data"),
            "MEMORY_WORKER_LITE_HOME": str(root / "lite"),
            "MEMORY_WORKER_RETRY_BACKOFF_S": "0.1",
            "MEMORY_WORKER_ADJUDICATE": "false",
            "XDG_CACHE_HOME": str(root / "cache"),
            "COLUMNS": "250",
            KEY: "sk-at-rest-test-key-0000000000000",
        }
    )
    env.pop("HYPATIA_LITE_HOME", None)
    if server is not None:
        env["MEMORY_WORKER_MODEL_ROUTES"] = json.dumps(
            [{"base_url": server.base_url, "model": "rest", "api_key_env": KEY}]
        )
    return env


def _newest_ns(root: Path) -> int:
    newest = 0
    for name in ("dsh", "data", "lite"):
        for directory, _dirs, files in os.walk(root / name):
            for path in (directory, *(os.path.join(directory, f) for f in files)):
                with contextlib.suppress(OSError):
                    st = os.stat(path)
                    newest = max(newest, st.st_mtime_ns, st.st_ctime_ns)
    return newest


def _settle(root: Path) -> None:
    """Wait until every file of the home is old enough for a full run to record it at rest."""
    wait_for(
        lambda: time.time_ns() > _newest_ns(root) + at_rest.SETTLE_NS,
        30,
        "the home to settle",
        every=0.05,
    )


def _clean_run(root: Path, final: Path, server: ModelServer | None = None) -> dict[str, Any]:
    """The store a clean ``run --once`` over a copy of the DSH home ``final`` leaves."""
    shutil.copytree(final, root / "dsh")
    done = run_cli(["run", "--once"], env=_env(root, server), timeout=300)
    assert done.returncode == 0, done.stderr
    return dump(root)


def test_after_a_back_off_passes_a_plain_run_does_the_owed_work(
    tmp_path: Path, model_server: ModelServer
) -> None:
    home = tmp_path / "home"
    for i in range(2):
        conversation(home / "dsh", f"rest-{i}", CWD, 3, title=f"Rest {i}")
    env = _env(home, model_server)  # the model answers nothing: HTTP 500 (an outage)
    first = run_cli(["run", "--once"], env=env, timeout=300)
    assert "0 failed" not in first.stderr.splitlines()[-1], first.stderr
    # During the back-off a run does nothing (the summary may also say what waits, and the run
    # may then exit 1); once the home has settled, a full run over it could record it.
    for _ in range(3):
        _settle(home)
        waiting = run_cli(["run", "--once"], env=env, timeout=300)
        assert waiting.returncode in (0, 1), waiting.stderr
        assert "; 0 jobs done, 0 failed" in waiting.stderr, waiting.stderr
    # The model answers again and the back-off (an hour at most) has passed.
    model_server.echo = True
    code, err, path = _probe(env, offset_s=2 * 3600)
    assert (code, path) == (0, "FULL"), err
    assert "0 jobs done" not in err.splitlines()[-1], err
    clean = _clean_run(tmp_path / "clean", home / "dsh", model_server)
    assert dump(home) == clean


def test_a_session_named_pycache_is_read_by_both_paths(tmp_path: Path) -> None:
    home = tmp_path / "home"
    conversation(home / "dsh", "plain", CWD, 2)
    hidden = conversation(home / "dsh", "__pycache__", CWD, 2)
    env = _env(home)
    first = run_cli(["run", "--once"], env=env, timeout=300)
    assert first.returncode == 0, first.stderr
    deadline = time.monotonic() + 60
    while True:  # settled, recorded by a full run, answered at rest
        _settle(home)
        recorded = run_cli(["run", "--once"], env=env, timeout=300)
        assert recorded.returncode == 0, recorded.stderr
        code, err, path = _probe(env)
        if path == "AT-REST" or time.monotonic() > deadline:
            break
    assert (code, path) == (0, "AT-REST"), err
    # The session grows: its log changes, no directory does.
    grown = SessionLogWriter(
        home / "dsh", "__pycache__", CWD, created_at=hidden.created_at, seq=hidden.seq
    )
    grown.time, grown.turn_no = hidden.time, hidden.turn_no
    grown.turn("one more question", "one more answer")
    grown.flush()
    code, err, path = _probe(env)
    assert (code, path) == (0, "FULL"), err
    assert err.splitlines()[-1].startswith("2 sessions, 6 new events;"), err
    clean = _clean_run(tmp_path / "clean", home / "dsh")
    got = dump(home)
    assert got == clean
    assert "msg-__pycache__-5" in {e["name"] for e in got["knowledge"]}
