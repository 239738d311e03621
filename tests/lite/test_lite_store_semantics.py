"""hypatia-lite in-process: exact rows, membership, ordering, updates, deletes and dumps."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from dsh_memory_worker.memory.store.base import (
    Content,
    KnowledgeEntry,
    MemoryStore,
    NotFoundError,
    StatementRow,
)
from hypatia_lite.store import LiteStore

CREATED_AT = re.compile(r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\.\d{3}$")


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> LiteStore:
    monkeypatch.setenv("HYPATIA_LITE_HOME", str(tmp_path / "home"))
    with LiteStore() as opened:
        yield opened


def _names(rows: list[dict[str, object]]) -> list[object]:
    return [r["name"] for r in rows]


def test_implements_the_protocol_with_all_features(store: LiteStore) -> None:
    assert isinstance(store, MemoryStore)
    features = store.features()
    assert (features.no_embed, features.similar_filters, features.delete, features.update) == (
        True,
        True,
        True,
        True,
    )
    assert store.shelf == "default"
    assert store.path == store.home / "default"
    assert (store.path / "hypatia.sqlite").is_file()
    registry = json.loads((store.home / "shelves.json").read_text())
    assert registry == {"shelves": {"default": str(store.home / "default")}}


def test_knowledge_row_shape_and_duplicate_create(store: LiteStore) -> None:
    assert store.knowledge_create("msg-s-1", "hello", tags=["message"], scopes=["proj", ""])
    assert not store.knowledge_create("msg-s-1", "other data", tags=["x"])
    row = store.knowledge_get_row("msg-s-1")
    assert row is not None
    assert set(row) == {"name", "content", "created_at"}
    assert row["name"] == "msg-s-1"
    assert row["content"] == {
        "format": "markdown",
        "data": "hello",
        "tags": ["message"],
        "synonyms": None,
        "figures": None,
        "scopes": ["proj", ""],
    }
    assert CREATED_AT.match(row["created_at"])
    entry = store.knowledge_get("msg-s-1")
    assert entry == KnowledgeEntry(
        "msg-s-1", Content("hello", tags=("message",), scopes=("proj", "")), row["created_at"]
    )
    assert store.knowledge_get("missing") is None
    assert store.knowledge_get_row("missing") is None


def test_empty_scopes_are_null_and_not_global(store: LiteStore) -> None:
    store.knowledge_create("none", "a", tags=["rule"], scopes=[])
    store.knowledge_create("global", "b", tags=["rule"], scopes=[""])
    store.knowledge_create("proj", "c", tags=["rule"], scopes=["p"])
    assert store.knowledge_get_row("none")["content"]["scopes"] is None  # type: ignore[index]
    rows = store.query_rows(
        [
            "$knowledge",
            ["$contains", "tags", "rule"],
            ["$or", ["$contains", "scopes", "p"], ["$contains", "scopes", ""]],
        ]
    )
    assert _names(rows) == ["proj", "global"]
    assert _names(store.query_rows(["$knowledge", ["$contains", "scopes", ""]])) == ["global"]


def test_tag_membership_is_exact_and_allows_spaces(store: LiteStore) -> None:
    store.knowledge_create("a", "x", tags=["summary 1"])
    store.knowledge_create("b", "x", tags=["summary"])
    store.knowledge_create("c", "x", tags=["summary 10"])
    assert _names(store.query_rows(["$knowledge", ["$contains", "tags", "summary 1"]])) == ["a"]
    assert _names(store.query_rows(["$knowledge", ["$contains", "tags", "summary"]])) == ["b"]
    assert _names(
        store.query_rows(["$knowledge", ["$has", "tags", ["summary", "summary 10"]]])
    ) == ["c", "b"]
    # on a non-array field $contains is a substring test
    store.knowledge_create("d", "the quick fox")
    assert _names(store.query_rows(["$knowledge", ["$contains", "data", "quick f"]])) == ["d"]


def test_not_summaried_excludes_summary_tails_in_ascending_order(store: LiteStore) -> None:
    for n in range(1, 6):
        assert store.knowledge_create(f"msg-s-{n}", f"m{n}", tags=["message"], scopes=["p"])
    store.knowledge_create("msg-other", "o", tags=["message"], scopes=["q"])
    store.knowledge_create("sum-s-1-2", "sum", tags=["summary"], scopes=["p"])
    store.statement_create("sum-s-1-2", "summary", "msg-s-1")
    store.statement_create("sum-s-1-2", "summary", "msg-s-2")
    store.statement_create("sum-s-1-2", "belongTo", "msg-s-3")  # not a summary edge
    rows = store.query_rows(
        {"$not-summaried": ["message", ["$contains", "scopes", "p"]], "limit": 2}
    )
    assert _names(rows) == ["msg-s-3", "msg-s-4"]
    rows = store.query_rows(
        {"$not-summaried": ["message", ["$contains", "scopes", "p"]], "limit": 2, "offset": 2}
    )
    assert _names(rows) == ["msg-s-5"]
    assert _names(store.query_rows(["$not-summaried", "message"])) == [
        "msg-s-3",
        "msg-s-4",
        "msg-s-5",
        "msg-other",
    ]


def test_default_order_is_newest_first_with_stable_ties(store: LiteStore) -> None:
    names = [f"n{i:02d}" for i in range(12)]
    for name in names:
        store.knowledge_create(name, "")
    assert _names(store.query_rows(["$knowledge"])) == list(reversed(names))
    assert _names(store.query_rows({"$knowledge": [], "limit": 3, "offset": 1})) == [
        "n10",
        "n09",
        "n08",
    ]


def test_like_is_case_insensitive_with_wildcards(store: LiteStore) -> None:
    for name in ("msg-abc-1", "msg-abc-2", "MSG-ABC-3", "msg-abd-1", "sum-abc-1-2"):
        store.knowledge_create(name, "")
    assert sorted(_names(store.query_rows(["$knowledge", ["$like", "name", "msg-abc-%"]]))) == [
        "MSG-ABC-3",
        "msg-abc-1",
        "msg-abc-2",
    ]
    assert sorted(_names(store.query_rows(["$knowledge", ["$like", "name", "msg-ab_-1"]]))) == [
        "msg-abc-1",
        "msg-abd-1",
    ]
    assert _names(
        store.query_rows({"$knowledge": [["$like", "name", "sum-abc-%"]], "limit": 5, "offset": 0})
    ) == ["sum-abc-1-2"]


def test_statement_rows_csv_triple_and_idempotent_create(store: LiteStore) -> None:
    assert store.statement_create("Alice, Jr.", "knows", 'Bob "B"', data="d", scopes=["p", ""])
    assert not store.statement_create("Alice, Jr.", "knows", 'Bob "B"', data="changed")
    assert store.statement_create("a\nb", "rel", "c")
    rows = store.query_rows(["$statement", ["$triple", "Alice, Jr.", "knows", 'Bob "B"']])
    assert len(rows) == 1
    row = rows[0]
    assert set(row) == {"triple", "head", "relation", "tail", "content", "created_at"}
    assert row["triple"] == '"Alice, Jr.",knows,"Bob ""B"""'
    assert (row["head"], row["relation"], row["tail"]) == ("Alice, Jr.", "knows", 'Bob "B"')
    assert row["content"] == {
        "format": "markdown",
        "data": "d",
        "tags": [],
        "synonyms": None,
        "figures": None,
        "scopes": ["p", ""],
    }
    assert [
        r["triple"] for r in store.query_rows(["$statement", ["$triple", "$*", "rel", "$*"]])
    ] == ['"a\nb",rel,c']
    raw = store.query_rows(["$statement", ["$eq", "relation", "rel"]])
    typed = store.query(["$statement", ["$eq", "relation", "rel"]])
    assert typed == [StatementRow("a\nb", "rel", "c", Content(), raw[0]["created_at"])]
    assert typed[0].triple == '"a\nb",rel,c'  # type: ignore[union-attr]


