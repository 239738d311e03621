"""Full-text search helpers: Hypatia's query clean-up and its FTS document columns.

Columns (weights as in Hypatia's ``bm25``): key 10, data 1, tags 5, synonyms 3; tokenizer
``porter unicode61`` (a PostgreSQL shelf: the same weights for ``ts_rank`` and an English
snowball stemmer without stop words, see ``pg/schema.py``). Unlike Hypatia, CJK text is not
segmented with jieba: a run of CJK characters is one token.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from hypatia_lite.dialect import SQLITE
from hypatia_lite.sqlitelib import sqlite3

BM25 = "bm25(docs_fts, 10.0, 1.0, 5.0, 3.0)"
_PUNCT = re.compile(r"[:\"'*^+\-().?!,/\\`{}\[\]~@#%;&|<>]")


def fts_words(query: str) -> list[str]:
    """The words of a search query, Hypatia's punctuation removed (all of them must match)."""
    return _PUNCT.sub(" ", query).split()


def fts_match(query: str) -> str | None:
    """An FTS5 MATCH expression ANDing the words of ``query``; None when no word is left."""
    words = fts_words(query)
    return SQLITE.fts_param(words) if words else None


def _synonym_words(synonyms: Any) -> list[str]:
    if isinstance(synonyms, list):
        return [str(s) for s in synonyms]
    if isinstance(synonyms, Mapping):
        return [str(s) for v in synonyms.values() if isinstance(v, list) for s in v]
    return []


def doc_columns(key: str, content: Mapping[str, Any]) -> tuple[str, str, str, str]:
    """``(fts_key, fts_data, fts_tags, fts_synonyms)`` for one entry."""
    synonyms = content.get("synonyms")
    return (
        key,
        str(content.get("data") or ""),
        " ".join(map(str, content.get("tags") or ())),
        "" if synonyms is None else " ".join(_synonym_words(synonyms)),
    )


_UPSERT_DOC = (
    "INSERT INTO docs(catalog, key, fts_key, fts_data, fts_tags, fts_synonyms)"
    " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(catalog, key) DO UPDATE SET"
    " fts_key = excluded.fts_key, fts_data = excluded.fts_data,"
    " fts_tags = excluded.fts_tags, fts_synonyms = excluded.fts_synonyms"
)
_INDEX_NEW_DOCS = (
    "INSERT INTO docs_fts(rowid, fts_key, fts_data, fts_tags, fts_synonyms)"
    " SELECT id, fts_key, fts_data, fts_tags, fts_synonyms FROM docs WHERE id > ? ORDER BY id"
)


#: ``(catalog, key, fts_key, fts_data, fts_tags, fts_synonyms)``: one ``docs`` row.
DocRow = tuple[str, ...]


def doc_row(catalog: str, key: str, content: Mapping[str, Any]) -> DocRow:
    """The ``docs`` row of one entry or statement."""
    return (catalog, key, *doc_columns(key, content))


def put_docs(conn: sqlite3.Connection, docs: Iterable[tuple[str, str, Mapping[str, Any]]]) -> None:
    """Create or replace the FTS documents of ``(catalog, key, content)`` items. Call it inside
    the write transaction that writes the entries."""
    put_doc_rows(conn, [doc_row(catalog, key, content) for catalog, key, content in docs])


def put_doc_rows(conn: sqlite3.Connection, rows: list[DocRow]) -> None:
    """:func:`put_docs` for rows built already (:func:`doc_row`: a batch builds them before it
    takes the write lock).

    A replaced document is re-indexed by the ``docs_au`` trigger. New documents are indexed
    here by one ``INSERT … SELECT`` over the ids this call created (``docs.id`` is
    AUTOINCREMENT, and the write transaction keeps other writers out). There is no insert
    trigger: FTS5 flushes its pending terms at the end of every trigger program, so indexing
    row by row from a trigger wrote one index segment per document and cost about four times
    as much on small documents.
    """
    if not rows:
        return
    before = conn.execute("SELECT coalesce(max(id), 0) FROM docs").fetchone()[0]
    conn.executemany(_UPSERT_DOC, rows)
    conn.execute(_INDEX_NEW_DOCS, (before,))
