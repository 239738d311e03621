"""Shared by the in-process pipeline tests: run every owed job to completion, and read the
hypatia-lite store and the watermarks back."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from dsh_memory_worker.worker.jobs.runtime import owe_consolidation
from dsh_memory_worker.worker.run.runner import InProcessRunner
from dsh_memory_worker.worker.watch.watcher import Watcher
from hypatia_lite.store import LiteStore


def process(runtime: Any, *, consolidation: bool = True) -> InProcessRunner:
    """Scan the DSH home, reconcile and drain every job owed, in process: log spans, session
    nodes and (unless ``consolidation`` is False) the owed consolidation and its cascade."""
    runner = InProcessRunner(runtime, keep_results=True)
    if consolidation:
        owe_consolidation(runtime, runner.submit)
    watcher = Watcher(runtime, runner.submit)
    watcher.poll_once()
    watcher.reconcile()
    runner.drain(timeout_s=60)
    return runner


def cli_env(root: Path) -> dict[str, str]:
    """The environment of a ``memory-worker`` subprocess on embedded defaults under ``root``
    (state in ``root/data``, hypatia-lite home ``root/lite``), free of the caller's settings."""
    env = {
        **os.environ,
        "MEMORY_WORKER_DATA_DIR": str(root / "data"),
        "HYPATIA_LITE_HOME": str(root / "lite"),
        "COLUMNS": "200",
    }
    for name in (
        "MEMORY_WORKER_LITE_HOME",
        "MEMORY_WORKER_STATE_URL",
        "MEMORY_WORKER_CONFIG",
        "MEMORY_WORKER_MODEL_ROUTES",
    ):
        env.pop(name, None)
    return env


def dump(root: Path) -> dict[str, Any]:
    """The whole ``default`` shelf of the hypatia-lite home ``root / "lite"``."""
    with LiteStore("default", home=root / "lite") as store:
        return store.dump()


def entries(root: Path) -> dict[str, dict[str, Any]]:
    """Every knowledge entry's content, by name."""
    return {row["name"]: row["content"] for row in dump(root)["knowledge"]}


def names(root: Path) -> set[str]:
    return {row["name"] for row in dump(root)["knowledge"]}


def progress(runtime: Any, sid: str) -> Any:
    """The ``default`` shelf's progress row (watermarks) of session ``sid``."""
    with runtime.state.transaction() as repos:
        return repos.progress.get("default", sid)
