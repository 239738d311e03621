"""``verify-forgetting`` over real stores: the demo fixtures (the V4 rewind withdraws two messages
read at first pass, so they were never written) verify clean over lite, CLI→hypatia-lite and
MCP→hypatia-lite; an entry planted by hand with ``hypatia-lite knowledge-create`` holding a
withdrawn message's text is named exactly, through the adapter and in the shelf's bytes; a
withdrawal that arrives after its entries were written is a leak until the worker retracts it,
and leaves nothing after; a forgotten session leaves nothing once forgotten (names, text, shelf
bytes, state database); the state database's text columns are searched on PostgreSQL too."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from canary_support import SessionLogWriter, embedded_runtime
from cli_fork import run_cli
from pipeline_support import process
from state_db_support import throwaway_pg_database

from dsh_memory_worker.worker.commands.demo_home import lay_out_fixtures
from dsh_memory_worker.worker.jobs.forget import ACTION_FORGET, forget_session
from dsh_memory_worker.worker.jobs.retract import with_session_lease
from dsh_memory_worker.worker.verify.run import Report, verify

pytestmark = pytest.mark.integration

BIN = Path(sys.executable).parent
FIXTURES = Path(__file__).parents[1] / "fixtures" / "dsh"
V4 = "7d3c1f0e-2b6a-4c59-9e1d-5a8f3b2c4d10"
WITHDRAWN_TEXT = "The session is read-only, so I cannot edit files now."
PHRASES = ["the session is read only", "so i cannot edit files", "i cannot edit files now"]
NO_SOURCE = "no legitimate source: not an entry the worker derives from a kept message"
TRANSPORTS = {
    "lite": {},
    "cli": {"store_transport": "cli", "store_binary": str(BIN / "hypatia-lite")},
    "mcp": {"store_transport": "mcp", "store_binary": str(BIN / "hypatia-lite")},
}


def _demo(root: Path, **settings: Any) -> Any:
    lay_out_fixtures(FIXTURES, root / "dsh")
    runtime = embedded_runtime(root, force_idle=True, **settings)
    process(runtime, consolidation=False)
    return runtime


def _lite(root: Path, *args: str) -> None:
    env = {**os.environ, "HYPATIA_LITE_HOME": str(root / "lite")}
    done = subprocess.run(
        [str(BIN / "hypatia-lite"), *args], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr


def _cli(root: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("MEMORY_WORKER_")}
    base.update(
        {
            "MEMORY_WORKER_DSH_HOME": str(root / "dsh"),
            "MEMORY_WORKER_DATA_DIR": str(root / "data"),
            "MEMORY_WORKER_LITE_HOME": str(root / "lite"),
            "COLUMNS": "250",
            **env,
        }
    )
    return run_cli(["verify-forgetting", *args], env=base, timeout=300)


def _where(report: Report) -> list[tuple[str, str, str, str]]:
    return [(leak.where, leak.via, leak.message, leak.fragment) for leak in report.leaks]


def _shelf_file_leaks(report: Report, root: Path) -> set[tuple[str, str]]:
    shelf = root / "lite" / "default"
    return {
        (Path(leak.where.removeprefix("file ")).name, leak.fragment)
        for leak in report.leaks
        if leak.where.startswith(f"file {shelf}")
    }


@pytest.mark.parametrize("transport", sorted(TRANSPORTS))
def test_clean_demo_store_then_a_planted_entry_is_named(tmp_path: Path, transport: str) -> None:
    _demo(tmp_path).close()
    runtime = embedded_runtime(tmp_path, **TRANSPORTS[transport])
    try:
        clean = verify(runtime, "default")
        assert clean.leaks == []
        assert [m.name for m in clean.sources.messages] == [f"msg-{V4}-4", f"msg-{V4}-5"]
        assert (clean.entries, clean.statements) == (28, 19)
        assert clean.summary() == (
            f"0 leaks in 2 withdrawn messages and 0 forgotten sessions "
            f"({28 + 19 + len(clean.places)} places searched)"
        )
        shelf_db = tmp_path / "lite" / "default" / "hypatia.sqlite"
        state_db = tmp_path / "data" / "state.db"
        for place in (
            "full-text search",
            f"file {shelf_db}",
            f"file {state_db}",
            "state sessions.title_text",
            "state audit.detail",
        ):
            assert place in clean.places

        _lite(tmp_path, "knowledge-create", "planted-note", "-d", f"Note: {WITHDRAWN_TEXT}")
        found = verify(runtime, "default")
    finally:
        runtime.close()
    name = f"msg-{V4}-5"
    assert _where(found)[:3] == [("entry planted-note", "query", name, p) for p in PHRASES]
    assert {leak.seq for leak in found.leaks} == {49}
    assert {leak.why for leak in found.leaks} == {"withdrawn"}
    in_bytes = _shelf_file_leaks(found, tmp_path)
    assert {fragment for _, fragment in in_bytes} == set(PHRASES)
    assert {file for file, _ in in_bytes} <= {"hypatia.sqlite", "hypatia.sqlite-wal"}
    assert len(found.leaks) == 3 + len(in_bytes)  # nothing in the state database


def test_command_prints_one_line_or_each_leak_and_exits_by_outcome(tmp_path: Path) -> None:
    _demo(tmp_path).close()
    clean = _cli(tmp_path)
    assert clean.returncode == 0, clean.stderr
    counted = json.loads(_cli(tmp_path, "--json").stdout)
    assert counted["leaks"] == [] and counted["withdrawn_messages"] == 2
    assert clean.stdout == (
        f"0 leaks in 2 withdrawn messages and 0 forgotten sessions "
        f"({counted['places_searched']} places searched)\n"
    )

    _lite(tmp_path, "knowledge-create", "planted-note", "-d", WITHDRAWN_TEXT)
    leaked = _cli(tmp_path)
    assert leaked.returncode == 1, leaked.stderr
    lines = leaked.stdout.splitlines()
    assert lines[0] == (
        f"leak: entry planted-note (query): session {V4}, msg-{V4}-5 "
        f'(seq 49, withdrawn): "the session is read only" — not explained: '
        f"{NO_SOURCE}"
    )
    assert all(line.startswith("leak: ") for line in lines)
    assert re.fullmatch(
        rf"{len(lines)} leaks in 2 withdrawn messages and 0 forgotten sessions "
        r"\(\d+ places searched\)",
        leaked.stderr.strip().splitlines()[-1],
    )
    report = json.loads(_cli(tmp_path, "--json").stdout)
    assert report["leaks"][0] == {
        "where": "entry planted-note",
        "via": "query",
        "session_id": V4,
        "message": f"msg-{V4}-5",
        "seq": 49,
        "why": "withdrawn",
        "fragment": "the session is read only",
        "unexplained": NO_SOURCE,
    }

    broken = _cli(
        tmp_path, MEMORY_WORKER_STORE_TRANSPORT="cli", MEMORY_WORKER_STORE_BINARY="no-such-hypatia"
    )
    assert broken.returncode == 2
    assert broken.stdout == ""
    assert broken.stderr.strip().splitlines() == [
        "memory-worker: cannot open the store: the cli transport's binary 'no-such-hypatia' "
        "was not found (set store_binary / MEMORY_WORKER_STORE_BINARY)"
    ]


def test_a_late_withdrawal_is_a_leak_until_retracted_and_leaves_nothing_after(
    tmp_path: Path,
) -> None:
    log = SessionLogWriter(tmp_path / "dsh", "s-late", "/home/dev/lateproj")
    log.turn(
        "Keep the quartermaster flamingo rotation schedule handy",
        "Noted the quartermaster flamingo rotation schedule",
    )
    second = log.turn(
        "Then archive the marmalade lighthouse inventory tonight",
        "Archiving the marmalade lighthouse inventory tonight",
    )
    log.flush()
    runtime = embedded_runtime(tmp_path, force_idle=True)
    try:
        process(runtime, consolidation=False)
        log.rewind(second.user_seq)
        log.flush()  # the marker is in the log; the worker has not caught up
        pending = verify(runtime, "default")
        names = {(leak.where, leak.fragment) for leak in pending.leaks if leak.via == "query"}
        assert ("entry msg-s-late-2", "") in names and ("entry msg-s-late-3", "") in names
        assert ("entry msg-s-late-2", "then archive the marmalade lighthouse") in names
        assert {m.name for m in pending.sources.messages} == {"msg-s-late-2", "msg-s-late-3"}
        assert pending.sources.messages[0].fragments.terms == (
            ("lighthouse", "lighthous"),
            ("inventory", "inventori"),
            ("marmalade", "marmalad"),
        )

        process(runtime, consolidation=False)  # the retraction
        after = verify(runtime, "default")
    finally:
        runtime.close()
    assert _where(after) == []
    assert after.summary().startswith("0 leaks in 2 withdrawn messages and 0 forgotten sessions")


def test_a_forgotten_session_leaves_no_trace(tmp_path: Path) -> None:
    runtime = _demo(tmp_path)
    try:
        with runtime.state.transaction() as repos:  # marked, but nothing removed yet
            repos.sessions.set_forgotten(V4, True)
        marked = verify(runtime, "default")
        stale = {leak.where for leak in marked.leaks if leak.via == "query" and not leak.fragment}
        assert stale == {f"entry msg-{V4}-{n}" for n in (0, 1, 2, 3, 6, 7)} | {
            f"entry session-{V4}"
        } | {f"statement msg-{V4}-{n},belongTo,session-{V4}" for n in (0, 1, 2, 3, 6, 7)}
        with runtime.state.transaction() as repos:
            repos.sessions.set_forgotten(V4, False)

        with_session_lease(runtime, V4, "default", ACTION_FORGET, lambda ctx: forget_session(ctx))
        after = verify(runtime, "default")
    finally:
        runtime.close()
    assert _where(after) == []
    assert after.sources.forgotten == [V4]
    # its 8 messages, its title (seq 9) and its two compaction summaries (seq 32, 54)
    assert [m.seq for m in after.sources.messages if m.name == f"session-{V4}"] == [9, 32, 54]
    assert len([m for m in after.sources.messages if m.why == "forgotten"]) == 8 + 3
    assert after.summary() == (
        f"0 leaks in 0 withdrawn messages and 1 forgotten session "
        f"({after.place_count} places searched)"
    )


def test_state_text_columns_are_searched_on_postgresql(tmp_path: Path) -> None:
    from sqlalchemy import update

    from dsh_memory_worker.worker.state.models import SessionRow

    with throwaway_pg_database() as url:
        runtime = _demo(tmp_path, state_url=url)
        try:
            with runtime.state.transaction() as repos:
                repos.conn.execute(
                    update(SessionRow)
                    .where(SessionRow.session_id == V4)
                    .values(title_text=WITHDRAWN_TEXT)
                )
            found = verify(runtime, "default")
        finally:
            runtime.close()
    where = f"state sessions.title_text [session_id={V4}]"
    assert _where(found) == [(where, "query", f"msg-{V4}-5", p) for p in PHRASES]
    assert not any(place.startswith(f"file {tmp_path / 'data'}") for place in found.places)


def test_a_title_citing_a_withdrawn_prompt_is_checked_too(tmp_path: Path) -> None:
    log = SessionLogWriter(tmp_path / "dsh", "s-title", "/home/dev/titleproj")
    first = log.turn(
        "Plan the quartermaster flamingo migration for Tuesday", "Planning the migration"
    )
    log.title("Plan the quartermaster flamingo migration", first.user_seq)
    log.rewind(first.user_seq)  # DSH 0.2: the fallback title cites the withdrawn first prompt
    clean = log.turn("Describe the lighthouse keeper rota instead", "The rota has two shifts")
    log.title("Describe the lighthouse keeper rota", clean.user_seq)
    log.flush()
    runtime = embedded_runtime(tmp_path, force_idle=True)
    try:
        process(runtime, consolidation=False)
        report = verify(runtime, "default")
        planted = runtime.store("default")
        planted.knowledge_create(
            "planted-title", "Plan the quartermaster flamingo migration", embed=False
        )
        leaked = verify(runtime, "default")
    finally:
        runtime.close()
    derived = [m for m in report.sources.messages if m.name == "session-s-title"]
    assert [(m.seq, m.why, m.fragments.phrases) for m in derived] == [
        (
            first.turn_end_seq + 1,
            "derived from a withdrawn message",
            ("plan the quartermaster flamingo migration",),
        )
    ]
    assert _where(report) == []
    assert (
        "entry planted-title",
        "query",
        "session-s-title",
        "plan the quartermaster flamingo migration",
    ) in _where(leaked)
