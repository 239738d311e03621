"""A fork child read before its seed is complete converges on the clean run (issue 32, item 1).

DSH creates a seeded child log (header ``isSeeded: true``, ``parentSession``) with a verbatim copy
of the parent's events, then ``session/end-seed {inherited: true}``, then the child's own events;
a live follower may read it at any byte in between. The oracle is a clean run over the final logs
in a fresh home, never the worker's own rules: after a read cut inside the seed (inside a line of
a raw log, inside a zstd frame) and then the rest, the whole store dump must equal the clean
run's. Then the parent withdraws a message the child copied: ``verify-forgetting`` finds nothing.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import sys
from pathlib import Path
from typing import Any

import pytest
import zstandard
from canary_support import settings_for
from cli_fork import run_cli
from conftest import REPO
from fault_support import env, run_once
from model_server import ModelServer, model_server_fixture  # noqa: F401
from pipeline_support import dump, process

from dsh_memory_worker.worker.jobs import log_span as log_span_module
from dsh_memory_worker.worker.jobs.seed_repair import check_seeded_sessions
from dsh_memory_worker.worker.verify.run import verify
from dsh_memory_worker.worker.watch.scan_digest import ScanDigest

sys.path.insert(0, str(REPO / "benchmarks"))
from worker_dshgen import SessionLogWriter, conversation, embedded_runtime, session_dir

pytestmark = pytest.mark.integration

CWD = "/home/dev/picnic"
PARENT = "seed-parent"
CHILD = "seed-child"


def _fork(
    home: Path,
    parent: SessionLogWriter,
    parent_lines: list[bytes],
    sid: str = CHILD,
    parent_id: str = PARENT,
    depth: int = 1,
) -> tuple[list[bytes], int, SessionLogWriter]:
    """A subagent child of ``parent`` (whose log lines after its header are ``parent_lines``):
    its log lines (header first), the byte offset where its own part starts, and its writer."""
    header = {
        "type": "session",
        "version": 4,
        "id": sid,
        "createdAt": parent.time + 5,
        "cwd": CWD,
        "parentSession": parent_id,
        "isSeeded": True,
        "origin": "subagent",
        "delegationDepth": depth,
    }
    lines = [json.dumps(header, separators=(",", ":")).encode() + b"\n", *parent_lines]
    seed_end = sum(len(line) for line in lines)
    child = SessionLogWriter(home, sid, CWD, created_at=parent.created_at)
    child.path.unlink()  # the writer's own header is not the fork's
    child.seq, child.time, child.turn_no = parent.seq, parent.time + 6, parent.turn_no
    child.event("session/end-seed", {"inherited": True})
    for i in range(3):
        turn = child.turn(
            f"{sid} question {i}: which blanket fits", f"{sid} answer {i}: the red one"
        )
        if i == 0:
            child.title(f"{sid} blankets", turn.user_seq)  # its own title, after its parent's
    lines += [line.encode() + b"\n" for line in child._pending]
    child._pending.clear()
    return lines, seed_end, child


def _child_lines(home: Path, parent: SessionLogWriter) -> tuple[list[bytes], int]:
    """The child's log lines (header first) and the byte offset where its own part starts."""
    lines, seed_end, _child = _fork(home, parent, parent.path.read_bytes().splitlines(True)[1:])
    return lines, seed_end


def _write(path: Path, lines: list[bytes], compressed: bool) -> None:
    """The log as DSH persists it: raw lines, or zstd with the header in a frame of its own and
    the rest in one frame of one block per line (so a torn frame still decodes line by line)."""
    if not compressed:
        path.write_bytes(b"".join(lines))
        return
    header = zstandard.ZstdCompressor(write_checksum=True).compress(lines[0])
    obj = zstandard.ZstdCompressor(write_checksum=True).compressobj()
    body = b"".join(
        obj.compress(line) + obj.flush(zstandard.COMPRESSOBJ_FLUSH_BLOCK) for line in lines[1:]
    )
    path.write_bytes(header + body + obj.flush())


