"""One contract, every transport: hypatia-lite in-process, the CLI adapter over a ``hypatia-lite``
subprocess, the MCP adapter over ``hypatia-lite mcp`` — each on a SQLite shelf and on a PostgreSQL
shelf (``-pg``) — and a real ``hypatia`` (CLI and MCP) when one is on PATH (skipped otherwise).
The tests below run unchanged against each of them.

The adapters start hypatia-lite through the fork server's launcher (``store_contract.transports``:
each CLI call and each MCP server is still a separate process on the adapter's real pipes, with
its own argv, environment and exit status, only without an interpreter start-up each);
``test_cli_and_mcp_return_identical_rows_for_one_shelf[lite]`` drives both adapters over the
installed ``hypatia-lite`` console script as fresh processes, so the entry point stays covered."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest
from store_contract.transports import ALL_TRANSPORTS, Harness, open_harness, open_pair, pg_shelf

from dsh_memory_worker.memory.store.base import (
    Content,
    FatalStoreError,
    KnowledgeEntry,
    ModelUnavailableError,
    NotFoundError,
    SearchRow,
    SimilarRow,
    StatementRow,
    StoreError,
    csv_triple,
)
from dsh_memory_worker.memory.store.cli import CliStore, fit_data
from dsh_memory_worker.memory.store.factory import StoreConfig, open_store
from dsh_memory_worker.memory.store.mcp import McpStore

pytestmark = pytest.mark.integration

CREATED_AT = re.compile(r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\.\d{3}$")


def _marks(transport: str) -> list[pytest.MarkDecorator]:
    return [pytest.mark.real_hypatia] if transport.endswith("-hypatia") else []


@pytest.fixture(
    scope="module",
    params=[pytest.param(t, id=t, marks=_marks(t)) for t in ALL_TRANSPORTS],
)
def harness(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Harness]:
    home = tmp_path_factory.mktemp(f"store-{request.param}")
    opened = open_harness(request.param, home)
    try:
        yield opened
    finally:
        opened.close()


@pytest.fixture
def uid() -> str:
    """A per-test word: names, tags and search terms never collide between tests."""
    return "t" + uuid.uuid4().hex[:10]


def test_get_before_create_is_idempotent(harness: Harness, uid: str) -> None:
    store = harness.store
    name = f"msg-{uid}-1"
    assert store.knowledge_get(name) is None
    assert store.knowledge_create(name, "first write", tags=["message"], scopes=["proj"]) is True
    first = store.knowledge_get(name)
    assert isinstance(first, KnowledgeEntry)
    assert first.name == name
    assert first.content == Content(data="first write", tags=("message",), scopes=("proj",))
    assert CREATED_AT.match(first.created_at), first.created_at

    assert store.knowledge_create(name, "second write", tags=["other"]) is False
    assert store.knowledge_get(name) == first


def test_create_without_embedding(harness: Harness, uid: str) -> None:
    store = harness.store
    assert store.knowledge_create(f"raw-{uid}", "no vector", tags=["message"], embed=False)
    assert store.statement_create(f"raw-{uid}", "belongTo", f"session-{uid}", embed=False)
    entry = store.knowledge_get(f"raw-{uid}")
    assert entry is not None and entry.content == Content(data="no vector", tags=("message",))
    edges = store.query(["$statement", ["$triple", [f"raw-{uid}", "belongTo", f"session-{uid}"]]])
    assert len(edges) == 1


def test_statement_recreate_is_idempotent(harness: Harness, uid: str) -> None:
    store = harness.store
    head, tail = f"sum-{uid}-1-4", f"msg-{uid}-2"
    assert store.statement_create(head, "summary", tail, data="covers it") is True
    assert store.statement_create(head, "summary", tail, data="changed") is False
    rows = store.query(["$statement", ["$triple", [head, "summary", tail]]])
    assert len(rows) == 1
    row = rows[0]
    assert isinstance(row, StatementRow)
    assert (row.head, row.relation, row.tail) == (head, "summary", tail)
    assert row.triple == f"{head},summary,{tail}"
    assert row.content.data == "covers it"
    assert CREATED_AT.match(row.created_at)


def test_delete_of_a_missing_entry_returns_false(harness: Harness, uid: str) -> None:
    store = harness.store
    assert store.knowledge_delete(f"never-{uid}") is False
    assert store.statement_delete(f"never-{uid}", "summary", "x") is False
    assert store.knowledge_create(f"gone-{uid}", "bye") is True
    assert store.knowledge_delete(f"gone-{uid}") is True
    assert store.knowledge_get(f"gone-{uid}") is None
    assert store.statement_create(f"a-{uid}", "belongTo", f"b-{uid}") is True
    assert store.statement_delete(f"a-{uid}", "belongTo", f"b-{uid}") is True
    assert store.query(["$statement", ["$triple", [f"a-{uid}", "belongTo", f"b-{uid}"]]]) == []


def test_update_reports_changed_unchanged_and_missing(harness: Harness, uid: str) -> None:
    store = harness.store
    name = f"wu-{uid}-0000abcd"
    assert store.knowledge_create(name, "v1", tags=["work-unit"], scopes=["proj"]) is True
    before = store.knowledge_get(name)
    assert before is not None
    assert store.knowledge_update(name, data="v2") is True
    assert store.knowledge_update(name, data="v2") is False
    after = store.knowledge_get(name)
    assert after is not None
    assert after.content == Content(data="v2", tags=("work-unit",), scopes=("proj",))
    assert after.created_at == before.created_at
    with pytest.raises(NotFoundError):
        store.knowledge_update(f"never-{uid}", data="x")


def test_scopes_and_tags_round_trip(harness: Harness, uid: str) -> None:
    store = harness.store
    tag = f"summary {uid}"  # a tag with a space is legal
    assert store.knowledge_create(f"both-{uid}", "d", tags=["summary", tag], scopes=["proj", ""])
    assert store.knowledge_create(f"global-{uid}", "d", tags=[tag], scopes=[""])
    assert store.knowledge_create(f"none-{uid}", "d", tags=[tag])
    both = store.knowledge_get(f"both-{uid}")
    glob = store.knowledge_get(f"global-{uid}")
    none = store.knowledge_get(f"none-{uid}")
    assert both is not None and glob is not None and none is not None
    assert both.content.tags == ("summary", tag)
    assert both.content.scopes == ("proj", "")
    assert glob.content.scopes == ("",)
    assert none.content.scopes is None
    assert none.content.tags == (tag,)

    rows = store.query(["$knowledge", ["$contains", "tags", tag], ["$contains", "scopes", ""]])
    assert sorted(r.name for r in rows if isinstance(r, KnowledgeEntry)) == [
        f"both-{uid}",
        f"global-{uid}",
    ]
    rule = store.query(
        [
            "$knowledge",
            ["$contains", "tags", tag],
            ["$or", ["$contains", "scopes", "proj"], ["$contains", "scopes", ""]],
        ]
    )
    assert len(rule) == 2


def test_data_starting_with_a_dash_is_stored_verbatim(harness: Harness, uid: str) -> None:
    store = harness.store
    data = "--shelf other -n x\n- a list item"
    assert store.knowledge_create(f"dash-{uid}", data) is True
    entry = store.knowledge_get(f"dash-{uid}")
    assert entry is not None and entry.content.data == data
    assert store.statement_create(f"dash-{uid}", "is_a", "memory", data="-d") is True
    rows = store.query(["$statement", ["$triple", [f"dash-{uid}", "is_a", "memory"]]])
    assert [r.content.data for r in rows] == ["-d"]
    assert store.knowledge_get(f"-missing-{uid}") is None  # a name that looks like a flag


def test_180_kb_content(harness: Harness, uid: str) -> None:
    store = harness.store
    data = ("lorem ipsum ünïcödé 漢字 " * 8000)[:180_000]
    assert len(data.encode("utf-8")) > 180_000
    assert store.knowledge_create(f"big-{uid}", data) is True
    entry = store.knowledge_get(f"big-{uid}")
    assert entry is not None
    if harness.max_data_bytes is None:
        assert entry.content.data == data
    else:  # the CLI's command line holds 96 KiB: cut on a UTF-8 boundary, with the marker
        assert entry.content.data == fit_data(data, harness.max_data_bytes)
        assert re.search(
            r"\n\n\[\.\.\.truncated \d+ bytes to fit the command line\]$", entry.content.data
        )


def test_lone_surrogates_become_replacement_characters(harness: Harness, uid: str) -> None:
    store = harness.store
    assert store.knowledge_create(f"sur-{uid}", "a\ud800b\udfffc", tags=["message"]) is True
    entry = store.knowledge_get(f"sur-{uid}")
    assert entry is not None and entry.content.data == "a\ufffdb\ufffdc"


def test_search_rows(harness: Harness, uid: str) -> None:
    store = harness.store
    assert store.knowledge_create(f"s1-{uid}", f"the {uid} appears once", tags=["message"])
    assert store.knowledge_create(f"s2-{uid}", "nothing here", tags=[uid])
    assert store.statement_create(f"s1-{uid}", "belongTo", f"session-{uid}", data=uid)
    rows = store.search(uid, catalog="knowledge", limit=10)
    assert all(isinstance(r, SearchRow) for r in rows)
    assert sorted(r.key for r in rows) == [f"s1-{uid}", f"s2-{uid}"]
    assert {r.catalog for r in rows} == {"knowledge"}
    by_key = {r.key: r for r in rows}
    assert by_key[f"s1-{uid}"].content == Content(data=f"the {uid} appears once", tags=("message",))
    assert all(isinstance(r.id, int) and r.id > 0 and isinstance(r.rank, float) for r in rows)
    assert [r.rank for r in rows] == sorted(r.rank for r in rows)

    both = store.search(uid, limit=10)
    assert {(r.catalog, r.key) for r in both} == {
        ("knowledge", f"s1-{uid}"),
        ("knowledge", f"s2-{uid}"),
        ("statement", csv_triple(f"s1-{uid}", "belongTo", f"session-{uid}")),
    }
    assert store.search(f"zz{uid}absent", catalog="knowledge", limit=5) == []


def test_similar_rows_or_model_unavailable(harness: Harness, uid: str) -> None:
    store = harness.store
    text = f"{uid} kubernetes cluster upgrade"
    assert store.knowledge_create(f"v1-{uid}", text, tags=["message"])
    assert store.knowledge_create(f"v2-{uid}", f"{uid} kubernetes cluster", tags=["summary"])
    if not harness.semantic:
        with pytest.raises(ModelUnavailableError):
            store.similar(f"{uid} kubernetes", limit=5)
        return
    rows = store.similar(f"{uid} kubernetes cluster upgrade", target="knowledge", limit=50)
    assert all(isinstance(r, SimilarRow) and r.catalog == "knowledge" for r in rows)
    keys = [r.key for r in rows]
    assert keys[0] == f"v1-{uid}"
    assert f"v2-{uid}" in keys
    assert [r.distance for r in rows] == sorted(r.distance for r in rows)
    assert rows[0].content == Content(data=f"{uid} kubernetes cluster upgrade", tags=("message",))
    filtered = store.similar(f"{uid} kubernetes cluster", limit=50, exclude_tags=["message"])
    assert f"v1-{uid}" not in [r.key for r in filtered]
    assert f"v2-{uid}" in [r.key for r in filtered]


def test_query_row_shapes_and_order(harness: Harness, uid: str) -> None:
    store = harness.store
    for n in (1, 2, 3):
        assert store.knowledge_create(f"msg-{uid}-{n}", f"m{n}", tags=["message"], scopes=["p"])
    rows = store.query({"$knowledge": [["$like", "name", f"msg-{uid}-%"]], "limit": 2})
    assert len(rows) == 2 and all(isinstance(r, KnowledgeEntry) for r in rows)
    stamps = [r.created_at for r in rows]
    assert stamps == sorted(stamps, reverse=True)  # newest first
    assert store.statement_create(f"sum-{uid}-1-3", "derivedFrom", f"msg-{uid}-1") is True
    edges = store.query(
        {
            "$statement": [
                ["$and", ["$eq", "relation", "derivedFrom"], ["$like", "head", f"sum-{uid}-%"]]
            ],
            "limit": 10,
            "offset": 0,
        }
    )
    assert len(edges) == 1
    assert edges[0] == StatementRow(
        f"sum-{uid}-1-3", "derivedFrom", f"msg-{uid}-1", Content(), edges[0].created_at
    )
    as_text = store.query('{"$knowledge": [["$eq", "name", "msg-' + uid + '-2"]]}')
    assert [r.content.data for r in as_text] == ["m2"]
    assert store.query(["$knowledge", ["$eq", "name", f"none-{uid}"]]) == []


def test_not_summaried_excludes_summary_tails(harness: Harness, uid: str) -> None:
    store = harness.store
    tag, scope = f"summary {uid}", f"proj-{uid}"
    for n in (1, 2, 3):
        assert store.knowledge_create(f"e{n}-{uid}", f"e{n}", tags=[tag], scopes=[scope])
    assert store.knowledge_create(f"other-{uid}", "x", tags=[tag], scopes=["elsewhere"])
    expr = {"$not-summaried": [tag, ["$contains", "scopes", scope]], "limit": 10}
    assert sorted(r.name for r in store.query(expr) if isinstance(r, KnowledgeEntry)) == [
        f"e1-{uid}",
        f"e2-{uid}",
        f"e3-{uid}",
    ]
    assert store.statement_create(f"sum1-{uid}", "summary", f"e2-{uid}") is True
    rows = store.query(expr)
    assert [r.name for r in rows if isinstance(r, KnowledgeEntry)] == [f"e1-{uid}", f"e3-{uid}"]
    stamps = [r.created_at for r in rows]
    assert stamps == sorted(stamps)  # oldest first
    with pytest.raises(FatalStoreError, match="unexpected node in condition context"):
        store.query(["$not-summaried", tag, ["$contains", "scopes", scope], {"limit": 1}])


def test_errors_are_one_line_store_errors(harness: Harness, uid: str) -> None:
    with pytest.raises(StoreError) as caught:
        harness.store.query(["$bogus-operator", uid])
    assert isinstance(caught.value, FatalStoreError)
    assert "\n" not in str(caught.value) and str(caught.value)


@pytest.mark.parametrize(
    "family",
    [
        pytest.param("lite"),
        pytest.param("lite-pg"),
        pytest.param("hypatia", marks=_marks("-hypatia")),
    ],
)
def test_cli_and_mcp_return_identical_rows_for_one_shelf(family: str, tmp_path: Path) -> None:
    with ExitStack() as stack:
        shelf = stack.enter_context(pg_shelf(tmp_path)) if family == "lite-pg" else "default"
        # [lite]: the installed console script itself, a fresh interpreter per call and server.
        fresh = family == "lite"
        _identical_rows(*open_pair(family.removesuffix("-pg"), tmp_path, shelf, fresh=fresh))


def _identical_rows(cli: CliStore, mcp: McpStore) -> None:
    try:
        assert cli.features() == mcp.features()
        word = "w" + uuid.uuid4().hex[:8]
        assert cli.knowledge_create(
            f"msg-{word}-1", f"{word} one", tags=["message"], scopes=["proj", ""]
        )
        assert mcp.knowledge_create(
            f"msg-{word}-2", f"{word} two", tags=["message"], scopes=["", "proj"]
        )
        assert mcp.statement_create(f"sum-{word}-1-2", "summary", f"msg-{word}-1")
        expr = {"$not-summaried": ["message", ["$contains", "scopes", "proj"]], "limit": 10}
        like = {"$knowledge": [["$like", "name", f"msg-{word}-%"]], "limit": 10}
        for jse in (expr, like, ["$statement", ["$eq", "relation", "summary"]]):
            assert cli.query(jse) == mcp.query(jse)
        assert cli.search(word, catalog="knowledge", limit=5) == mcp.search(
            word, catalog="knowledge", limit=5
        )
        one, two = (cli.knowledge_get(f"msg-{word}-{n}") for n in (1, 2))
        assert two == mcp.knowledge_get(f"msg-{word}-2")
        assert one is not None and two is not None
        assert one.content.scopes == two.content.scopes == ("proj", "")
        assert [r.name for r in mcp.query(expr) if isinstance(r, KnowledgeEntry)] == [
            f"msg-{word}-2"
        ]
    finally:
        mcp.close()
        cli.close()


def test_factory_rejects_bad_configuration_with_one_line_errors(tmp_path: Path) -> None:
    with pytest.raises(FatalStoreError, match="unknown store transport 'grpc'"):
        open_store(StoreConfig(transport="grpc", lite_home=tmp_path))  # type: ignore[arg-type]
    with pytest.raises(FatalStoreError, match="invalid shelf name 'two words'"):
        open_store(StoreConfig(shelf="two words", lite_home=tmp_path))
    with pytest.raises(FatalStoreError, match="invalid store timeout 0"):
        open_store(StoreConfig(transport="cli", timeout_s=0))
    cli = open_store(StoreConfig(transport="cli", binary="hypatia-lite", shelf="s1", timeout_s=5))
    mcp = open_store(StoreConfig(transport="mcp", binary="hypatia-lite", idle_close_s=7))
    assert isinstance(cli, CliStore) and (cli.shelf, cli.binary, cli.timeout_s) == (
        "s1",
        "hypatia-lite",
        5,
    )
    assert isinstance(mcp, McpStore) and (mcp.shelf, mcp.idle_close_s) == ("default", 7)
    mcp.close()


def test_cli_adapter_reports_a_missing_binary(tmp_path: Path) -> None:
    store = CliStore("default", str(tmp_path / "no-such-hypatia"))
    with pytest.raises(FatalStoreError, match="hypatia binary not found"):
        store.knowledge_get("x")
