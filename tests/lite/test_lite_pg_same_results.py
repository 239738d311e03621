"""The PostgreSQL shelf answers like the SQLite shelf: the same entries written to both, then
every JSE form of the subset and a set of full-text searches (stemming, stop words, hyphens,
numbers, tags, synonyms, catalogs) must return the same rows — exact contents, same order for
queries (``created_at`` aside, which is each shelf's own clock) and the same keys for searches —
and the same error texts."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from lite_pg_support import SHELF, pg_home

from dsh_memory_worker.memory.store.base import EntryWrite, StatementWrite, StoreError
from hypatia_lite.store import LiteStore

pytestmark = pytest.mark.integration

ENTRIES = [
    EntryWrite(
        "msg-a-1", "The Kubernetes clusters were upgraded", tags=("message",), scopes=("proj",)
    ),
    EntryWrite(
        "msg-a-2", "tag-19 and data-7 in one line", tags=("message", "tag-19"), scopes=("proj", "")
    ),
    EntryWrite("msg-a-3", "the quick brown fox", tags=("message",), scopes=None),
    EntryWrite(
        "msg-b-1", "version 3.5 of a.b.c released", tags=("summary", "summary x"), scopes=("other",)
    ),
    EntryWrite("sum-a-1-3", "summary of msg-a-1", tags=("summary",), scopes=("proj",)),
    EntryWrite("wu-a-1", "wu-a-1", tags=("work-unit",), scopes=("",)),
    EntryWrite("msg-a-4", "not summarised yet", tags=("message",), scopes=("proj",)),
    EntryWrite("weird_name-9", "UPPER lower MiXeD 50% off_sale", tags=("a b", "c,d")),
]
STATEMENTS = [
    StatementWrite("msg-a-1", "belongTo", "session-a"),
    StatementWrite("msg-a-2", "belongTo", "session-a"),
    StatementWrite("sum-a-1-3", "summary", "msg-a-1", data="covers clusters"),
    StatementWrite("sum-a-1-3", "summary", "msg-a-2"),
    StatementWrite("session-a", "partOf", "project-x"),
    StatementWrite("project-x", "ownedBy", "team-y"),
]
QUERIES: list[Any] = [
    ["$knowledge"],
    {"$knowledge": [], "limit": 3, "offset": 2},
    ["$knowledge", ["$eq", "name", "msg-a-2"]],
    ["$knowledge", ["$like", "name", "MSG-A-%"]],
    ["$knowledge", ["$like", "data", "%clusters%"]],
    ["$knowledge", ["$contains", "data", "fox"]],
    ["$knowledge", ["$contains", "tags", "summary"]],
    ["$knowledge", ["$has", "tags", ["tag-19", "a b"]]],
    ["$knowledge", ["$contains", "scopes", ""]],
    ["$knowledge", ["$eq", "scopes", None]],
    ["$knowledge", ["$ne", "scopes", None]],
    ["$knowledge", ["$eq", "tags[0]", "summary"]],
    ["$knowledge", ["$eq", "tags[1]", "summary x"]],
    ["$knowledge", ["$gt", "name", "msg-b"]],
    ["$knowledge", ["$lte", "name", "msg-a-2"]],
    ["$knowledge", ["$ne", "data", "msg-a-1"]],
    ["$knowledge", ["$eq", "data", "$name"]],
    ["$knowledge", ["$eq", "data", "$$name"]],
    ["$knowledge", ["$eq", "tags", ["message"]]],
    ["$knowledge", ["$content", {"data": "the quick brown fox", "format": "markdown"}]],
    ["$knowledge", ["$not", ["$contains", "tags", "message"]]],
    ["$knowledge", ["$or", ["$eq", "name", "wu-a-1"], ["$contains", "scopes", "other"]]],
    ["$knowledge", ["$and", ["$contains", "tags", "message"], ["$contains", "scopes", "proj"]]],
    ["$knowledge", ["$search", "cluster"]],
    ["$knowledge", ["$search", "the"]],
    ["$knowledge", ["$search", ""]],
    ["$knowledge", ["$contains", "tags", []]],
    {"$not-summaried": ["message", ["$contains", "scopes", "proj"]], "limit": 10},
    ["$statement"],
    ["$statement", ["$triple", ["sum-a-1-3", "summary", "$*"]]],
    ["$statement", ["$triple", ["$*", "belongTo", "session-a"]]],
    ["$statement", ["$triple", "msg-a-1", "belongTo", "session-a"]],
    ["$statement", ["$eq", "relation", "summary"], ["$like", "head", "sum-%"]],
    ["$statement", ["$k-hop", ["msg-a-1", "$*", 3]]],
    ["$statement", ["$k-hop", ["session-a", "partOf", 2]]],
    ["$statement", ["$search", "clusters"]],
    ["$statement", ["$eq", "data", "covers clusters"]],
    ["$statement", ["$eq", "tr_start", None]],
]
SEARCHES = [
    "cluster",
    "upgrade",
    "the",
    "tag 19",
    "data-7",
    "msg a 1",
    "summary",
    "3.5",
    "a.b.c",
    "upper",
    "MIXED",
    "sale",
    "summary x",
    "session",
    "no-such-word",
    "50%",
]
ERRORS: list[Any] = [
    ["$bogus", 1],
    ["$knowledge", "$eq"],
    ["$knowledge", ["$triple", ["a", "b", "c"]]],
    ["$knowledge", ["$like", "name", 5]],
    {"$knowledge": [], "limit": -1},
    "{not json",
]


@pytest.fixture(scope="module")
def shelves_pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LiteStore, ...]]:
    home = tmp_path_factory.mktemp("same-results")
    with pg_home(home):
        stores = (LiteStore(home=home), LiteStore(SHELF, home=home))
        try:
            for store in stores:
                for entry in ENTRIES:  # one by one: created_at order = list order on both
                    store.write_batch([entry])
                store.write_batch([], STATEMENTS)
            yield stores
        finally:
            for store in stores:
                store.close()


def _rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in row.items() if k != "created_at"} for row in rows]


@pytest.mark.parametrize("jse", QUERIES, ids=[str(i) for i in range(len(QUERIES))])
def test_queries_return_the_same_rows(shelves_pair: tuple[LiteStore, ...], jse: Any) -> None:
    sqlite_shelf, pg_shelf = shelves_pair
    expected = _rows(sqlite_shelf.query_rows(jse))
    assert _rows(pg_shelf.query_rows(jse)) == expected


def test_the_queries_are_not_vacuous(shelves_pair: tuple[LiteStore, ...]) -> None:
    sqlite_shelf, _ = shelves_pair
    counts = [len(sqlite_shelf.query_rows(jse)) for jse in QUERIES]
    assert counts == [
        8,
        3,
        1,
        4,
        1,
        1,
        2,
        2,
        2,
        2,
        6,
        2,
        1,
        4,
        2,
        8,
        1,
        0,
        3,
        1,
        4,
        2,
        3,
        1,
        2,
        0,
        0,
        1,
        6,
        2,
        2,
        1,
        2,
        3,
        1,
        1,
        1,
        6,
    ]


@pytest.mark.parametrize("query", SEARCHES)
def test_searches_find_the_same_entries(shelves_pair: tuple[LiteStore, ...], query: str) -> None:
    sqlite_shelf, pg_shelf = shelves_pair
    expected = sorted(
        (r["catalog"], r["key"], r["content"]) for r in sqlite_shelf.search_rows(query)
    )
    found = pg_shelf.search_rows(query)
    assert sorted((r["catalog"], r["key"], r["content"]) for r in found) == expected
    assert [r["rank"] for r in found] == sorted(r["rank"] for r in found)
    for catalog in ("knowledge", "statement"):
        assert sorted(r["key"] for r in pg_shelf.search_rows(query, catalog=catalog)) == sorted(
            key for cat, key, _ in expected if cat == catalog
        )


def test_search_hits(shelves_pair: tuple[LiteStore, ...]) -> None:
    _, pg_shelf = shelves_pair
    assert sorted(r["key"] for r in pg_shelf.search_rows("cluster")) == [
        "msg-a-1",
        "sum-a-1-3,summary,msg-a-1",
    ]
    assert [r["key"] for r in pg_shelf.search_rows("tag 19")] == ["msg-a-2"]
    assert [r["key"] for r in pg_shelf.search_rows("the", limit=1, offset=0)] != []


@pytest.mark.parametrize("jse", ERRORS, ids=[str(i) for i in range(len(ERRORS))])
def test_the_same_error_texts(shelves_pair: tuple[LiteStore, ...], jse: Any) -> None:
    texts = []
    for store in shelves_pair:
        with pytest.raises(StoreError) as caught:
            store.query_rows(jse)
        texts.append(str(caught.value))
    assert texts[0] == texts[1]
    assert texts[0].startswith(("JSE evaluation error:", "JSE parse error:"))


def test_duplicate_and_missing_texts(shelves_pair: tuple[LiteStore, ...], tmp_path: Path) -> None:
    sqlite_shelf, pg_shelf = shelves_pair
    for store in (sqlite_shelf, pg_shelf):
        assert store.knowledge_create("msg-a-1", "again") is False
        with pytest.raises(StoreError, match=r"^not found: knowledge 'never'$"):
            store.knowledge_update("never", data="x")
        with pytest.raises(StoreError, match=r"^validation error: nothing to update"):
            store.knowledge_update("msg-a-1")