def _home(root: Path, compressed: bool) -> tuple[Path, bytes, int, SessionLogWriter]:
    """Parent and child under ``root/dsh``; the child's final bytes and where its seed ends."""
    home = root / "dsh"
    parent = conversation(home, PARENT, CWD, 4, title="Picnic plans")
    lines, seed_end = _child_lines(home, parent)
    directory = session_dir(home, CHILD, CWD)
    name = "session.v4.jsonl.zstd" if compressed else "session.v4.jsonl"
    for stale in directory.glob("session*"):
        stale.unlink()
    path = directory / name
    _write(path, lines, compressed)
    data = path.read_bytes()
    if compressed:  # the seed ends inside the second frame: cut anywhere in its bytes
        header_frame = len(zstandard.ZstdCompressor(write_checksum=True).compress(lines[0]))
        seed_end = header_frame + (len(data) - header_frame) * 3 // 4
    return path, data, seed_end, parent


def _clean(root: Path, final: Path) -> dict[str, Any]:
    shutil.copytree(final, root / "dsh")
    runtime = embedded_runtime(root, force_idle=True)
    try:
        process(runtime, consolidation=False)
    finally:
        runtime.close()
    return dump(root)


@pytest.mark.parametrize("compressed", [False, True], ids=["raw", "zstd"])
@pytest.mark.parametrize("fraction", [0.2, 0.55, 0.97])
@pytest.mark.parametrize("idle", [True, False], ids=["once", "follow"])
def test_a_child_read_inside_its_seed_converges_on_the_clean_run(
    tmp_path: Path, compressed: bool, fraction: float, idle: bool
) -> None:
    path, data, seed_end, _parent = _home(tmp_path / "live", compressed)
    header_end = data.index(b"\n") + 1 if not compressed else 0
    cut = max(header_end + 1, int(seed_end * fraction))
    path.write_bytes(data[:cut])
    runtime = embedded_runtime(tmp_path / "live", force_idle=idle)
    try:
        process(runtime, consolidation=False)
        path.write_bytes(data)
        process(runtime, consolidation=False)
    finally:
        runtime.close()
    if not idle:  # the follower's last turn closes when it goes idle: as a run --once does
        runtime = embedded_runtime(tmp_path / "live", force_idle=True)
        try:
            process(runtime, consolidation=False)
        finally:
            runtime.close()
    clean = _clean(tmp_path / "clean", tmp_path / "live" / "dsh")
    got = dump(tmp_path / "live")
    child = sorted(e["name"] for e in got["knowledge"] if e["name"].startswith(f"msg-{CHILD}-"))
    assert child == [f"msg-{CHILD}-{n}" for n in range(6)]
    assert got == clean


