"""Deleted means gone from the bytes, in hypatia-lite itself: ``knowledge-delete`` and
``statement-delete`` over the ``hypatia-lite`` CLI and over MCP (``hypatia-lite mcp``, scanned
while the server still holds the shelf open), a ``knowledge_update`` that replaces text, a purge
whose checkpoint another reader blocked (finished at the next opportunity, in this process or
the next one to open the shelf), and a shelf written before secure deletion (cleaned on its
first open). Every check greps the raw bytes of ``hypatia.sqlite``, ``-wal`` and ``-shm``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from bytes_support import leaks, present, shelf_files, token
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from dsh_memory_worker.memory.store.base import EntryWrite
from hypatia_lite import db, purge
from hypatia_lite.sqlitelib import sqlite3
from hypatia_lite.store import LiteStore

BIN = Path(sys.executable).parent / "hypatia-lite"
pytestmark = pytest.mark.integration


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HYPATIA_LITE_")}
    return {**env, "HYPATIA_LITE_HOME": str(home)}


def _cli(home: Path, *argv: str) -> str:
    done = subprocess.run(
        [str(BIN), *argv], capture_output=True, text=True, env=_env(home), timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def _search(home: Path, query: str) -> list[str]:
    """The keys ``hypatia-lite search`` finds (it prints JSON rows, or ``No results found.``)."""
    out = _cli(home, "search", query)
    return [] if out == "No results found.\n" else [row["key"] for row in json.loads(out)]


def _filler(store: LiteStore, start: int, count: int) -> None:
    store.write_batch(
        [
            EntryWrite(f"msg-fill-{i}", f"filler message {i} about the weather " * 4, embed=False)
            for i in range(start, start + count)
        ]
    )


def test_cli_knowledge_delete_and_statement_delete(tmp_path: Path) -> None:
    home = tmp_path / "home"
    doomed, edge, kept = token("cli-doomed"), token("cli-edge"), token("cli-kept")
    with LiteStore(home=home) as store:
        _filler(store, 0, 200)
    _cli(
        home,
        "knowledge-create",
        "msg-cli-1",
        f"--data=question {doomed} here",
        "--tags",
        f"message,{doomed}",
        "--synonyms",
        doomed,
    )
    _cli(home, "statement-create", "msg-cli-1", "belongTo", "session-cli", f"--data=on {edge}")
    _cli(home, "knowledge-create", "msg-cli-2", f"--data=answer {kept} stays")
    with LiteStore(home=home) as store:
        _filler(store, 200, 200)  # the doomed rows are now in the middle of the shelf
    assert present(shelf_files(home), [doomed, edge, kept]) == {doomed, edge, kept}
    assert _search(home, doomed) == ["msg-cli-1"]

    assert _cli(home, "statement-delete", "msg-cli-1", "belongTo", "session-cli")
    assert _cli(home, "knowledge-delete", "msg-cli-1")
    assert _search(home, doomed) == []
    assert leaks(shelf_files(home), [doomed, edge]) == []
    assert present(shelf_files(home), [kept]) == {kept}


def _mcp(home: Path, body: Any) -> None:
    async def main() -> None:
        params = StdioServerParameters(
            command=str(BIN), args=["mcp"], env=_env(home), cwd=str(home.parent)
        )
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            with anyio.fail_after(60):
                await session.initialize()
                await body(session)

    anyio.run(main)


async def _ok(session: ClientSession, tool: str, **args: Any) -> Any:
    result = await session.call_tool(tool, args)
    assert not result.is_error, result.content
    return result.structured_content


def test_mcp_deletes_and_update_while_the_server_holds_the_shelf(tmp_path: Path) -> None:
    home = tmp_path / "home"
    doomed, edge, old, new, kept = (
        token(f"mcp-{n}") for n in ("doomed", "edge", "old", "new", "kept")
    )
    with LiteStore(home=home) as store:
        _filler(store, 0, 300)

    async def body(s: ClientSession) -> None:
        await _ok(
            s,
            "knowledge_create",
            name="msg-mcp-1",
            data=f"withdrawn {doomed} words",
            tags=["message"],
        )
        await _ok(
            s,
            "statement_create",
            head="msg-mcp-1",
            relation="belongTo",
            tail="session-mcp",
            data=f"edge {edge}",
        )
        await _ok(s, "knowledge_create", name="sum-mcp-1", data=f"summary {old} of it")
        await _ok(s, "knowledge_create", name="msg-mcp-2", data=f"kept {kept} words")
        assert present(shelf_files(home), [doomed, edge, old, kept]) == {doomed, edge, old, kept}
        await _ok(s, "statement_delete", head="msg-mcp-1", relation="belongTo", tail="session-mcp")
        await _ok(s, "knowledge_delete", name="msg-mcp-1")
        await _ok(s, "knowledge_update", name="sum-mcp-1", data=f"summary {new} regenerated")
        # The server process is still running and holds the shelf open.
        assert leaks(shelf_files(home), [doomed, edge, old]) == []
        assert present(shelf_files(home), [kept, new]) == {kept, new}
        found = await _ok(s, "search", query=old)
        assert json.dumps(found).count("sum-mcp-1") == 0

    _mcp(home, body)
    assert leaks(shelf_files(home), [doomed, edge, old]) == []


def test_a_checkpoint_blocked_by_a_reader_is_done_at_the_next_write(tmp_path: Path) -> None:
    home = tmp_path / "home"
    doomed, later = token("blocked-doomed"), token("blocked-later")
    store = LiteStore(home=home, embedder=None)
    _filler(store, 0, 100)
    store.knowledge_create("msg-b-1", f"withdrawn {doomed}")
    reader = sqlite3.connect(store.path / db.DB_FILE, isolation_level=None)
    reader.execute("BEGIN")
    assert reader.execute("SELECT count(*) FROM knowledge").fetchone()[0] == 101  # a snapshot
    try:
        assert store.knowledge_delete("msg-b-1")
        assert store.conn.checkpoint_owed  # the reader's snapshot kept the WAL
        owed = store.conn.execute("SELECT k FROM meta WHERE k = ?", (purge.OWED_CHECKPOINT,))
        assert owed.fetchall() == [(purge.OWED_CHECKPOINT,)]
        assert store.knowledge_get("msg-b-1") is None  # nothing waits: the delete is done
        # The old snapshot still reads the row: the WAL frames stay valid, nothing is lost.
        assert (
            reader.execute("SELECT count(*) FROM knowledge WHERE name = 'msg-b-1'").fetchone()[0]
            == 1
        )
    finally:
        reader.execute("COMMIT")
        reader.close()
    store.knowledge_create("msg-b-2", f"later {later}")  # the next write finishes the purge
    assert not store.conn.checkpoint_owed
    assert (
        store.conn.execute(
            "SELECT count(*) FROM meta WHERE k = ?", (purge.OWED_CHECKPOINT,)
        ).fetchone()[0]
        == 0
    )
    assert leaks(shelf_files(home), [doomed]) == []
    assert present(shelf_files(home), [later]) == {later}
    store.close()


def test_a_blocked_checkpoint_left_owed_is_done_by_the_next_process(tmp_path: Path) -> None:
    home = tmp_path / "home"
    doomed = token("owed-doomed")
    store = LiteStore(home=home, embedder=None)
    _filler(store, 0, 50)
    store.knowledge_create("msg-o-1", f"withdrawn {doomed}")
    reader = sqlite3.connect(store.path / db.DB_FILE, isolation_level=None)
    reader.execute("BEGIN")
    reader.execute("SELECT count(*) FROM knowledge").fetchone()
    store.knowledge_delete("msg-o-1")
    store.close()  # tries once more; the reader still blocks it
    assert present(shelf_files(home), [doomed]) == {doomed}  # still in the WAL's old frames
    reader.execute("COMMIT")
    # Another process opens the shelf (a read-only command): the owed checkpoint is done.
    assert _search(home, doomed) == []
    reader.close()
    assert leaks(shelf_files(home), [doomed]) == []
    with LiteStore(home=home, embedder=None) as again:
        assert (
            again.conn.execute(
                "SELECT count(*) FROM meta WHERE k = ?", (purge.OWED_CHECKPOINT,)
            ).fetchone()[0]
            == 0
        )


def test_a_shelf_from_before_secure_deletion_is_cleaned_on_its_first_open(tmp_path: Path) -> None:
    home = tmp_path / "home"
    early, kept = token("legacy-early"), token("legacy-kept")
    with LiteStore(home=home, embedder=None) as store:
        # What an older hypatia-lite left: FTS deletes that only add tombstones, no zeroing.
        store.conn.execute("INSERT INTO docs_fts(docs_fts, rank) VALUES ('secure-delete', 0)")
        store.conn.execute("PRAGMA secure_delete = OFF")
        _filler(store, 0, 100)
        store.knowledge_create("msg-l-1", f"deleted long ago {early}")
        store.knowledge_create("msg-l-2", f"still here {kept}")
        _filler(store, 100, 100)
        store.knowledge_delete("msg-l-1")
    assert present(shelf_files(home), [early]) == {early}  # the old format kept the bytes
    # ... in the index too: its stemmed, lowercased term (``zq…canari``).
    assert early.lower()[:-1].encode() + b"i" in b"".join(p.read_bytes() for p in shelf_files(home))
    with LiteStore(home=home, embedder=None) as store:  # rebuild + VACUUM, once
        assert store.conn.execute(
            "SELECT v FROM docs_fts_config WHERE k = 'secure-delete'"
        ).fetchone() == (1,)
        assert store.conn.execute(
            "SELECT count(*) FROM meta WHERE k LIKE 'purge_%'"
        ).fetchone() == (0,)
        assert [r.key for r in store.search(kept)] == ["msg-l-2"]
    assert leaks(shelf_files(home), [early]) == []
    assert present(shelf_files(home), [kept]) == {kept}
