"""Batched writes for ``LiteStore``: many entries and statements in ONE transaction.

The outcome equals ``knowledge_create`` for each entry (in order) followed by
``statement_create`` for each statement (in order) — same rows, same contents, same FTS
documents, ``created_at`` from the same clock with ``id`` breaking ties in insertion order —
but all of it commits at once or not at all, so a crash mid-batch leaves nothing of it behind.
Vectors for entries that want one are computed in one embedder call, before the transaction
(an embedding failure never fails the write: those rows stay owed, as with single writes).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from hypatia_lite.backend import Backend, Connection
from hypatia_lite.embed import Embedder, EmbeddingError, embed_text, pack
from hypatia_lite.fts import doc_row
from hypatia_lite.protocol import BatchResult, EntryWrite, StatementWrite, csv_triple
from hypatia_lite.rows import ContentShape, well_formed

_INSERT_KNOWLEDGE = (
    "INSERT INTO knowledge(name, content, created_at, embed_wanted, embedding, embedding_model)"
    " VALUES (?, ?, {now}, ?, ?, ?) ON CONFLICT(name) DO NOTHING"
)
_INSERT_STATEMENT = (
    "INSERT INTO statement(triple, head, relation, tail, content, created_at, embed_wanted,"
    " embedding, embedding_model) VALUES (?, ?, ?, ?, ?, {now}, ?, ?, ?)"
    " ON CONFLICT(triple) DO NOTHING"
)
_LOOKUP = 500  # names per existence probe (below SQLite's bound-parameter limit)


@dataclass(slots=True)
class _Row:
    catalog: str  # "knowledge" | "statement"
    key: str  # name or CSV triple
    params: tuple[Any, ...]  # the columns before created_at
    content: dict[str, Any]
    embed: bool
    given: str  # the name / triple as the caller spelled it (reported back)
    blob: bytes | None = None
    model: str | None = None
    values: tuple[Any, ...] = ()  # the INSERT's parameters (set once the vector is known)
    doc: tuple[str, ...] = ()  # the full-text document row (``fts.DocRow``)


def _entry_rows(entries: Sequence[EntryWrite]) -> list[_Row]:
    # The entries of one batch mostly share their tags and scopes: clean and print those once.
    shapes: dict[tuple[tuple[str, ...], tuple[str, ...] | None, bool], ContentShape] = {}
    rows: list[_Row] = []
    for entry in entries:
        key = (entry.tags, entry.scopes, entry.embed)
        shape = shapes.get(key)
        if shape is None:
            shape = shapes[key] = ContentShape(entry.tags, entry.scopes, entry.embed)
        name = well_formed(entry.name)
        content, text = shape.make(entry.data)
        rows.append(_Row("knowledge", name, (name, text), content, entry.embed, entry.name))
    return rows


def _statement_rows(statements: Sequence[StatementWrite]) -> list[_Row]:
    # The edges of one batch mostly share their content (same data and scopes): build each
    # distinct Content object (and its JSON text) once.
    contents: dict[tuple[str, tuple[str, ...] | None, bool], tuple[dict[str, Any], str]] = {}
    rows: list[_Row] = []
    for statement in statements:
        given_head, given_relation, given_tail = statement.head, statement.relation, statement.tail
        head, relation, tail = (
            well_formed(given_head),
            well_formed(given_relation),
            well_formed(given_tail),
        )
        triple = csv_triple(head, relation, tail)
        key = (statement.data, statement.scopes, statement.embed)
        shared = contents.get(key)
        if shared is None:
            shared = contents[key] = ContentShape((), statement.scopes, statement.embed).make(
                statement.data
            )
        given = (
            triple
            if (head == given_head and relation == given_relation and tail == given_tail)
            else statement.triple
        )
        rows.append(
            _Row(
                "statement",
                triple,
                (triple, head, relation, tail, shared[1]),
                shared[0],
                statement.embed,
                given,
            )
        )
    return rows


def _existing(conn: Connection, catalog: str, keys: list[str]) -> set[str]:
    column = "name" if catalog == "knowledge" else "triple"
    found: set[str] = set()
    for i in range(0, len(keys), _LOOKUP):
        chunk = keys[i : i + _LOOKUP]
        marks = ", ".join("?" for _ in chunk)
        found.update(
            r[0]
            for r in conn.execute(
                f"SELECT {column} FROM {catalog} WHERE {column} IN ({marks})", chunk
            ).fetchall()
        )
    return found


def _embed(
    rows: list[_Row],
    embedder: Embedder | None,
    backend: Backend,
    run: Callable[[Callable[[], set[str]]], set[str]],
) -> None:
    """Vectors for the rows that want one and do not exist yet, in one embedder call."""
    wanted = [r for r in rows if r.embed]
    if embedder is None or not wanted:
        return
    present: dict[str, set[str]] = {}
    for catalog in ("knowledge", "statement"):
        keys = [r.key for r in wanted if r.catalog == catalog]
        present[catalog] = (
            run(
                lambda c=catalog, k=keys: _existing(backend.conn, c, k)  # type: ignore[misc]
            )
            if keys
            else set()
        )
    todo = [r for r in wanted if r.key not in present[r.catalog]]
    if not todo:
        return
    texts = [embed_text(r.content["tags"], r.key, r.content["data"]) for r in todo]
    try:
        vectors = embedder.embed(texts)
    except EmbeddingError:
        return  # the rows stay owed a vector (backfilled by the next ``similar``)
    for row, vec in zip(todo, vectors, strict=True):
        row.blob, row.model = pack(vec), embedder.identity


def write_batch(
    backend: Backend,
    embedder: Embedder | None,
    run: Callable[[Callable[[], Any]], Any],
    entries: Sequence[EntryWrite],
    statements: Sequence[StatementWrite],
    skip_tags: frozenset[str] = frozenset(),
) -> BatchResult:
    """Create the absent ``entries`` then ``statements`` in one transaction (see module doc).
    ``run`` is the store's locked runner (lock retries, database errors as ``StoreError``);
    an entry carrying one of ``skip_tags`` gets no vector (its content is as written)."""
    rows = _entry_rows(entries) + _statement_rows(statements)
    if not rows:
        return BatchResult()
    if skip_tags:
        for row in rows:
            if row.catalog == "knowledge" and any(t in skip_tags for t in row.content["tags"]):
                row.embed = False
    _embed(rows, embedder, backend, run)
    # Everything that needs no database is built before the write lock is taken: with several
    # processes on one SQLite shelf the lock is held only for the statements themselves.
    for r in rows:
        r.values = (*r.params, int(r.embed), r.blob, r.model)
        r.doc = doc_row(r.catalog, r.key, r.content)
    keys = {c: [r.key for r in rows if r.catalog == c] for c in ("knowledge", "statement")}

    def _insert() -> list[_Row]:
        conn = backend.conn
        with backend.write():
            # Existence is decided inside the write transaction, so every remaining row inserts
            # (one statement per table, not per row) unless a concurrent writer — possible on
            # PostgreSQL, whose writers run in parallel — created it meanwhile: ``insert_new``
            # says which rows this transaction created.
            present = {catalog: _existing(conn, catalog, found) for catalog, found in keys.items()}
            seen: set[tuple[str, str]] = set()
            created: list[_Row] = []
            for row in rows:
                ident = (row.catalog, row.key)
                if row.key in present[row.catalog] or ident in seen:
                    continue  # exists already, or an earlier row of this batch creates it
                seen.add(ident)
                created.append(row)
            for catalog, sql, key in (
                ("knowledge", _INSERT_KNOWLEDGE, "name"),
                ("statement", _INSERT_STATEMENT, "triple"),
            ):
                todo = [r.values for r in created if r.catalog == catalog]
                if todo:
                    new = backend.insert_new(sql.format(now=backend.dialect.now), todo, key)
                    if len(new) != len(todo):  # keep this transaction's rows only
                        created = [r for r in created if r.catalog != catalog or r.key in new]
            backend.put_doc_rows([r.doc for r in created])
        return created

    created: list[_Row] = run(_insert)
    return BatchResult(
        tuple(r.given for r in created if r.catalog == "knowledge"),
        tuple(r.given for r in created if r.catalog == "statement"),
    )
