"""How hypatia-lite's ``similar`` ranks: any-word BM25 fused with the vectors kept in memory.

Small data made here; the LoCoMo figures come from benchmarks/recall_bench.py."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pytest

from hypatia_lite import shelves
from hypatia_lite.embed import HashingEmbedder
from hypatia_lite.fusion import fuse
from hypatia_lite.lexical import content_words
from hypatia_lite.store import LiteStore


class TableEmbedder:
    """Vectors looked up by the text's last line (the data): exact, known cosines."""

    identity = "test/table-3"
    fusion_weight = 0.25

    def __init__(self, table: dict[str, list[float]]) -> None:
        self.table = table
        self.calls = 0

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls += 1
        out = []
        for text in texts:
            vec = np.asarray(self.table.get(text.splitlines()[-1], [0.0, 0.0, 1.0]), dtype=float)
            out.append((vec / np.linalg.norm(vec)).tolist())
        return out


@pytest.fixture
def store(tmp_path: Path) -> Iterator[LiteStore]:
    with LiteStore(home=tmp_path, embedder=HashingEmbedder()) as opened:
        yield opened


def names(rows: list[dict[str, object]]) -> list[object]:
    return [r.get("name") or r.get("triple") for r in rows]


def test_content_words_drop_function_words_only() -> None:
    assert content_words("When did Melanie paint a sunrise?") == ["Melanie", "paint", "sunrise"]
    assert content_words("What is it?") == []


def test_a_shared_rare_word_outranks_shared_function_words(store: LiteStore) -> None:
    # the hashing vectors alone put "chatter" first: it shares "when did you do it" with the query
    store.knowledge_create("chatter", "when did you do it, what did they do")
    store.knowledge_create("sunrise", "[Melanie] I painted that lake sunrise last year")
    store.knowledge_create("tax", "quarterly tax filing deadline")
    query = "When did you do the sunrise painting?"
    assert names(store.similar_rows(query, limit=3)) == ["sunrise", "chatter", "tax"]
    # the vector half alone says "chatter": the words decide
    vecs = HashingEmbedder().embed([query, "chatter\nwhen did you do it, what did they do"])
    sun = HashingEmbedder().embed(["sunrise\n[Melanie] I painted that lake sunrise last year"])
    assert np.dot(vecs[0], vecs[1]) > np.dot(vecs[0], sun[0])


def test_vectors_find_what_shares_no_word(tmp_path: Path) -> None:
    table = {
        "feline companions": [1.0, 0.1, 0.0],
        "tax forms": [0.0, 1.0, 0.0],
        "a kitten": [0.9, 0.2, 0.0],
    }
    with LiteStore(home=tmp_path, embedder=TableEmbedder(table)) as store:
        store.knowledge_create("cats", "feline companions")
        store.knowledge_create("taxes", "tax forms")
        rows = store.similar_rows("a kitten", limit=2)
    assert names(rows) == ["cats", "taxes"]
    q = np.array([0.9, 0.2, 0.0]) / np.linalg.norm([0.9, 0.2, 0.0])
    cats = np.array([1.0, 0.1, 0.0]) / np.linalg.norm([1.0, 0.1, 0.0])
    taxes = np.array([0.0, 1.0, 0.0])
    assert rows[0]["distance"] == pytest.approx(1 - q @ cats, abs=1e-6)
    assert rows[1]["distance"] == pytest.approx(1 - q @ taxes, abs=1e-6)


def test_unembedded_rows_are_never_returned_even_when_the_words_match(store: LiteStore) -> None:
    store.knowledge_create("msg-1", "zebra stripes zebra stripes", embed=False)
    store.knowledge_create("wu-zebra", "an animal", tags=["zebra"])
    store.knowledge_create("other", "quarterly taxes")
    store.statement_create("zebra", "has", "stripes", embed=False)
    assert names(store.similar_rows("zebra stripes", limit=10)) == ["wu-zebra", "other"]
    assert names(store.similar_rows("zebra stripes", target="statement")) == []


def test_filters_hold_for_the_lexical_half(store: LiteStore) -> None:
    store.knowledge_create("a", "the zebra crossing", tags=["road"])
    store.knowledge_create("b", "a zebra at the zoo", tags=["animal"])
    store.knowledge_create("c", "nothing in common", tags=["animal"])
    assert names(store.similar_rows("zebra", exclude_tags=["animal"])) == ["a"]
    assert names(store.similar_rows("zebra", tags=["animal"])) == ["b", "c"]
    assert names(store.similar_rows("zebra", where=["$eq", "name", "c"])) == ["c"]


def test_both_catalogs_merge_by_score(store: LiteStore) -> None:
    store.knowledge_create("giraffe", "long neck")
    store.statement_create("zebra", "has", "stripes", data="zebra stripes")
    rows = store.similar_rows("zebra stripes", target="both", limit=2)
    assert [(r["catalog"], names([r])[0]) for r in rows] == [
        ("statement", "zebra,has,stripes"),
        ("knowledge", "giraffe"),
    ]


