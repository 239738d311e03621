"""Vector search for ``LiteStore``: embedding on write, owed vectors (backfill), ``similar``."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any, Literal, TypeVar

from hypatia_lite.backend import Backend, Connection
from hypatia_lite.dialect import Dialect
from hypatia_lite.embed import (
    Embedder,
    EmbeddingError,
    cosine_distance,
    embed_text,
    pack,
    unpack,
)
from hypatia_lite.jse import compile_condition
from hypatia_lite.protocol import Content, ModelUnavailableError, SimilarRow, Target
from hypatia_lite.rows import well_formed

T = TypeVar("T")
NO_MODEL = "model unavailable: no embedding provider configured"
#: ``count(*) WHERE embed_wanted = 1 AND (embedding IS NULL OR embedding_model IS NOT ?)``
#: split so each part is answered from a partial index (``db``): rows without a vector, then
#: rows with a vector of no / a lower / a higher model name than the current one.
_PENDING = (
    "SELECT (SELECT count(*) FROM {table} WHERE embed_wanted = 1 AND embedding IS NULL)"
    " + (SELECT count(*) FROM {table} WHERE embed_wanted = 1 AND embedding_model IS NULL"
    " AND embedding IS NOT NULL)"
    " + (SELECT count(*) FROM {table} WHERE embed_wanted = 1 AND embedding_model < ?"
    " AND embedding IS NOT NULL)"
    " + (SELECT count(*) FROM {table} WHERE embed_wanted = 1 AND embedding_model > ?"
    " AND embedding IS NOT NULL)"
)


class VectorSearch:
    """Mixin: the vector half of ``LiteStore`` (which provides ``conn`` and ``_run``)."""

    embedder: Embedder | None
    _no_model: str
    dialect: Dialect

    @property
    def conn(self) -> Connection:
        raise NotImplementedError

    @property
    def backend(self) -> Backend:
        raise NotImplementedError

    def _run(self, action: Callable[[], T]) -> T:
        raise NotImplementedError

    def _vector(self, embed: bool, key: str, content: dict[str, Any]) -> tuple[bytes | None, Any]:
        if not embed or self.embedder is None:
            return None, None
        text = embed_text(content["tags"], key, content["data"])
        try:
            vec = self.embedder.embed([text])[0]
        except EmbeddingError:
            return None, None  # writes never fail because of embedding; paid on next similar
        return pack(vec), self.embedder.identity

    def pending_embeddings(self) -> dict[str, int]:
        """Entries that want a vector but have none for the current embedder."""
        model = self.embedder.identity if self.embedder is not None else ""
        out: dict[str, int] = {}
        for table in ("knowledge", "statement"):
            out[table] = self._run(
                lambda t=table: self.conn.execute(  # type: ignore[misc]
                    _PENDING.format(table=t), (model, model)
                ).fetchone()[0]
            )
        return out

    def backfill(self, batch: int = 64) -> int:
        """Embed entries still owed a vector (best effort); returns how many got one."""
        if self.embedder is None:
            raise ModelUnavailableError(self._no_model)
        done = 0
        for table, key in (("knowledge", "name"), ("statement", "triple")):
            while True:
                todo = self._run(
                    lambda t=table, k=key: self.conn.execute(  # type: ignore[misc]
                        f"SELECT {k}, content FROM {t} WHERE embed_wanted = 1"
                        f" AND (embedding IS NULL OR embedding_model {self.dialect.distinct} ?)"
                        " ORDER BY id LIMIT ?",
                        (self.embedder.identity if self.embedder else "", batch),
                    ).fetchall()
                )
                if not todo:
                    break
                texts = [
                    embed_text(json.loads(c)["tags"], k, json.loads(c)["data"]) for k, c in todo
                ]
                try:
                    vectors = self.embedder.embed(texts)
                except EmbeddingError:
                    return done
                model = self.embedder.identity

                def _store(
                    t: str = table,
                    k: str = key,
                    rows: Any = todo,
                    vecs: Any = vectors,
                    model: str = model,
                ) -> None:
                    with self.backend.write():
                        self.conn.executemany(
                            f"UPDATE {t} SET embedding = ?, embedding_model = ? WHERE {k} = ?",
                            [(pack(v), model, r[0]) for r, v in zip(rows, vecs, strict=True)],
                        )

                self._run(_store)
                done += len(todo)
        return done

    def similar_rows(
        self,
        query: str,
        *,
        target: Target = "knowledge",
        limit: int = 10,
        tags: Sequence[str] = (),
        exclude_tags: Sequence[str] = (),
        where: Any = None,
    ) -> list[dict[str, Any]]:
        """Printed rows ``{name|triple, content, distance}`` (+ ``catalog`` for ``both``)."""
        if self.embedder is None:
            raise ModelUnavailableError(self._no_model)
        self.backfill()
        qvec = self.embedder.embed([well_formed(query)])[0]
        model = self.embedder.identity
        scored: list[tuple[float, int, dict[str, Any]]] = []
        catalogs: list[Literal["knowledge", "statement"]] = (
            ["knowledge", "statement"] if target == "both" else [target]
        )
        for catalog in catalogs:
            key = "name" if catalog == "knowledge" else "triple"
            conds, params = ["t.embedding_model = ?"], [model]
            for values, negate in ((tags, False), (exclude_tags, True)):
                if values:
                    sql, tparams = self.dialect.has_any(
                        ("tags",), [well_formed(v) for v in values], strings_only=True
                    )
                    conds.append(("NOT " if negate else "") + sql)
                    params.extend(tparams)
            if where is not None:
                sql, wparams = compile_condition(where, catalog, self.dialect)
                conds.append(f"({sql})")
                params.extend(wparams)
            found = self._run(
                lambda c=catalog, k=key, cs=conds, ps=params: (  # type: ignore[misc]
                    self.conn.execute(
                        f"SELECT t.id, t.{k}, t.content, t.embedding FROM {c} AS t"
                        f" WHERE {' AND '.join(cs)}",
                        ps,
                    ).fetchall()
                )
            )
            for rid, name, content, blob in found:
                vec = unpack(blob)
                if len(vec) != len(qvec):
                    continue
                row: dict[str, Any] = {key: name, "content": json.loads(content)}
                if target == "both":
                    row["catalog"] = catalog
                row["distance"] = cosine_distance(qvec, vec)
                scored.append((row["distance"], rid, row))
        scored.sort(key=lambda item: (item[0], item[1]))
        return [row for _, _, row in scored[: max(limit, 0)]]

    def similar(
        self,
        query: str,
        *,
        target: Target = "knowledge",
        limit: int = 10,
        exclude_tags: Sequence[str] = (),
        tags: Sequence[str] = (),
    ) -> list[SimilarRow]:
        rows = self.similar_rows(
            query, target=target, limit=limit, tags=tags, exclude_tags=exclude_tags
        )
        return [
            SimilarRow(
                "knowledge" if "name" in r else "statement",
                r.get("name") or r["triple"],
                Content.from_json(r["content"]),
                r["distance"],
            )
            for r in rows
        ]
