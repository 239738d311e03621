"""A withdrawal's repair that dies before any one of its store writes still forgets.

Two sessions are logged and consolidated in process (their summaries share one archive), then
the user rewinds the second turn of ``s-c1`` and the only turn of ``s-c2``. A clean
``memory-worker run --once`` retracts the withdrawn messages, regenerates the summary of
``s-c1`` and its work unit, retracts the summary of ``s-c2`` (nothing of it is left) and its
unit, and rewrites the archive; it is the reference, and counts its hypatia-lite writes. For
every write N of that run, the same state is run by a process that dies just before write N
(``os._exit``, like ``kill -9``), then once more: that run must exit 0 with a store equal to the
reference — no withdrawn canary anywhere, every kept one still there — whatever the point."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from canary_support import canary_reply, cli_env, consolidated_pair, dump_text, names
from crash_point_support import sweep
from model_server import ModelServer, model_server_fixture  # noqa: F401

pytestmark = pytest.mark.integration


def test_a_withdrawal_repair_that_dies_before_any_store_write_still_forgets(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, model_server: ModelServer
) -> None:
    model_server.responder = canary_reply
    work, snapshot = tmp_path / "work", tmp_path / "withdrawn"
    a, b, doomed = consolidated_pair(work, model_server, monkeypatch, ("s-c1", "s-c2"))
    assert len([n for n in names(work) if n.startswith("sum2-")]) == 1  # the shared archive
    _, withdrawn = a.rewind(doomed.user_seq)
    _, all_of_b = b.rewind(b.turns[0].user_seq)
    kept = a.kept(withdrawn)
    withdrawn += all_of_b
    assert all(canary in dump_text(work) for canary in withdrawn)  # until the run repairs
    shutil.copytree(work, snapshot)

    def clean_run(done: subprocess.CompletedProcess[str]) -> None:
        text = dump_text(work)
        assert [c for c in withdrawn if c in text] == []
        assert [c for c in kept if c not in text] == []
        assert done.returncode == 0 and "not finished" not in done.stderr

    points = sweep(
        work,
        snapshot,
        ["run", "--once"],
        cli_env(work, model_server),
        tmp_path / "writes.txt",
        clean_run,
    )
    writes = (tmp_path / "writes.txt").read_text().split()
    # Retracts four messages and two units, repairs one summary, retracts the other, rewrites
    # the archive.
    assert points >= 16
    assert not [n for n in names(work) if n.startswith("sum-s-c2-")]
    assert {"knowledge_delete", "knowledge_update", "statement_delete"} <= set(writes)
