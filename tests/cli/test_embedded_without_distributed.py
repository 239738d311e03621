"""Every embedded command runs without the ``distributed`` extra; only ``daemon``, ``worker`` and
the ``--workers`` options need it, and each says so in one line naming
``dsh-memory-worker[distributed]``, exit 2.

The base install is simulated by ``tests/support/no_distributed`` (first on PYTHONPATH): Celery,
kombu and psycopg cannot be imported there, in the command's process or its children.
``.ci/base_install_check.sh`` runs the same commands from a wheel installed with no extra.

* structurally: every module of ``dsh_memory_worker`` and ``hypatia_lite`` imports there, but
  the ones that are the distributed mode's own (the Celery app and its two aliases, the
  PostgreSQL VACUUM helpers);
* behaviourally: ``reconsolidate --replace`` (``--dry-run``, ``--wait``, ``--stale``, one
  session, ``--all``, queued) and ``relog`` (``--dry-run``, ``--wait``, queued) against a real
  model server, ``run --once`` picking the queued requests up, and the refusals.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from cli_fork import run_cli
from conftest import REPO
from model_server import ModelServer, model_server_fixture  # noqa: F401
from rewrite_support import (
    consolidate_with_a,
    derived,
    env_for,
    scripted,
    write_sessions,
)

pytestmark = pytest.mark.integration

BLOCKER = REPO / "tests" / "support" / "no_distributed"
#: the modules that are the distributed mode's own, and nothing else
DISTRIBUTED_ONLY = {
    "dsh_memory_worker.celery",
    "dsh_memory_worker.worker.run.tasks",
    "dsh_memory_worker.worker.tasks",
    "hypatia_lite.pg.purge",
    "hypatia_lite.pg.vacuum",
}
EXTRA = "dsh-memory-worker[distributed]"


def _blocked_env(env: dict[str, str]) -> dict[str, str]:
    return {**env, "PYTHONPATH": str(BLOCKER)}


def test_only_the_distributed_modules_need_celery_kombu_or_psycopg() -> None:
    probe = (
        "import importlib, pkgutil, sys\n"
        "bad = []\n"
        "names = ['dsh_memory_worker', 'dsh_memory_worker.celery']\n"
        "for pkg in ('hypatia_lite', 'dsh_memory_worker.memory', 'dsh_memory_worker.worker'):\n"
        "    for info in pkgutil.walk_packages(importlib.import_module(pkg).__path__, pkg + '.'):\n"
        "        if '.migrations' not in info.name and not info.name.endswith('.__main__'):\n"
        "            names.append(info.name)\n"
        "for name in names:\n"
        "    try:\n"
        "        importlib.import_module(name)\n"
        "    except ImportError as exc:\n"
        "        bad.append(name)\n"
        "print('\\n'.join(sorted(bad)))\n"
        "assert sys.modules.get('celery') is None and sys.modules.get('psycopg') is None\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        env=_blocked_env(dict(os.environ)),
    )
    assert done.returncode == 0, done.stderr
    assert set(done.stdout.split()) == DISTRIBUTED_ONLY


def _mw(env: dict[str, str], root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``memory-worker ARGS`` with the blocker first on PYTHONPATH, forked from the pre-imported
    parent of ``run_cli`` (which imports none of the blocked packages: the blocker refuses to run
    if it did), the blocker run at the child's start-up as a fresh interpreter runs it."""
    done = run_cli(
        list(args),
        env={k: v for k, v in env.items() if k != "PYTHONPATH"},
        cwd=root,
        timeout=300,
        site_dir=BLOCKER,
    )
    both = done.stdout + done.stderr
    assert "Traceback" not in both and "halted" not in both, (args, both)
    return done


def test_every_rewrite_form_runs_without_the_distributed_extra(
    tmp_path: Path, model_server: ModelServer
) -> None:
    model_server.responder = scripted
    ends = write_sessions(tmp_path)
    consolidate_with_a(tmp_path, model_server)
    env = env_for(tmp_path, model_server, "model-b")
    summary = {sid: f"sum-{sid}-0-{ends[sid]}" for sid in ends}

    done = _mw(env, tmp_path, "reconsolidate", "--replace", "--all", "--dry-run")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1].startswith("dry run: 5 model calls, ~")
    assert derived(tmp_path)[summary["s-1"]].startswith("- ALPHA")

    done = _mw(env, tmp_path, "reconsolidate", "s-1", "--replace", "--wait")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("s-1: rewrote 1 summary, 1 archive, 1 work unit")
    assert derived(tmp_path)[summary["s-1"]].startswith("- BRAVO")

    done = _mw(env, tmp_path, "reconsolidate", "--replace", "--stale", "--wait")
    assert done.returncode == 0, done.stderr
    assert [line.split(":")[0] for line in done.stdout.splitlines()] == ["s-1", "s-2", "s-3"]
    assert all(derived(tmp_path)[summary[sid]].startswith("- BRAVO") for sid in ends)

    # Queued (no broker in this install): recorded, and `run --once` carries it out.
    done = _mw(env, tmp_path, "reconsolidate", "--replace", "--all", "--force")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == (
        "s-1: queued — recorded: `memory-worker run` picks it up (or rerun with --wait)"
    )
    calls = len(model_server.requests)
    done = _mw(env, tmp_path, "run", "--once")
    assert done.returncode == 0, done.stderr
    assert len(model_server.requests) - calls >= 3  # three summaries rewritten, at least
    done = _mw(env, tmp_path, "reconsolidate", "--replace", "--all", "--dry-run")
    assert done.stdout.splitlines()[-1].startswith("dry run: 0 model calls")

    for args in (
        ["relog", "--all", "--dry-run"],
        ["relog", "--all", "--wait"],
        ["relog", "s-2"],
        ["reconsolidate", "--all", "--wait"],
        ["status"],
        ["verify-forgetting"],
    ):
        done = _mw(env, tmp_path, *args)
        assert done.returncode == 0, (args, done.stdout, done.stderr)

    for args, command in (
        (["daemon"], "daemon"),
        (["worker"], "worker"),
        (["relog", "--all", "--workers"], "relog --workers"),
        (["reconsolidate", "--replace", "--all", "--workers", "--wait"], "reconsolidate --workers"),
    ):
        done = _mw(env, tmp_path, *args)
        assert done.returncode == 2, (args, done.stdout, done.stderr)
        assert done.stdout == ""
        assert done.stderr.splitlines() == [
            f"memory-worker {command}: celery, kombu not installed; install the distributed "
            f"extra: pip install '{EXTRA}'"
        ]
