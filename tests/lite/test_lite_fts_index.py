"""hypatia-lite's full-text index stays exactly in step with its ``docs`` rows.

New documents are indexed by one ``INSERT … SELECT`` per write (there is no insert trigger);
updates and deletes go through the ``docs_au`` / ``docs_ad`` triggers. FTS5's
``integrity-check`` with ``rank = 1`` compares the index with the content table, so a missing,
doubled or stale index row fails it.
"""

from __future__ import annotations

from pathlib import Path

from dsh_memory_worker.memory.store.base import EntryWrite, StatementWrite
from hypatia_lite import db
from hypatia_lite.sqlitelib import sqlite3
from hypatia_lite.store import LiteStore


def _integrity(store: LiteStore) -> None:
    store.conn.execute("INSERT INTO docs_fts(docs_fts, rank) VALUES ('integrity-check', 1)")


def _keys(store: LiteStore, query: str) -> list[str]:
    return sorted(r.key for r in store.search(query))


def test_batch_single_update_and_delete_keep_the_index_exact(tmp_path: Path) -> None:
    store = LiteStore(home=tmp_path / "lite")
    try:
        store.write_batch(
            [
                EntryWrite(f"msg-f-{n}", f"walrus number {n}", tags=("message",), embed=False)
                for n in range(5)
            ],
            [StatementWrite(f"msg-f-{n}", "belongTo", "session-f", embed=False) for n in range(5)],
        )
        assert store.knowledge_create("note-otter", "an otter", tags=("memory",), embed=False)
        assert store.statement_create("note-otter", "mentions", "msg-f-1", embed=False)
        assert store.knowledge_update("msg-f-2", data="a narwhal now")
        assert store.knowledge_delete("msg-f-3")
        assert store.statement_delete("msg-f-4", "belongTo", "session-f")
        # A batch that repeats existing names indexes only what it created.
        store.write_batch(
            [
                EntryWrite("msg-f-0", "ignored", embed=False),
                EntryWrite("msg-f-9", "walrus late", embed=False),
            ]
        )
        _integrity(store)

        assert _keys(store, "walrus") == ["msg-f-0", "msg-f-1", "msg-f-4", "msg-f-9"]
        assert _keys(store, "narwhal") == ["msg-f-2"]
        assert _keys(store, "otter") == ["note-otter", "note-otter,mentions,msg-f-1"]
        assert _keys(store, "belongTo") == [f"msg-f-{n},belongTo,session-f" for n in range(4)]
        assert _keys(store, "mentions") == ["note-otter,mentions,msg-f-1"]
        docs = store.conn.execute("SELECT count(*) FROM docs").fetchone()[0]
        assert docs == 5 - 1 + 1 + 1 + 5 - 1 + 1  # entries, statements, note and its edge
    finally:
        store.close()


def test_a_shelf_with_the_old_insert_trigger_loses_it_and_is_not_indexed_twice(
    tmp_path: Path,
) -> None:
    store = LiteStore(home=tmp_path / "lite")
    shelf = store.path
    store.conn.executescript("""
        CREATE TRIGGER docs_ai AFTER INSERT ON docs BEGIN
            INSERT INTO docs_fts(rowid, fts_key, fts_data, fts_tags, fts_synonyms)
            VALUES (new.id, new.fts_key, new.fts_data, new.fts_tags, new.fts_synonyms);
        END;
    """)
    store.close()

    conn = db.connect(shelf)
    triggers = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")}
    conn.close()
    assert triggers == {"docs_ad", "docs_au"}

    store = LiteStore(home=tmp_path / "lite")
    try:
        store.write_batch([EntryWrite("msg-g-1", "walrus", embed=False)])
        _integrity(store)
        hits = store.conn.execute(
            "SELECT count(*) FROM docs_fts WHERE docs_fts MATCH 'walrus'"
        ).fetchone()[0]
        assert hits == 1
    finally:
        store.close()


def test_integrity_check_catches_a_missing_index_row(tmp_path: Path) -> None:
    """The check above can fail: a docs row written without its index row is reported."""
    store = LiteStore(home=tmp_path / "lite")
    try:
        store.conn.execute(
            "INSERT INTO docs(catalog, key, fts_key, fts_data, fts_tags, fts_synonyms)"
            " VALUES ('knowledge', 'x', 'x', 'walrus', '', '')"
        )
        try:
            _integrity(store)
        except sqlite3.DatabaseError as err:
            assert "malformed" in str(err) or "corrupt" in str(err)
        else:
            raise AssertionError("integrity-check accepted a document missing from the index")
    finally:
        store.close()
