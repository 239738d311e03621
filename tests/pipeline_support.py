"""Shared by the in-process pipeline tests: run every owed job to completion, and read the
hypatia-lite store and the watermarks back."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memory.store.lite.store import LiteStore
from worker.pipeline import owe_consolidation
from worker.runner import InProcessRunner
from worker.watch import Watcher


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
