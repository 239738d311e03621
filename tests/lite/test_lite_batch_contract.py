"""hypatia-lite ``write_batch``: the same store as one create per item, in one transaction.

The batch path must leave exactly the rows (names, contents, created-or-not, FTS documents,
vectors, ``created_at`` order) that ``knowledge_create`` / ``statement_create`` one by one
leave; a failure in the middle of a batch must leave nothing of it, and a retry completes it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dsh_memory_worker.memory.store.base import (
    BatchResult,
    BatchWriter,
    EntryWrite,
    StatementWrite,
    StoreError,
    csv_triple,
    write_batch,
)
from hypatia_lite import sqlite_backend
from hypatia_lite.embed import HashingEmbedder
from hypatia_lite.sqlitelib import sqlite3
from hypatia_lite.store import LiteStore

PRE_ENTRIES = [EntryWrite("msg-s-2", "already here", tags=("message",), scopes=("p",), embed=False)]
PRE_STATEMENTS = [StatementWrite("msg-s-1", "belongTo", "session-s", scopes=("p",), embed=False)]

ENTRIES = [
    EntryWrite(
        "msg-s-1", "## Role\nuser\n\nhello, world", tags=("message",), scopes=("p",), embed=False
    ),
    EntryWrite("msg-s-2", "a different body", tags=("message",), scopes=("p",), embed=False),
    EntryWrite(
        "wu-fix-tests-1234abcd",
        "Fixed the flaky test",
        tags=("memory", "work-unit"),
        scopes=("p",),
        embed=True,
    ),
    EntryWrite("msg-s-3", 'third "quoted", with comma', tags=(), scopes=None, embed=False),
    EntryWrite("msg-s-1", "duplicate inside the batch", tags=("message",), embed=False),
    EntryWrite("lone-\ud800-surrogate", "data \udfff", tags=("t\ud800",), scopes=("",)),
]
STATEMENTS = [
    StatementWrite("msg-s-1", "belongTo", "session-s", scopes=("p",), embed=False),
    StatementWrite("msg-s-2", "belongTo", "session-s", scopes=("p",), embed=False),
    StatementWrite(
        "wu-fix-tests-1234abcd",
        "derivedFrom",
        'msg-s-1, part "2"',
        data="why",
        scopes=("p",),
        embed=True,
    ),
    StatementWrite("msg-s-2", "belongTo", "session-s", data="re-asserted", embed=False),
]


@pytest.fixture
def home(tmp_path: Path) -> Iterator[Path]:
    yield tmp_path


def _open(root: Path, name: str) -> LiteStore:
    return LiteStore(home=root / name, embedder=HashingEmbedder())


def _one_by_one(
    store: LiteStore, entries: list[EntryWrite], statements: list[StatementWrite]
) -> BatchResult:
    names = [
        e.name
        for e in entries
        if store.knowledge_create(e.name, e.data, tags=e.tags, scopes=e.scopes, embed=e.embed)
    ]
    triples = [
        s.triple
        for s in statements
        if store.statement_create(
            s.head, s.relation, s.tail, data=s.data, scopes=s.scopes, embed=s.embed
        )
    ]
    return BatchResult(tuple(names), tuple(triples))


def _raw(store: LiteStore) -> dict[str, list[tuple[Any, ...]]]:
    """Everything but ids and timestamps: rows in creation order, vectors, FTS documents."""
    conn = sqlite3.connect(store.path / "hypatia.sqlite")
    try:
        return {
            "knowledge": conn.execute(
                "SELECT name, content, embed_wanted, embedding, embedding_model FROM knowledge"
                " ORDER BY created_at, id"
            ).fetchall(),
            "statement": conn.execute(
                "SELECT triple, head, relation, tail, content, embed_wanted, embedding,"
                " embedding_model FROM statement ORDER BY created_at, id"
            ).fetchall(),
            "docs": conn.execute(
                "SELECT catalog, key, fts_key, fts_data, fts_tags, fts_synonyms FROM docs"
                " ORDER BY catalog, key"
            ).fetchall(),
            "fts": conn.execute(
                "SELECT d.key FROM docs_fts JOIN docs AS d ON d.id = docs_fts.rowid"
                " WHERE docs_fts MATCH 'body OR flaky OR quoted OR why' ORDER BY d.key"
            ).fetchall(),
        }
    finally:
        conn.close()


def test_lite_store_is_a_batch_writer(home: Path) -> None:
    with _open(home, "a") as store:
        assert isinstance(store, BatchWriter)
        assert store.write_batch([]) == BatchResult()


def test_batch_equals_one_by_one_including_duplicates_and_reasserted_statements(
    home: Path,
) -> None:
    with _open(home, "single") as single, _open(home, "batched") as batched:
        for store in (single, batched):
            _one_by_one(store, PRE_ENTRIES, PRE_STATEMENTS)
        expected = _one_by_one(single, ENTRIES, STATEMENTS)
        got = write_batch(batched, ENTRIES, STATEMENTS)
        assert got == expected
        # Names as given (a lone surrogate is stored as U+FFFD, reported as passed in).
        assert got.created_names == (
            "msg-s-1",
            "wu-fix-tests-1234abcd",
            "msg-s-3",
            "lone-\ud800-surrogate",
        )
        assert batched.knowledge_get_row("lone-\ufffd-surrogate") is not None
        assert got.created_triples == (
            "msg-s-2,belongTo,session-s",
            csv_triple("wu-fix-tests-1234abcd", "derivedFrom", 'msg-s-1, part "2"'),
        )
        assert batched.dump() == single.dump()
        assert _raw(batched) == _raw(single)
        # The pre-existing entry is unchanged; the in-batch duplicate did not overwrite.
        assert batched.knowledge_get_row("msg-s-2")["content"]["data"] == "already here"
        assert batched.knowledge_get_row("msg-s-1")["content"]["data"].startswith("## Role")
        # Embedded rows got the same vector as single writes; the others none.
        wanted = {r[0]: (r[3] is not None, r[4]) for r in _raw(batched)["knowledge"]}
        assert wanted["wu-fix-tests-1234abcd"] == (True, "hypatia-lite/hash-ngram-384")
        assert wanted["msg-s-1"] == (False, None)
        assert batched.pending_embeddings() == {"knowledge": 0, "statement": 0}
        # Re-running the whole batch creates nothing and changes nothing.
        before = _raw(batched)
        assert write_batch(batched, ENTRIES, STATEMENTS) == BatchResult()
        assert _raw(batched) == before


def test_created_at_order_is_insertion_order(home: Path) -> None:
    entries = [
        EntryWrite(f"msg-o-{n}", f"body {n}", tags=("message",), embed=False) for n in range(300)
    ]
    with _open(home, "order") as store:
        store.write_batch(entries)
        rows = store.query_rows(
            {"$knowledge": [["$like", "name", "msg-o-%"]], "limit": 1000, "offset": 0}
        )
    # Newest first (Hypatia's order), ties broken by insertion order.
    assert [r["name"] for r in rows] == [f"msg-o-{n}" for n in reversed(range(300))]
    stamps = [r["created_at"] for r in reversed(rows)]
    assert stamps == sorted(stamps)


def test_a_failure_mid_batch_leaves_nothing_and_a_retry_completes(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    entries = [
        EntryWrite(f"msg-c-{n}", f"body {n}", tags=("message",), embed=False) for n in range(10)
    ]
    statements = [
        StatementWrite(f"msg-c-{n}", "belongTo", "session-c", embed=False) for n in range(10)
    ]
    with _open(home, "reference") as reference:
        _one_by_one(reference, PRE_ENTRIES, [])
        _one_by_one(reference, entries, statements)
        expected = _raw(reference)
    real = sqlite_backend.put_doc_rows
    written = {"n": 0}

    def failing(conn: Any, rows: list[tuple[str, ...]]) -> None:
        # Inside the batch's transaction: rows inserted, half of their FTS documents written.
        real(conn, rows[: len(rows) // 2])
        written["n"] = conn.execute("SELECT count(*) FROM docs").fetchone()[0]
        raise RuntimeError("injected crash mid-batch")

    with _open(home, "crashy") as store:
        _one_by_one(store, PRE_ENTRIES, [])
        before = _raw(store)
        monkeypatch.setattr(sqlite_backend, "put_doc_rows", failing)
        with pytest.raises(RuntimeError, match="injected crash"):
            store.write_batch(entries, statements)
        assert written["n"] == len(PRE_ENTRIES) + 10  # the crash came after half the documents
        assert _raw(store) == before  # all or nothing: the half-written batch rolled back
        monkeypatch.setattr(sqlite_backend, "put_doc_rows", real)
        result = store.write_batch(entries, statements)
        assert len(result.created_names) == 10 and len(result.created_triples) == 10
        assert _raw(store) == expected


def test_an_sqlite_error_mid_batch_is_a_store_error_and_rolls_back(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    entries = [EntryWrite(f"msg-e-{n}", f"body {n}", embed=False) for n in range(6)]
    real = sqlite_backend.put_doc_rows

    def failing(conn: Any, rows: list[tuple[str, ...]]) -> None:
        # Inside the batch's transaction: the entries and two documents are written already.
        real(conn, rows[:2])
        raise sqlite3.IntegrityError("injected constraint failure")

    with _open(home, "sqlerr") as store:
        monkeypatch.setattr(sqlite_backend, "put_doc_rows", failing)
        with pytest.raises(StoreError, match="injected constraint failure"):
            store.write_batch(entries)
        assert store.dump() == {"knowledge": [], "statements": []}
        assert store.conn.execute("SELECT count(*) FROM docs").fetchone()[0] == 0
        # The connection is usable afterwards (no transaction left open).
        monkeypatch.setattr(sqlite_backend, "put_doc_rows", real)
        assert store.write_batch(entries).created_names == tuple(e.name for e in entries)