def test_a_seeded_message_the_parent_withdraws_leaves_no_byte(tmp_path: Path) -> None:
    path, data, seed_end, parent = _home(tmp_path, compressed=False)
    path.write_bytes(data[: seed_end * 97 // 100])
    runtime = embedded_runtime(tmp_path, force_idle=True)
    try:
        process(runtime, consolidation=False)
        path.write_bytes(data)
        process(runtime, consolidation=False)
        # The parent withdraws its last turn; the child's copy is the parent's, not its own.
        parent.rewind(parent.surface[-2])
        parent.flush()
        process(runtime, consolidation=False)
        report = verify(runtime, "default")
    finally:
        runtime.close()
    assert [leak.line() for leak in report.leaks] == []
    assert report.sources.withdrawn_count == 2
    withdrawn = f"user 3 of {PARENT}".encode()
    for file in (tmp_path / "lite").rglob("*"):
        if file.is_file():
            assert withdrawn not in file.read_bytes(), file


def _older_worker(patch: pytest.MonkeyPatch) -> None:
    """The worker as it was before the fix: a seeded log is recorded whatever it shows, and
    ``log_span`` finds nothing wrong."""
    patch.setattr(ScanDigest, "seed_incomplete", lambda _self, _header: False)
    patch.setattr(log_span_module, "relog_if_partial", lambda *_args: False)


@pytest.mark.parametrize("older_worker_saw", ["the seed cut", "the whole log"])
def test_a_child_an_older_worker_stored_from_its_seed_is_repaired_by_the_next_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, older_worker_saw: str
) -> None:
    """A home written before the fix (a child recorded, and logged, while its seed was
    incomplete) is stored right by the next ``run --once``: the parent's messages leave the
    child's entries and the child's own are written."""
    path, data, seed_end, parent = _home(tmp_path / "live", compressed=False)
    path.write_bytes(data[: seed_end * 97 // 100])
    with monkeypatch.context() as old:  # the worker before the fix records an incomplete seed
        _older_worker(old)
        runtime = embedded_runtime(tmp_path / "live", force_idle=True)
        try:
            process(runtime, consolidation=False)
            wrong = {e["name"] for e in dump(tmp_path / "live")["knowledge"]}
            assert f"msg-{CHILD}-7" in wrong  # the parent's messages, under the child's names
            path.write_bytes(data)
            if older_worker_saw == "the whole log":
                process(runtime, consolidation=False)
        finally:
            runtime.close()
    done = run_once(tmp_path / "live")
    assert done.returncode == 0, done.stderr
    clean = _clean(tmp_path / "clean", tmp_path / "live" / "dsh")
    assert dump(tmp_path / "live") == clean
    titles = []
    for home in ("live", "clean"):
        with sqlite3.connect(tmp_path / home / "data" / "state.db") as conn:
            titles.append(
                conn.execute(
                    "SELECT last_title_seq, title_text FROM sessions WHERE session_id = ?",
                    (CHILD,),
                ).fetchone()
            )
            if home == "live":
                rows = conn.execute(
                    "SELECT outcome FROM audit WHERE action = 'seed-check' AND session_id = ?",
                    (CHILD,),
                ).fetchall()
    assert rows == [("relogged",)]
    assert titles[0] == titles[1] == (32, f"{CHILD} blankets")  # its own, not its parent's
    # The parent withdraws its last turn, which the older worker had stored as the child's.
    parent.rewind(parent.surface[-2])
    parent.flush()
    assert run_once(tmp_path / "live").returncode == 0
    root = tmp_path / "live"
    found = run_cli(
        ["verify-forgetting", "--dsh-home", str(root / "dsh")], env=env(root), timeout=300
    )
    assert found.returncode == 0, found.stdout + found.stderr
    withdrawn = f"user 3 of {PARENT}".encode()
    for file in (root / "lite").rglob("*"):
        if file.is_file():
            assert withdrawn not in file.read_bytes(), file


def test_a_grandchild_read_after_its_parents_seed_mark_waits_for_its_own(tmp_path: Path) -> None:
    """A grandchild's copy holds its parent's ``end-seed {inherited: true}`` too: a read that
    ends after that one and before the grandchild's own takes nothing as the grandchild's."""
    home = tmp_path / "live" / "dsh"
    parent = conversation(home, PARENT, CWD, 2, title="Picnic plans")
    lines, _seed_end, child = _fork(home, parent, parent.path.read_bytes().splitlines(True)[1:])
    _write(child.path, lines, compressed=False)
    grand = "seed-grandchild"
    g_lines, g_seed_end, g_writer = _fork(home, child, lines[1:], grand, CHILD, depth=2)
    g_path = g_writer.path
    data = b"".join(g_lines)
    g_path.write_bytes(data[: g_seed_end - 40])  # the child's own turns, part of the last line
    runtime = embedded_runtime(tmp_path / "live", force_idle=True)
    try:
        process(runtime, consolidation=False)
        assert not [e for e in dump(tmp_path / "live")["knowledge"] if grand in e["name"]]
        g_path.write_bytes(data)
        process(runtime, consolidation=False)
    finally:
        runtime.close()
    clean = _clean(tmp_path / "clean", home)
    got = dump(tmp_path / "live")
    mine = sorted(e["name"] for e in got["knowledge"] if e["name"].startswith(f"msg-{grand}-"))
    assert mine == [f"msg-{grand}-{n}" for n in range(6)]
    assert got == clean


def test_a_child_an_older_worker_consolidated_is_repaired_with_its_summaries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, model_server: ModelServer
) -> None:
    """The older worker also consolidated the parent's messages as the child's: the summaries
    (and their share of the archives) go with the entries, and after the next start's check the
    messages, nodes and summaries are a clean, consolidated run's."""
    model_server.echo = True
    settings = settings_for(model_server, monkeypatch)
    path, data, seed_end, _parent = _home(tmp_path / "live", compressed=False)
    path.write_bytes(data[: seed_end * 97 // 100])
    with monkeypatch.context() as old:
        _older_worker(old)
        runtime = embedded_runtime(tmp_path / "live", force_idle=True, **settings)
        try:
            process(runtime)
            path.write_bytes(data)
            process(runtime)
        finally:
            runtime.close()
    assert any(e["name"].startswith(f"sum-{CHILD}-") for e in dump(tmp_path / "live")["knowledge"])
    runtime = embedded_runtime(tmp_path / "live", force_idle=True, **settings)
    try:
        assert check_seeded_sessions(runtime, "default") == [CHILD]
        process(runtime)
        assert check_seeded_sessions(runtime, "default") == []  # checked once
    finally:
        runtime.close()
    shutil.copytree(tmp_path / "live" / "dsh", tmp_path / "clean" / "dsh")
    runtime = embedded_runtime(tmp_path / "clean", force_idle=True, **settings)
    try:
        process(runtime)
    finally:
        runtime.close()
    # Archives batch summaries as they come (``cascade_batch_size``): the one the repair
    # regenerated without the child's old summary holds the parent's alone, where a clean run
    # batched both; everything else is the clean run's.
    live, clean = (
        _without_archives(dump(tmp_path / "live")),
        _without_archives(dump(tmp_path / "clean")),
    )
    assert any(e["name"].startswith(f"sum-{CHILD}-25-") for e in live["knowledge"])
    assert live == clean


def _without_archives(found: dict[str, Any]) -> dict[str, Any]:
    def archive(name: str) -> bool:
        return name.startswith("sum") and name.split("-")[0][3:].isdigit()

    return {
        "knowledge": [e for e in found["knowledge"] if not archive(e["name"])],
        "statements": [s for s in found["statements"] if not archive(s["head"])],
    }


def test_a_fork_of_a_fresh_subagent_is_logged(tmp_path: Path) -> None:
    """A subagent that was not itself a fork (a fresh one, ``isSeeded: false``, depth 1) has
    forks of depth 2 that hold one ``end-seed {inherited: true}`` marker, not two: their seed
    has ended at that marker, written when the child was created (its time is not older than
    the header's ``createdAt``), and the child is logged."""
    home = tmp_path / "live" / "dsh"
    parent = conversation(home, PARENT, CWD, 2)
    lines, _seed_end, child = _fork(
        home, parent, parent.path.read_bytes().splitlines(True)[1:], depth=2
    )
    _write(child.path, lines, compressed=False)
    runtime = embedded_runtime(tmp_path / "live", force_idle=True)
    try:
        process(runtime, consolidation=False)
    finally:
        runtime.close()
    mine = sorted(e["name"] for e in dump(tmp_path / "live")["knowledge"] if CHILD in e["name"])
    assert mine == [f"msg-{CHILD}-{n}" for n in range(6)] + [f"session-{CHILD}"]
