"""``LiteStore``: the in-process hypatia-lite store (one shelf: a SQLite file or PostgreSQL).

The protocol logic lives here once; what the two databases do differently is behind
:class:`~hypatia_lite.backend.Backend`."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from hypatia_lite import batch, retry, shelves
from hypatia_lite import shelf_settings as settings
from hypatia_lite.backend import Backend, Connection
from hypatia_lite.backends import open_backend
from hypatia_lite.embed import Embedder, embedder_from_env
from hypatia_lite.fts import fts_words
from hypatia_lite.jse import compile_query
from hypatia_lite.protocol import (
    BatchResult,
    Catalog,
    Content,
    EntryWrite,
    Features,
    KnowledgeEntry,
    ModelUnavailableError,
    NotFoundError,
    QueryRow,
    SearchRow,
    StatementWrite,
    StoreError,
    TransientStoreError,
    csv_triple,
)
from hypatia_lite.rows import (
    NO_EMBED,
    content_text,
    knowledge_row,
    make_content,
    statement_row,
    to_entry,
    well_formed,
)
from hypatia_lite.vectors import NO_MODEL, VectorSearch

T = TypeVar("T")
_DEFAULT: Any = object()
_K_COLS = "t.name, t.content, t.created_at"
_S_COLS = "t.triple, t.head, t.relation, t.tail, t.content, t.created_at"
_UPDATE_ATTEMPTS = 8
#: A random part of 4 ms before the second try, of 8 ms before the third, …: two processes
#: updating one entry do not keep meeting in lockstep.
_UPDATE_BACKOFF = retry.Backoff(0.004, jitter=True)
_UNIQUE_KNOWLEDGE = "storage error: SQLite error: UNIQUE constraint failed: knowledge.name"


class LiteStore(VectorSearch):
    """A Hypatia-compatible store on one shelf. Safe to use from several processes at once.

    ``embedder`` defaults to what the environment selects (``embedder_from_env``: the local
    hashing embedder unless ``HYPATIA_LITE_EMBEDDER``/``HYPATIA_LITE_EMBED_URL`` say otherwise);
    pass ``None`` for a store without semantic search.
    """

    def __init__(
        self,
        shelf: str = shelves.DEFAULT_SHELF,
        home: Path | None = None,
        embedder: Embedder | None = _DEFAULT,
    ) -> None:
        self.shelf = shelf
        self.home = shelves.lite_home(home)
        self.location = shelves.locate(self.home, shelf)
        self._no_model = NO_MODEL
        self._lock = threading.RLock()
        self._db: Backend | None = open_backend(shelf, self.location)
        self.dialect = self._db.dialect
        registered, skip = self._run(
            lambda: (
                settings.read(self.conn, settings.MODEL_KEY),
                settings.read(self.conn, settings.SKIP_TAGS_KEY),
            )
        )
        #: Hypatia's shelf-level ``embedding.skip_tags`` (:mod:`hypatia_lite.shelf_settings`)
        self.skip_tags = settings.skip_tags(skip)
        if embedder is _DEFAULT:
            try:
                embedder = embedder_from_env(
                    settings.embedder_settings(dict(os.environ), registered)
                )
            except ModelUnavailableError as err:  # a bad setting only turns similar off
                embedder, self._no_model = None, str(err)
        self.embedder: Embedder | None = embedder

    # ----------------------------------------------------------------------------- plumbing

    def __enter__(self) -> LiteStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None

    @property
    def backend(self) -> Backend:
        if self._db is None:
            raise StoreError(f"hypatia-lite store for shelf '{self.shelf}' is closed")
        return self._db

    @property
    def conn(self) -> Connection:
        return self.backend.conn

    @property
    def path(self) -> Path:
        """The directory of a SQLite shelf (a PostgreSQL shelf has none: ``ShelfError``)."""
        return shelves.resolve(self.home, self.shelf)

    def _run(self, action: Callable[[], T]) -> T:
        with self._lock:
            return self.backend.run(action)

    def run_admin(self, action: Callable[[Connection], T]) -> T:
        """Run a read of the operator verbs (:mod:`hypatia_lite.cli_admin`) on this shelf."""
        return self._run(lambda: action(self.conn))

    def set_setting(self, key: str, value: Any) -> None:
        """Store a shelf setting (:mod:`hypatia_lite.shelf_settings`; ``None`` removes it)."""

        def _write() -> None:
            with self.backend.write():
                settings.write(self.conn, key, value)

        self._run(_write)
        if key == settings.SKIP_TAGS_KEY:
            self.skip_tags = settings.skip_tags(value)

    def features(self) -> Features:
        return Features(no_embed=True, similar_filters=True, delete=True, update=True)

    def _put_doc(self, catalog: str, key: str, content: dict[str, Any]) -> None:
        self.backend.put_docs([(catalog, key, content)])

    # ---------------------------------------------------------------------------- knowledge

    def knowledge_get_row(self, name: str) -> dict[str, Any] | None:
        """The printed row ``{name, content, created_at}`` or None."""
        name = well_formed(name)
        found = self._run(
            lambda: self.conn.execute(
                f"SELECT {_K_COLS} FROM knowledge AS t WHERE t.name = ?", (name,)
            ).fetchone()
        )
        return None if found is None else knowledge_row(found[0], json.loads(found[1]), found[2])

    def knowledge_get(self, name: str) -> KnowledgeEntry | None:
        row = self.knowledge_get_row(name)
        return (
            None
            if row is None
            else KnowledgeEntry(row["name"], Content.from_json(row["content"]), row["created_at"])
        )

    def knowledge_create(
        self,
        name: str,
        data: str = "",
        *,
        tags: Sequence[str] = (),
        scopes: Sequence[str] | None = None,
        synonyms: Sequence[str] | None = None,
        figures: Sequence[str] | None = None,
        embed: bool = True,
    ) -> bool:
        """True when created; False when ``name`` already existed (left unchanged)."""
        name = well_formed(name)
        content = make_content(
            data, tags=tags, scopes=scopes, synonyms=synonyms, figures=figures, embed=embed
        )
        wanted = embed and not settings.skipped(content["tags"], self.skip_tags)
        blob, model = self._vector(wanted, name, content)

        def _insert() -> bool:
            with self.backend.write():
                cur = self.conn.execute(
                    "INSERT INTO knowledge(name, content, created_at, embed_wanted, embedding,"
                    f" embedding_model) VALUES (?, ?, {self.dialect.now}, ?, ?, ?)"
                    " ON CONFLICT(name) DO NOTHING",
                    (name, content_text(content), int(wanted), blob, model),
                )
                if cur.rowcount == 1:
                    self._put_doc("knowledge", name, content)
                return cur.rowcount == 1

        return self._run(_insert)

    def knowledge_update(
        self,
        name: str,
        *,
        data: str | None = None,
        tags: Sequence[str] | None = None,
        scopes: Sequence[str] | None = None,
        synonyms: Sequence[str] | None = None,
        figures: Sequence[str] | None = None,
    ) -> bool:
        """Change only the given fields (empty = clear); True when something changed."""
        if (
            data is None
            and tags is None
            and scopes is None
            and synonyms is None
            and (figures is None)
        ):
            raise StoreError(
                "validation error: nothing to update: pass at least one of "
                "data, tags, synonyms, figures, scopes"
            )
        name = well_formed(name)
        # A retry: another writer changed the entry between our read and our swap.
        for _ in retry.attempts(_UPDATE_ATTEMPTS, _UPDATE_BACKOFF):
            found = self._run(
                lambda: self.conn.execute(
                    "SELECT content FROM knowledge WHERE name = ?", (name,)
                ).fetchone()
            )
            if found is None:
                raise NotFoundError(f"not found: knowledge '{name}'")
            stored = found[0]
            old = json.loads(stored)
            new = make_content(
                old["data"] if data is None else data,
                tags=old["tags"] if tags is None else tags,
                synonyms=old["synonyms"] if synonyms is None else (list(synonyms) or None),
                figures=old["figures"] if figures is None else (list(figures) or None),
                scopes=old["scopes"] if scopes is None else scopes,
                format=old["format"],
                embed=old.get(NO_EMBED) is not False,  # the write's own wish, as stored
            )
            if content_text(new) == content_text(old):
                return False
            # a retracted vector (a skip tag) comes back when the tag goes
            wanted = old.get(NO_EMBED) is not False and not settings.skipped(
                new["tags"], self.skip_tags
            )
            blob, model = self._vector(bool(wanted), name, new)

            def _update(
                stored: str = stored,
                new: dict[str, Any] = new,
                blob: bytes | None = blob,
                model: Any = model,
                wanted: bool = wanted,
            ) -> bool:
                # compare-and-swap: a concurrent update in between makes this attempt retry
                with self.backend.write(purge_text=True):
                    cur = self.conn.execute(
                        "UPDATE knowledge SET content = ?, embedding = ?, embedding_model = ?,"
                        " embed_wanted = ? WHERE name = ? AND content = ?",
                        (content_text(new), blob, model, int(wanted), name, stored),
                    )
                    if cur.rowcount == 1:
                        self._put_doc("knowledge", name, new)
                        self._rewrote_vectors()
                return cur.rowcount == 1

            if self._run(_update):
                return True
        raise TransientStoreError(
            f"storage error: knowledge '{name}' kept changing during the update; try again"
        )

    def knowledge_delete(self, name: str) -> bool:
        """True when removed; False when absent. Statements naming it are kept."""
        name = well_formed(name)

        def _delete() -> bool:
            with self.backend.write(purge_text=True):
                cur = self.conn.execute("DELETE FROM knowledge WHERE name = ?", (name,))
                self.conn.execute(
                    "DELETE FROM docs WHERE catalog = 'knowledge' AND key = ?", (name,)
                )
            return cur.rowcount == 1

        return self._run(_delete)

    # -------------------------------------------------------------------------------- batch

    def write_batch(
        self, entries: Sequence[EntryWrite], statements: Sequence[StatementWrite] = ()
    ) -> BatchResult:
        """Create the absent ``entries`` then ``statements`` in ONE transaction (all or
        nothing); the same rows as one ``knowledge_create`` / ``statement_create`` per item."""
        with self._lock:
            return batch.write_batch(
                self.backend, self.embedder, self._run, entries, statements, self.skip_tags
            )

    # --------------------------------------------------------------------------- statements

    def statement_create(
        self,
        head: str,
        relation: str,
        tail: str,
        *,
        data: str = "",
        scopes: Sequence[str] | None = None,
        synonyms: dict[str, list[str]] | None = None,
        embed: bool = True,
    ) -> bool:
        """True when created; False when the triple already existed (left unchanged)."""
        head, relation, tail = well_formed(head), well_formed(relation), well_formed(tail)
        triple = csv_triple(head, relation, tail)
        content = make_content(data, scopes=scopes, synonyms=synonyms, embed=embed)
        blob, model = self._vector(embed, triple, content)

        def _insert() -> bool:
            with self.backend.write():
                cur = self.conn.execute(
                    "INSERT INTO statement(triple, head, relation, tail, content, created_at,"
                    " embed_wanted, embedding, embedding_model) VALUES (?, ?, ?, ?, ?,"
                    f" {self.dialect.now}, ?, ?, ?)"
                    " ON CONFLICT(triple) DO NOTHING",
                    (triple, head, relation, tail, content_text(content), int(embed), blob, model),
                )
                if cur.rowcount == 1:
                    self._put_doc("statement", triple, content)
                return cur.rowcount == 1

        return self._run(_insert)

    def statement_delete(self, head: str, relation: str, tail: str) -> bool:
        """True when removed; False when absent."""
        triple = csv_triple(well_formed(head), well_formed(relation), well_formed(tail))

        def _delete() -> bool:
            with self.backend.write(purge_text=True):
                cur = self.conn.execute("DELETE FROM statement WHERE triple = ?", (triple,))
                self.conn.execute(
                    "DELETE FROM docs WHERE catalog = 'statement' AND key = ?", (triple,)
                )
            return cur.rowcount == 1

        return self._run(_delete)

    # ------------------------------------------------------------------------------- search

    def search_rows(
        self, query: str, *, catalog: Catalog | None = None, limit: int = 100, offset: int = 0
    ) -> list[dict[str, Any]]:
        """Printed rows ``{id, catalog, key, content:<JSON text>, rank}``, best (lowest) first."""
        words = fts_words(well_formed(query))
        if not words or limit <= 0:
            return []
        match = self.dialect.fts_param(words)
        where, params = ("", ()) if catalog is None else (" AND d.catalog = ?", (catalog,))
        sql = self.dialect.search(where)
        found = self._run(
            lambda: self.conn.execute(sql, (match, *params, limit, offset)).fetchall()
        )
        return [
            {"id": r[0], "catalog": r[1], "key": r[2], "content": r[4], "rank": r[3]}
            for r in found
            if r[4] is not None
        ]

    def search(
        self, query: str, *, catalog: Catalog | None = None, limit: int = 100, offset: int = 0
    ) -> list[SearchRow]:
        return [
            SearchRow(
                r["id"],
                r["catalog"],
                r["key"],
                Content.from_json(json.loads(r["content"])),
                r["rank"],
            )
            for r in self.search_rows(query, catalog=catalog, limit=limit, offset=offset)
        ]

    # -------------------------------------------------------------------------------- query

    def query_rows(self, jse: Any) -> list[dict[str, Any]]:
        """Printed rows for a JSE expression (value or JSON text)."""
        plan = compile_query(jse, self.dialect)
        order = "ASC" if plan.ascending else "DESC"
        cols = _K_COLS if plan.catalog == "knowledge" else _S_COLS
        sql = (
            f"SELECT {cols} FROM {plan.catalog} AS t WHERE {plan.where}"
            f" ORDER BY t.created_at {order}, t.id {order} LIMIT ? OFFSET ?"
        )
        found = self._run(
            lambda: self.conn.execute(sql, (*plan.params, plan.limit, plan.offset)).fetchall()
        )
        if plan.catalog == "knowledge":
            return [knowledge_row(r[0], json.loads(r[1]), r[2]) for r in found]
        return [statement_row(r[0], r[1], r[2], r[3], json.loads(r[4]), r[5]) for r in found]

    def query(self, jse: Any) -> list[QueryRow]:
        return [to_entry(r) for r in self.query_rows(jse)]

    def dump(self, include_created_at: bool = False) -> dict[str, list[dict[str, Any]]]:
        """Every knowledge entry (by name) and statement (by triple) with full content."""

        def _all() -> tuple[list[Any], list[Any]]:
            k = self.conn.execute(f"SELECT {_K_COLS} FROM knowledge AS t ORDER BY t.name")
            s = self.conn.execute(f"SELECT {_S_COLS} FROM statement AS t ORDER BY t.triple")
            return k.fetchall(), s.fetchall()

        knowledge, statements = self._run(_all)
        out = {
            "knowledge": [knowledge_row(r[0], json.loads(r[1]), r[2]) for r in knowledge],
            "statements": [
                statement_row(r[0], r[1], r[2], r[3], json.loads(r[4]), r[5]) for r in statements
            ],
        }
        if not include_created_at:
            for rows in out.values():
                for row in rows:
                    del row["created_at"]
        return out


def unique_violation() -> str:
    """Hypatia's duplicate-knowledge error text (without the CLI's ``Error: `` prefix)."""
    return _UNIQUE_KNOWLEDGE
