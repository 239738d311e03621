"""Pending-embedding counts (part of every hypatia-lite MCP write reply) come from partial
indexes: the same numbers as the full-table predicate, without scanning the table, also on a
shelf created before the indexes existed."""

from __future__ import annotations

from pathlib import Path

from dsh_memory_worker.memory.store.base import EntryWrite, StatementWrite
from hypatia_lite.embed import HashingEmbedder
from hypatia_lite.sqlitelib import sqlite3
from hypatia_lite.store import LiteStore
from hypatia_lite.vectors import _PENDING

_SLOW = (
    "SELECT count(*) FROM {t} WHERE embed_wanted = 1 AND"
    " (embedding IS NULL OR embedding_model IS NOT ?)"
)


def _slow_counts(store: LiteStore, model: str) -> dict[str, int]:
    return {
        t: store.conn.execute(_SLOW.format(t=t), (model,)).fetchone()[0]
        for t in ("knowledge", "statement")
    }


def test_counts_equal_the_full_predicate_for_every_kind_of_row(tmp_path: Path) -> None:
    embedder = HashingEmbedder()
    with LiteStore(home=tmp_path / "home", embedder=embedder) as store:
        store.write_batch(
            [EntryWrite(f"m{n}", f"message {n}", embed=False) for n in range(5)]
            + [EntryWrite(f"w{n}", f"work unit {n}", embed=True) for n in range(7)],
            [StatementWrite(f"w{n}", "is_a", "thing", embed=True) for n in range(4)]
            + [StatementWrite(f"m{n}", "belongTo", "s", embed=False) for n in range(3)],
        )
        assert store.pending_embeddings() == {"knowledge": 0, "statement": 0}
        conn = store.conn
        # Owed: no vector; a vector of an older ("a…") and a newer ("z…") model; a vector with
        # no model recorded. Not owed: rows that do not want one, even without a vector.
        conn.execute(
            "UPDATE knowledge SET embedding = NULL, embedding_model = NULL"
            " WHERE name IN ('w0', 'w1')"
        )
        conn.execute("UPDATE knowledge SET embedding_model = 'a-old' WHERE name = 'w2'")
        conn.execute("UPDATE knowledge SET embedding_model = 'zz-new' WHERE name = 'w3'")
        conn.execute("UPDATE knowledge SET embedding_model = NULL WHERE name = 'w4'")
        conn.execute("UPDATE statement SET embedding = NULL WHERE head = 'w0'")
        conn.execute("UPDATE statement SET embedding_model = 'other' WHERE head = 'w1'")
        want = {"knowledge": 5, "statement": 2}
        assert _slow_counts(store, embedder.identity) == want
        assert store.pending_embeddings() == want
        # Another embedder (or none: model "") owes every wanted row.
        for model in ("", "hypatia-lite/other-model"):
            store.embedder = None if model == "" else HashingEmbedder(16)
            expected = _slow_counts(store, store.embedder.identity if store.embedder else "")
            assert store.pending_embeddings() == expected
        assert expected == {"knowledge": 7, "statement": 4}


def test_the_counts_never_scan_the_tables(tmp_path: Path) -> None:
    with LiteStore(home=tmp_path / "home") as store:
        for table in ("knowledge", "statement"):
            plan = [
                row[3]
                for row in store.conn.execute(
                    "EXPLAIN QUERY PLAN " + _PENDING.format(table=table), ("m", "m")
                )
            ]
            assert not [step for step in plan if step.startswith("SCAN " + table)], plan
            assert sum(f"USING INDEX {table}_" in step for step in plan) == 4, plan


def test_an_existing_shelf_gets_the_indexes_when_opened(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with LiteStore(home=home) as store:
        path = store.path / "hypatia.sqlite"
        store.write_batch([EntryWrite("w", "x", embed=True)])
    conn = sqlite3.connect(path)
    for name in (
        "knowledge_owed",
        "statement_owed",
        "knowledge_vector_model",
        "statement_vector_model",
    ):
        conn.execute(f"DROP INDEX {name}")
    conn.commit()
    conn.close()
    with LiteStore(home=home) as store:
        names = {
            r[0] for r in store.conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")
        }
        assert {
            "knowledge_owed",
            "knowledge_vector_model",
            "statement_owed",
            "statement_vector_model",
        } <= names
        assert store.pending_embeddings() == {"knowledge": 0, "statement": 0}