def test_statement_query_shapes_used_by_the_layout(store: LiteStore) -> None:
    store.statement_create("wu-x-1", "derivedFrom", "sum-s1-1-4")
    store.statement_create("wu-x-2", "derivedFrom", "sum-s2-1-4")
    store.statement_create("wu-x-3", "refines", "sum-s1-1-4")
    rows = store.query_rows(
        {
            "$statement": [
                ["$and", ["$eq", "relation", "derivedFrom"], ["$like", "tail", "sum-s1-%"]]
            ],
            "limit": 10,
            "offset": 0,
        }
    )
    assert [r["head"] for r in rows] == ["wu-x-1"]
    for name in ("a", "b", "c"):
        store.knowledge_create(name, name)
    rows = store.query_rows(
        {
            "$knowledge": [["$or", ["$eq", "name", "a"], ["$eq", "name", "c"]]],
            "limit": 5,
            "offset": 0,
        }
    )
    assert _names(rows) == ["c", "a"]
    assert _names(
        store.query_rows(["$knowledge", ["$not", ["$eq", "name", "a"]], ["$ne", "name", "b"]])
    ) == ["c"]


def test_k_hop_follows_edges_forward(store: LiteStore) -> None:
    store.statement_create("a", "is_a", "b")
    store.statement_create("b", "is_a", "c")
    store.statement_create("c", "is_a", "d")
    store.statement_create("b", "likes", "z")
    one = store.query_rows(["$statement", ["$k-hop", "a", "is_a", 1]])
    assert [r["triple"] for r in one] == ["a,is_a,b"]
    two = store.query_rows(["$statement", ["$k-hop", "a", "$*", 2]])
    assert sorted(r["triple"] for r in two) == ["a,is_a,b", "b,is_a,c", "b,likes,z"]


