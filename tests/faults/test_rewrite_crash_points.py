"""A ``reconsolidate --replace`` that dies before any one of its store writes converges.

The three sessions of the rewrite tests are consolidated with model A; a clean run of
``memory-worker reconsolidate s-2 --replace --wait`` with model B (s-2: a summary, its two work
units, and the archive it shares with s-1) is the reference, and counts its hypatia-lite writes.
Then, for every write N of that run, the A store is rewritten by a process that dies just before
write N (``os._exit``, like ``kill -9``: no ``finally``, no lease released;
``tests/support/crash_points``), and one more run must finish: exit 0 and a store equal to the
reference, entry for entry and edge for edge — no unit, archive or edge of A's pass left behind,
whatever the point. (Before the repair deleted a work unit before its edges, and an archive's
text before its member edges, a crash between the two left an entry no later run could reach.)"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from crash_point_support import sweep
from model_server import ModelServer, model_server_fixture  # noqa: F401
from pipeline_support import dump
from rewrite_support import consolidate_with_a, env_for, scripted, write_sessions

pytestmark = pytest.mark.integration


def test_a_rewrite_that_dies_before_any_store_write_converges(
    tmp_path: Path, model_server: ModelServer
) -> None:
    model_server.responder = scripted
    work, snapshot = tmp_path / "work", tmp_path / "a-store"
    write_sessions(work)
    consolidate_with_a(work, model_server)
    before = dump(work)
    shutil.copytree(work, snapshot)

    def clean_run(done: subprocess.CompletedProcess[str]) -> None:
        assert done.stdout == (
            "s-2: rewrote 1 summary, 1 archive, 1 work unit; removed 2 "
            "entries the new pass no longer produces\n"
        )
        assert dump(work) != before

    points = sweep(
        work,
        snapshot,
        ["reconsolidate", "s-2", "--replace", "--wait"],
        env_for(work, model_server, "model-b"),
        tmp_path / "writes.txt",
        clean_run,
    )
    # It deletes A's two units, updates the summary and the archive, writes B's unit and edges.
    assert points >= 10
    writes = (tmp_path / "writes.txt").read_text().split()
    assert {"knowledge_delete", "knowledge_update", "statement_delete"} <= set(writes)
