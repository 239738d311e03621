"""A ``run --once --jobs N`` child that has finished (or was handed no sessions) is on its way out
when the parent's SIGTERM that stops every child (``OnceChildren.stop``) may reach it: inside
``_child_main``'s last lines or multiprocessing's exit finalizers. It must leave quietly — that
printed a traceback under a run that said "running in one process" (the README's and
docs/running.md's `--jobs 4` block, on a small home)."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from dsh_memory_worker.worker.run.once_children import OnceChildren
from dsh_memory_worker.worker.settings import load_settings


def test_children_given_no_work_and_stopped_at_once_print_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("MEMORY_WORKER_CONFIG", raising=False)
    settings = load_settings(data_dir=tmp_path)
    for _ in range(5):  # the signal meets each child at another point of its way out
        children = OnceChildren(settings, "default", 4)
        children.assign([])  # one process does the work: every child returns at once
        children.stop()
        # 0, or (spawned children, when another thread runs in this process) ended by the
        # SIGTERM before they set their handlers: never 1, a stop raised on the way out
        assert {child.process.exitcode for child in children.children} <= {0, -signal.SIGTERM}
    err = capfd.readouterr().err
    assert "Traceback" not in err, err
    assert err == ""