def test_update_changes_only_given_fields(store: LiteStore) -> None:
    store.knowledge_create("k", "old", tags=["a"], scopes=["p"])
    created_at = store.knowledge_get_row("k")["created_at"]  # type: ignore[index]
    assert store.knowledge_update("k", data="new")
    assert not store.knowledge_update("k", data="new")
    assert store.knowledge_update("k", tags=[], scopes=[])
    row = store.knowledge_get_row("k")
    assert row == {
        "name": "k",
        "created_at": created_at,
        "content": {
            "format": "markdown",
            "data": "new",
            "tags": [],
            "synonyms": None,
            "figures": None,
            "scopes": None,
        },
    }
    assert not store.knowledge_update("k", scopes=[])  # null vs empty counts as unchanged
    with pytest.raises(NotFoundError, match=r"^not found: knowledge 'nope'$"):
        store.knowledge_update("nope", data="x")
    assert [r["key"] for r in store.search_rows("new")] == ["k"]
    assert store.search_rows("old") == []


def test_delete_keeps_statements(store: LiteStore) -> None:
    store.knowledge_create("k", "gone soon")
    store.statement_create("k", "is_a", "thing")
    assert store.knowledge_delete("k")
    assert not store.knowledge_delete("k")
    assert store.knowledge_get("k") is None
    assert store.search_rows("gone") == []
    assert [r["triple"] for r in store.query_rows(["$statement"])] == ["k,is_a,thing"]
    assert store.statement_delete("k", "is_a", "thing")
    assert not store.statement_delete("k", "is_a", "thing")
    assert store.query_rows(["$statement"]) == []


def test_large_content_round_trips(store: LiteStore) -> None:
    data = ("line of memory text é漢字\n" * 8000)[:180_000]
    assert len(data) == 180_000
    assert store.knowledge_create("big", data, tags=["message"])
    assert store.knowledge_get("big").content.data == data  # type: ignore[union-attr]


def test_lone_surrogates_become_replacement_characters(store: LiteStore) -> None:
    assert store.knowledge_create("sur\ud800", "a\udcffb \ud83d\ude00", tags=["t\udc80"])
    row = store.knowledge_get_row("sur\ud800")
    assert row is not None
    assert row["name"] == "sur\ufffd"
    assert row["content"]["data"] == "a\ufffdb \U0001f600"
    assert row["content"]["tags"] == ["t\ufffd"]
    assert _names(store.query_rows('["$knowledge", ["$eq", "name", "sur\\ud800"]]')) == [
        "sur\ufffd"
    ]
    assert store.statement_create("h\ud800", "r", "t")
    assert store.query_rows(["$statement"])[0]["head"] == "h\ufffd"


def test_dump_is_deterministic_and_complete(store: LiteStore) -> None:
    store.knowledge_create("b", "2", tags=["x"])
    store.knowledge_create("a", "1", scopes=[""])
    store.statement_create("b", "is_a", "a", data="edge")
    dump = store.dump()
    assert dump == {
        "knowledge": [
            {
                "name": "a",
                "content": {
                    "format": "markdown",
                    "data": "1",
                    "tags": [],
                    "synonyms": None,
                    "figures": None,
                    "scopes": [""],
                },
            },
            {
                "name": "b",
                "content": {
                    "format": "markdown",
                    "data": "2",
                    "tags": ["x"],
                    "synonyms": None,
                    "figures": None,
                    "scopes": None,
                },
            },
        ],
        "statements": [
            {
                "triple": "b,is_a,a",
                "head": "b",
                "relation": "is_a",
                "tail": "a",
                "content": {
                    "format": "markdown",
                    "data": "edge",
                    "tags": [],
                    "synonyms": None,
                    "figures": None,
                    "scopes": None,
                },
            },
        ],
    }
    timed = store.dump(include_created_at=True)
    assert all(CREATED_AT.match(r["created_at"]) for r in timed["knowledge"])


def test_second_store_on_same_shelf_sees_writes(store: LiteStore) -> None:
    store.knowledge_create("shared", "x")
    with LiteStore("default", home=store.home) as other:
        assert other.knowledge_get("shared") is not None
        assert not other.knowledge_create("shared", "y")
