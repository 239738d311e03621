"""A ``reconsolidate --replace`` that dies before any one of its store writes converges.

The three sessions of the rewrite tests are consolidated with model A; a clean run of
``memory-worker reconsolidate s-2 --replace --wait`` with model B (s-2: a summary, its two work
units, and the archive it shares with s-1) is the reference, and counts its hypatia-lite writes.
Then, for every write N of that run, a copy of the A store is rewritten by a process that dies
just before write N (``os._exit``, like ``kill -9``: no ``finally``, no
lease released; ``tests/support/crash_points``), and one more run must finish: exit 0 and a store
equal to the reference, entry for entry and edge for edge — no unit, archive or edge of A's pass
left behind, whatever the point. (Before the repair deleted a work unit before its edges, and an
archive's text before its member edges, a crash between the two left an entry no later run could
reach.)"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO
from model_server import ModelServer, model_server_fixture  # noqa: F401
from pipeline_support import dump
from rewrite_support import BIN, consolidate_with_a, env_for, scripted, write_sessions

pytestmark = pytest.mark.integration

CRASH_POINTS = REPO / "tests" / "support" / "crash_points"


def _rewrite(root: Path, server: ModelServer, **extra: str) -> subprocess.CompletedProcess[str]:
    env = env_for(root, server, "model-b", **extra)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(CRASH_POINTS),
                                                      env.get("PYTHONPATH", "")]))
    return subprocess.run(
        [str(BIN / "memory-worker"), "reconsolidate", "s-2", "--replace", "--wait"],
        env=env, capture_output=True, text=True, timeout=300)


def _copy(base: Path, root: Path) -> Path:
    """A copy of the home, state and store under ``base``; the shelf registry names shelves by
    absolute path, so the copy's registry is pointed at the copy's shelf."""
    shutil.copytree(base, root)
    registry = root / "lite" / "shelves.json"
    registry.write_text(registry.read_text().replace(str(base / "lite"), str(root / "lite")))
    return root


def _differences(got: dict[str, Any], want: dict[str, Any]) -> tuple[dict[str, str], ...]:
    """Entries and edges that are extra (``+``), missing (``-``) or changed (``~``)."""
    out = []
    for rows, key in (("knowledge", "name"), ("statements", "triple")):
        have = {row[key]: row for row in got[rows]}
        need = {row[key]: row for row in want[rows]}
        out.append({name: "+" if name not in need else "-" if name not in have else "~"
                    for name in sorted(have.keys() | need.keys())
                    if have.get(name) != need.get(name)})
    return tuple(out)


def test_a_rewrite_that_dies_before_any_store_write_converges(
    tmp_path: Path, model_server: ModelServer
) -> None:
    model_server.responder = scripted
    base = tmp_path / "a"
    write_sessions(base)
    consolidate_with_a(base, model_server)

    reference = _copy(base, tmp_path / "reference")
    counted = tmp_path / "writes.txt"
    clean = _rewrite(reference, model_server, MEMORY_WORKER_TEST_CRASH_COUNT=str(counted))
    assert clean.returncode == 0, clean.stderr
    expected: dict[str, Any] = dump(reference)
    writes = counted.read_text().split()
    # The rewrite deletes A's units, updates summaries and archives, writes B's units and edges.
    assert {"knowledge_delete", "knowledge_update", "statement_delete"} <= set(writes)
    assert clean.stdout == ("s-2: rewrote 1 summary, 1 archive, 1 work unit; removed 2 entries "
                            "the new pass no longer produces\n")
    assert dump(base) != expected  # the copies are the A store, untouched by the runs

    for point in range(1, len(writes) + 1):
        root = _copy(base, tmp_path / f"crash-{point}")
        crashed = _rewrite(root, model_server, MEMORY_WORKER_TEST_CRASH_AT=str(point))
        assert crashed.returncode == 137, (point, crashed.stderr[-2000:])
        again = _rewrite(root, model_server)
        assert again.returncode == 0, (point, again.stderr[-2000:])
        got, where = dump(root), f"died before write {point} ({writes[point - 1]})"
        assert _differences(got, expected) == ({}, {}), where
        assert got == expected, where
        shutil.rmtree(root)
