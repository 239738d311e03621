"""``create_node_with_edges``: the session node and its ``belongTo`` edges leave the same rows as
``knowledge_create`` followed by ``settle_edges``; on a batched store (hypatia-lite) the node
shares the first edge batch's transaction, so a failure there leaves neither."""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import pytest

from dsh_memory_worker.memory.store.base import EntryWrite, MemoryStore
from dsh_memory_worker.worker.jobs import store_writes
from dsh_memory_worker.worker.jobs.store_writes import (
    OwedEdges,
    create_node_with_edges,
    settle_edges,
)
from hypatia_lite import sqlite_backend
from hypatia_lite.sqlitelib import sqlite3
from hypatia_lite.store import LiteStore

SID = "s-node"
NODE = EntryWrite(
    f"session-{SID}", "Release planning", tags=("session",), scopes=("proj",), embed=False
)


class _Beats:
    """The heartbeat the edge writers call after each full batch, counted."""

    def __init__(self) -> None:
        self.heartbeats = 0

    def heartbeat(self) -> None:
        self.heartbeats += 1


def _owed(link_to: int, skip: frozenset[int]) -> OwedEdges:
    return OwedEdges(SID, "proj", 0, link_to, skip)


class _Unbatched:
    """A store without ``write_batch`` (as the CLI and MCP adapters): one call per item."""

    def __init__(self, inner: LiteStore) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        if name == "write_batch":
            raise AttributeError(name)
        return getattr(self._inner, name)


def _rows(store: LiteStore) -> dict[str, list[tuple[Any, ...]]]:
    """Every row with its id (creation order), FTS documents included."""
    conn = sqlite3.connect(store.path / "hypatia.sqlite")
    try:
        return {
            "knowledge": conn.execute(
                "SELECT id, name, content, embed_wanted FROM knowledge ORDER BY id"
            ).fetchall(),
            "statement": conn.execute(
                "SELECT id, triple, content, embed_wanted FROM statement ORDER BY id"
            ).fetchall(),
            "docs": conn.execute("SELECT * FROM docs ORDER BY id").fetchall(),
            "fts": conn.execute(
                "SELECT rowid, * FROM docs_fts WHERE docs_fts MATCH 'session' ORDER BY rowid"
            ).fetchall(),
        }
    finally:
        conn.close()


def _reference(root: Path, link_to: int, skip: frozenset[int]) -> dict[str, Any]:
    """The rows of the two-step write: ``knowledge_create``, then ``settle_edges``."""
    with LiteStore(home=root / "reference", embedder=None) as store:
        store.knowledge_create(
            NODE.name, NODE.data, tags=NODE.tags, scopes=NODE.scopes, embed=NODE.embed
        )
        settle_edges(store, _owed(link_to, skip), _Beats().heartbeat)
        return _rows(store)


@pytest.mark.parametrize("batched", [True, False])
@pytest.mark.parametrize("link_to", [0, 7])
def test_the_same_rows_as_create_then_settle(
    tmp_path: Path, batched: bool, link_to: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(store_writes, "WRITE_BATCH", 3)  # edges in batches of 3, 3, 1
    skip = frozenset({2})
    expected = _reference(tmp_path, link_to, skip)
    with LiteStore(home=tmp_path / "got", embedder=None) as lite:
        store = cast(MemoryStore, lite if batched else _Unbatched(lite))
        beats = _Beats()
        created, linked = create_node_with_edges(store, NODE, _owed(link_to, skip), beats.heartbeat)
        assert (created, linked) == (True, max(link_to - 1, 0))
        assert _rows(lite) == expected
        assert beats.heartbeats == (2 if link_to else 0)  # after each full batch
        # Again: the node exists (not created), every edge is re-asserted, nothing changes.
        assert create_node_with_edges(store, NODE, _owed(link_to, skip), beats.heartbeat) == (
            False,
            linked,
        )
        assert _rows(lite) == expected


def test_the_node_shares_the_first_edge_batch_transaction(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = sqlite_backend.put_doc_rows

    def failing(conn: Any, rows: list[tuple[str, ...]]) -> None:
        real(conn, rows[:2])  # inside the transaction: the node's and one edge's documents
        raise OSError("injected crash mid-batch")

    with LiteStore(home=tmp_path / "crashy", embedder=None) as store:
        monkeypatch.setattr(sqlite_backend, "put_doc_rows", failing)
        with pytest.raises(OSError, match="injected crash"):
            create_node_with_edges(store, NODE, _owed(4, frozenset()), _Beats().heartbeat)
        assert store.dump() == {"knowledge": [], "statements": []}  # neither node nor edges
        monkeypatch.setattr(sqlite_backend, "put_doc_rows", real)
        assert create_node_with_edges(store, NODE, _owed(4, frozenset()), _Beats().heartbeat) == (
            True,
            4,
        )
        assert _rows(store) == _reference(tmp_path, 4, frozenset())
