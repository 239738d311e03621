"""hypatia-lite JSE: malformed expressions fail with Hypatia's error prefixes, never a crash."""

from __future__ import annotations

from pathlib import Path

import pytest

from dsh_memory_worker.memory.store.base import StoreError
from hypatia_lite.jse import JSEError
from hypatia_lite.store import LiteStore


@pytest.fixture
def store(tmp_path: Path) -> LiteStore:
    with LiteStore(home=tmp_path) as opened:
        opened.knowledge_create("k", "x", tags=["message"])
        yield opened


@pytest.mark.parametrize(
    ("jse", "message"),
    [
        ("not json", r"^JSE parse error: invalid JSON: "),
        ('["$knowledge", ', r"^JSE parse error: invalid JSON: "),
        (
            '["$foo"]',
            r"^JSE evaluation error: top level must be \$knowledge, \$statement or "
            r"\$not-summaried, got \$foo$",
        ),
        ("[]", r"^JSE evaluation error: top level must be"),
        (
            '["$knowledge", "$eq", "name", "k"]',
            r'^JSE evaluation error: unexpected node in condition context: "\$eq" — a nested call '
            r"needs its own array",
        ),
        (
            '["$not-summaried", "message", {"limit": 1}]',
            r'^JSE evaluation error: unexpected node in condition context: \{"limit": 1\}$',
        ),
        ('["$knowledge", ["$eq", "name"]]', r"^JSE evaluation error: \$eq takes a field name"),
        (
            '["$knowledge", ["$eq", "head", "x"]]',
            r"^JSE evaluation error: knowledge entries do not have 'head'$",
        ),
        (
            '["$statement", ["$eq", "name", "x"]]',
            r"^JSE evaluation error: statement entries do not have 'name'$",
        ),
        (
            '["$knowledge", ["$eq", "bad path!", "x"]]',
            r"^JSE evaluation error: invalid field path 'bad path!'$",
        ),
        (
            '["$statement", ["$triple", "$*", "$*", "$*"]]',
            r'^JSE evaluation error: \$triple needs at least one field that is not the "\$\*"',
        ),
        (
            '["$knowledge", ["$triple", "a", "b", "c"]]',
            r"^JSE evaluation error: \$triple applies to statements only$",
        ),
        (
            '{"$knowledge": [], "$statement": []}',
            r"^JSE evaluation error: an object expression needs exactly one operator key",
        ),
        (
            '{"$knowledge": [], "limit": -1}',
            r"^JSE evaluation error: option 'limit' must be a non-negative integer, got -1$",
        ),
        ('{"$knowledge": [], "sort": "name"}', r"^JSE evaluation error: unknown option 'sort'$"),
        ('["$not-summaried"]', r"^JSE evaluation error: \$not-summaried needs a tag string"),
        (
            '["$knowledge", ["$not", ["$eq", "name", "a"], ["$eq", "name", "b"]]]',
            r"^JSE evaluation error: \$not takes exactly one condition$",
        ),
        (
            '["$knowledge", ["$like", "name", 3]]',
            r"^JSE evaluation error: \$like needs a string pattern, got 3$",
        ),
    ],
)
def test_bad_expressions_fail_with_one_clear_line(store: LiteStore, jse: str, message: str) -> None:
    with pytest.raises(JSEError, match=message) as caught:
        store.query_rows(jse)
    assert isinstance(caught.value, StoreError)
    assert "\n" not in str(caught.value)


def test_values_and_field_references(store: LiteStore) -> None:
    store.knowledge_create("$odd", "y")
    assert [r["name"] for r in store.query_rows(["$knowledge", ["$eq", "name", "$$odd"]])] == [
        "$odd"
    ]
    assert [r["name"] for r in store.query_rows(["$knowledge", ["$eq", "$name", "k"]])] == ["k"]
    assert [
        r["name"]
        for r in store.query_rows(["$knowledge", ["$content", {"data": "x", "tags": ["message"]}]])
    ] == ["k"]
    assert [r["name"] for r in store.query_rows(["$knowledge", ["$eq", "tags[0]", "message"]])] == [
        "k"
    ]
    assert [r["name"] for r in store.query_rows(["$knowledge", ["$search", "x"]])] == ["k"]
