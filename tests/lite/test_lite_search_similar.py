"""hypatia-lite full-text search (BM25 weights, punctuation) and vector similarity."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dsh_memory_worker.memory.store.base import Content, ModelUnavailableError, SearchRow
from hypatia_lite.embed import HashingEmbedder, embed_text
from hypatia_lite.store import LiteStore


@pytest.fixture
def store(tmp_path: Path) -> LiteStore:
    with LiteStore(home=tmp_path, embedder=HashingEmbedder()) as opened:
        yield opened


def test_search_row_shape_and_key_weight(store: LiteStore) -> None:
    store.knowledge_create("zebra", "an animal with stripes", tags=["animal"])
    store.knowledge_create("notes", "we saw a zebra at the zoo today", tags=["diary"])
    store.statement_create("zebra", "is_a", "animal", data="zebras are equids")
    rows = store.search_rows("zebra")
    assert [(r["catalog"], r["key"]) for r in rows] == [
        ("knowledge", "zebra"),
        ("statement", "zebra,is_a,animal"),
        ("knowledge", "notes"),
    ]
    first = rows[0]
    assert set(first) == {"id", "catalog", "key", "content", "rank"}
    assert isinstance(first["id"], int)
    assert first["content"] == (
        '{"format":"markdown","data":"an animal with stripes",'
        '"tags":["animal"],"synonyms":null,"figures":null,"scopes":null}'
    )
    assert [r["rank"] for r in rows] == sorted(r["rank"] for r in rows)
    assert all(r["rank"] < 0 for r in rows)
    assert [r["key"] for r in store.search_rows("zebra", catalog="statement")] == [
        "zebra,is_a,animal"
    ]
    assert [r["key"] for r in store.search_rows("zebra", limit=1)] == ["zebra"]
    assert [r["key"] for r in store.search_rows("zebra", limit=1, offset=2)] == ["notes"]
    typed = store.search("stripes")
    assert typed == [
        SearchRow(
            first["id"],
            "knowledge",
            "zebra",
            Content("an animal with stripes", tags=("animal",)),
            typed[0].rank,
        )
    ]


def test_search_terms_are_anded_and_punctuation_is_stripped(store: LiteStore) -> None:
    store.knowledge_create("msg-x-1", "alpha beta")
    store.knowledge_create("msg-y-2", "alpha gamma")
    assert [r["key"] for r in store.search_rows("msg-x-1")] == ["msg-x-1"]
    assert [r["key"] for r in store.search_rows("alpha AND beta")] == []  # AND is a word here
    assert [r["key"] for r in store.search_rows("alpha, beta!")] == ["msg-x-1"]
    assert store.search_rows("(*)") == []
    assert store.search_rows('"unbalanced') == []


def test_tags_outrank_data(store: LiteStore) -> None:
    store.knowledge_create("one", "kiwi", tags=["other"])
    store.knowledge_create("two", "nothing here", tags=["kiwi"])
    assert [r["key"] for r in store.search_rows("kiwi")] == ["two", "one"]


def test_similar_ranks_filters_and_skips_unembedded(store: LiteStore) -> None:
    store.knowledge_create("cats", "cats purr and chase mice", tags=["pets"])
    store.knowledge_create("dogs", "dogs bark and chase cats", tags=["pets", "loud"])
    store.knowledge_create("tax", "quarterly tax filing deadline", tags=["work"])
    store.knowledge_create("hidden", "cats purr and chase mice", tags=["pets"], embed=False)
    rows = store.similar_rows("cats purr", target="knowledge", limit=10)
    assert [r["name"] for r in rows] == ["cats", "dogs", "tax"]
    assert set(rows[0]) == {"name", "content", "distance"}
    assert rows[0]["content"]["data"] == "cats purr and chase mice"
    assert 0 <= rows[0]["distance"] < rows[1]["distance"] < rows[2]["distance"] <= 2
    assert [
        r["name"] for r in store.similar_rows("cats purr", limit=10, exclude_tags=["loud"])
    ] == ["cats", "tax"]
    assert [r["name"] for r in store.similar_rows("tax", limit=10, tags=["work"])] == ["tax"]
    assert [r["name"] for r in store.similar_rows("cats", limit=1)] == ["cats"]
    where = ["$like", "name", "d%"]
    assert [r["name"] for r in store.similar_rows("cats", where=where)] == ["dogs"]
    typed = store.similar("cats purr", exclude_tags=["work", "loud"])
    assert [(r.catalog, r.key) for r in typed] == [("knowledge", "cats")]
    assert store.pending_embeddings() == {"knowledge": 0, "statement": 0}


def test_similar_both_targets_carry_catalog(store: LiteStore) -> None:
    store.knowledge_create("cats", "cats purr")
    store.statement_create("cats", "chase", "mice")
    rows = store.similar_rows("cats", target="both", limit=5)
    assert {(r["catalog"], r.get("name") or r.get("triple")) for r in rows} == {
        ("knowledge", "cats"),
        ("statement", "cats,chase,mice"),
    }
    assert all(
        set(r) == {"catalog", "content", "distance", "name" if "name" in r else "triple"}
        for r in rows
    )


def test_update_reembeds(store: LiteStore) -> None:
    store.knowledge_create("k", "apples and pears")
    before = store.similar_rows("bicycle repair", limit=1)[0]["distance"]
    store.knowledge_update("k", data="bicycle repair")
    after = store.similar_rows("bicycle repair", limit=1)[0]["distance"]
    assert after < before
    assert after == pytest.approx(0.0, abs=0.35)


def test_no_embedder_means_model_unavailable(tmp_path: Path) -> None:
    with LiteStore(home=tmp_path, embedder=None) as store:
        assert store.knowledge_create("k", "x")
        with pytest.raises(
            ModelUnavailableError, match=r"^model unavailable: no embedding provider configured$"
        ):
            store.similar_rows("x")
    # entries written without an embedder are embedded once one is configured
    with LiteStore(home=tmp_path, embedder=HashingEmbedder()) as store:
        assert [r["name"] for r in store.similar_rows("x", limit=3)] == ["k"]


def test_hashing_embedder_is_deterministic_and_normalised() -> None:
    emb = HashingEmbedder()
    a, b, c = emb.embed(["memory worker", "memory worker", "tax deadline"])
    assert a == b
    assert len(a) == 384
    assert sum(x * x for x in a) == pytest.approx(1.0)
    assert a != c
    assert embed_text(["message", "summary 1"], "msg-1", "hi") == "message, summary 1\nmsg-1\nhi"
    assert embed_text([], "msg-1", "hi") == "msg-1\nhi"
    assert json.dumps(emb.embed([""])[0][:3]) == "[0.0, 0.0, 0.0]"