def test_the_kept_vectors_follow_every_change(tmp_path: Path) -> None:
    table = {"north": [1.0, 0.0, 0.0], "south": [0.0, 1.0, 0.0], "up": [0.0, 0.0, 1.0]}
    shelves.connect(tmp_path, tmp_path / "s", "s")
    embedder = TableEmbedder(table)
    with LiteStore("s", home=tmp_path, embedder=embedder) as store:
        store.knowledge_create("one", "north")
        store.knowledge_create("two", "south")
        assert names(store.similar_rows("north", limit=1)) == ["one"]
        # an update in place (same row, new vector)
        store.knowledge_update("one", data="up")
        top = store.similar_rows("north", limit=2)
        assert [(names([r])[0], round(r["distance"], 6)) for r in top] == [
            ("one", 1.0),
            ("two", 1.0),
        ]
        # another connection (another process would do the same) adds, deletes, updates
        with LiteStore("s", home=tmp_path, embedder=embedder) as other:
            other.knowledge_create("three", "north")
            assert names(store.similar_rows("north", limit=1)) == ["three"]
            other.knowledge_delete("three")
            assert names(store.similar_rows("north", limit=3)) == ["one", "two"]
            other.knowledge_update("two", data="north")
        assert names(store.similar_rows("north", limit=1)) == ["two"]
        # this store appends: only the new row is read, and found
        store.knowledge_create("four", "north")
        rows = store.similar_rows("north", limit=3)
        assert names(rows) == ["two", "four", "one"]
        assert [round(r["distance"], 6) for r in rows] == [0.0, 0.0, 1.0]


def test_fuse_adds_normalised_words_to_standardised_cosines() -> None:
    ids = np.array([3, 5, 9], dtype=np.int64)
    sims = np.array([0.9, 0.5, 0.1])  # mean 0.5, std 0.3266
    got = fuse(ids, sims, {9: 1.0, 5: 0.5}, 0.25, 3)
    z = (sims - 0.5) / sims.std()
    want = [(0.25 * z[2] + 1.0, 9, 0.1), (0.25 * z[1] + 0.5, 5, 0.5), (0.25 * z[0], 3, 0.9)]
    assert [(round(s, 9), i, round(c, 9)) for s, i, c in got] == [
        (round(s, 9), i, round(c, 9)) for s, i, c in want
    ]
    assert fuse(ids, sims, {}, 0.25, 2) == [(0.25 * z[0], 3, 0.9), (0.0, 5, 0.5)]
    assert fuse(ids, sims, {42: 1.0}, 0.25, 0) == []
    assert [i for _, i, _ in fuse(ids, np.zeros(3), {}, 0.25, 3)] == [3, 5, 9]  # ties: id order


@pytest.mark.integration
def test_the_postgresql_shelf_ranks_like_the_sqlite_shelf(tmp_path: Path, pg_url: str) -> None:
    from hypatia_lite import shelves

    shelf = "pg"

    def fill(store: LiteStore) -> None:
        store.knowledge_create("msg-1", "zebra stripes zebra stripes", embed=False)
        store.knowledge_create("road", "the zebra crossing on the high street", tags=["road"])
        store.knowledge_create("zoo", "a zebra and a lion at the zoo", tags=["animal"])
        store.knowledge_create("tax", "quarterly tax filing deadline", tags=["work"])
        store.statement_create("zebra", "has", "stripes", data="zebra stripes")

    def answers(store: LiteStore) -> list[list[tuple[object, float]]]:
        asks = [
            store.similar_rows("Where did we see the zebra?"),
            store.similar_rows("zebra", exclude_tags=["animal"]),
            store.similar_rows("zebra lion", tags=["animal", "work"]),
            store.similar_rows("zebra stripes", target="both", limit=3),
            store.similar_rows("what is it"),  # function words only: vectors alone
        ]
        return [[(names([r])[0], round(r["distance"], 5)) for r in rows] for rows in asks]

    (tmp_path / "lite").mkdir()
    with LiteStore(home=tmp_path / "lite", embedder=HashingEmbedder()) as lite:
        fill(lite)
        expected = answers(lite)
    shelves.connect(tmp_path / "pg", pg_url, shelf)
    with LiteStore(shelf, home=tmp_path / "pg", embedder=HashingEmbedder()) as pg:
        fill(pg)
        assert answers(pg) == expected
        assert [n for n, _ in expected[0]] == ["road", "zoo", "tax"]
        # another connection rewrites a vector in place: the kept matrix follows
        with LiteStore(shelf, home=tmp_path / "pg", embedder=HashingEmbedder()) as other:
            other.knowledge_update("tax", data="zebra zebra zebra")
        assert names(pg.similar_rows("zebra", limit=1)) == ["tax"]


def test_a_limit_past_one_fetch_returns_every_row_once(tmp_path: Path) -> None:
    from hypatia_lite.protocol import EntryWrite

    with LiteStore(home=tmp_path, embedder=HashingEmbedder(16)) as store:
        store.write_batch([EntryWrite(f"e{i:05d}", f"entry number {i}") for i in range(1200)])
        rows = store.similar_rows("entry number 7", limit=5000)
    assert len(rows) == 1200
    assert len({r["name"] for r in rows}) == 1200
    assert rows[0]["name"] == "e00007"
