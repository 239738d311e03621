"""Vector search for ``LiteStore``: embedding on write, owed vectors (backfill), ``similar``."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from hypatia_lite import shelf_settings as settings
from hypatia_lite.backend import Backend, Connection
from hypatia_lite.dialect import Dialect
from hypatia_lite.embed import Embedder, EmbeddingError, embed_text, pack
from hypatia_lite.jse import compile_condition
from hypatia_lite.lexical import lexical_scores
from hypatia_lite.protocol import Content, ModelUnavailableError, SimilarRow, Target
from hypatia_lite.rows import well_formed

if TYPE_CHECKING:  # numpy is imported by ``similar`` only: writing needs none of it
    from hypatia_lite.vector_index import VectorIndex

T = TypeVar("T")
_TABLES = ("knowledge", "statement")
_FETCH = 500  # rows per ``id IN (…)`` when printing ``similar``'s rows
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
    skip_tags: frozenset[str]

    @property
    def conn(self) -> Connection:
        raise NotImplementedError

    @property
    def backend(self) -> Backend:
        raise NotImplementedError

    def _run(self, action: Callable[[], T]) -> T:
        raise NotImplementedError

    def _vector_index(self, catalog: str, model: str) -> VectorIndex:
        """The in-memory vectors of ``catalog`` for ``model``, brought up to date (call it
        inside ``_run``)."""
        from hypatia_lite.vector_index import VectorIndex

        indexes: dict[str, VectorIndex] = self.__dict__.setdefault("_vector_indexes", {})
        index = indexes.get(catalog)
        if index is None or index.model != model:
            index = indexes[catalog] = VectorIndex(catalog, model)
        index.refresh(self.conn, self.__dict__.get("_rewrites", 0))
        return index

    def _settle(self) -> None:
        """Embed what is owed before ranking; skipped while nothing changed since the shelf
        last owed nothing (the check costs a few index probes, the skip one fingerprint)."""
        from hypatia_lite.vector_index import fingerprint

        model = self.embedder.identity if self.embedder is not None else ""
        stamp = self._run(lambda: (model, *(fingerprint(self.conn, t) for t in _TABLES)))
        if stamp == self.__dict__.get("_settled"):
            return
        if any(self.pending_embeddings().values()):
            self.backfill()
            if any(self.pending_embeddings().values()):
                return  # the embedder failed part-way: try again next time
            stamp = self._run(lambda: (model, *(fingerprint(self.conn, t) for t in _TABLES)))
        self.__dict__["_settled"] = stamp

    def _rewrote_vectors(self) -> None:
        """This store changed a stored vector in place (the in-memory copies reload)."""
        self.__dict__["_rewrites"] = self.__dict__.get("_rewrites", 0) + 1

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

    def backfill(self, batch: int = 64, progress: Callable[[int, int], None] | None = None) -> int:
        """Embed entries still owed a vector (best effort), ``batch`` per embedder call and
        write transaction; returns how many got one. ``progress(done, owed)`` is called after
        each batch (``owed``: the count when it started)."""
        if self.embedder is None:
            raise ModelUnavailableError(self._no_model)
        self.retract_skipped()
        done = 0
        owed = sum(self.pending_embeddings().values()) if progress is not None else 0
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
                if progress is not None:
                    progress(done, owed)
        return done

    def retract_skipped(self) -> int:
        """Take the vectors from knowledge entries carrying one of the shelf's
        ``embedding.skip_tags``; returns how many lost one (or the wish for one)."""
        if not self.skip_tags:
            return 0
        sql, params = settings.retract_sql(self.dialect, self.skip_tags)

        def _retract() -> int:
            with self.backend.write():
                return int(self.conn.execute(sql, params).rowcount)

        retracted = self._run(_retract)
        if retracted:
            self._rewrote_vectors()
        return retracted

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
        """Printed rows ``{name|triple, content, distance}`` (+ ``catalog`` for ``both``), the
        most relevant first (:mod:`hypatia_lite.fusion`); ``distance`` is the row's cosine
        distance to the query (0 to 2, lower is closer)."""
        if self.embedder is None:
            raise ModelUnavailableError(self._no_model)
        self._settle()
        query = well_formed(query)
        import numpy as np

        from hypatia_lite.fusion import fuse, fusion_weight, index_mask

        qvec = np.asarray(self.embedder.embed([query])[0], dtype=np.float32)
        model = self.embedder.identity
        weight = fusion_weight(self.embedder)
        catalogs: list[Literal["knowledge", "statement"]] = (
            ["knowledge", "statement"] if target == "both" else [target]
        )
        ranked: list[tuple[float, str, int, float]] = []
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
            filtered = len(conds) > 1

            def _gather(
                c: str = catalog,
                k: str = key,
                cs: list[str] = conds,
                ps: list[Any] = params,
                filtered: bool = filtered,
            ) -> tuple[Any, Any, dict[int, float]]:
                index = self._vector_index(c, model)
                allowed = None
                if filtered:
                    allowed = [
                        r[0]
                        for r in self.conn.execute(
                            f"SELECT t.id FROM {c} AS t WHERE embed_wanted = 1"
                            f" AND {' AND '.join(cs)}",
                            ps,
                        ).fetchall()
                    ]
                lexical = lexical_scores(self.conn, self.dialect, c, k, query, cs, ps)
                sims = index.scores(qvec)
                if allowed is None:
                    return index.ids, sims, lexical
                keep = index_mask(index.ids, allowed)
                return index.ids[keep], sims[keep], lexical

            ids, sims, lexical = self._run(_gather)
            for score, rid, sim in fuse(ids, sims, lexical, weight, limit):
                ranked.append((score, catalog, rid, sim))
        ranked.sort(key=lambda item: (-item[0], item[1], item[2]))
        return self._similar_rows(ranked[: max(limit, 0)], target)

    def _similar_rows(
        self, ranked: list[tuple[float, str, int, float]], target: Target
    ) -> list[dict[str, Any]]:
        """The printed rows of ``ranked`` ``(score, catalog, row id, cosine)``, in its order."""
        found: dict[tuple[str, int], tuple[str, str]] = {}
        for catalog in ("knowledge", "statement"):
            wanted = [rid for _, c, rid, _ in ranked if c == catalog]
            if not wanted:
                continue
            key = "name" if catalog == "knowledge" else "triple"
            for start in range(0, len(wanted), _FETCH):  # below SQLite's bound-parameter limit
                part = wanted[start : start + _FETCH]
                rows = self._run(
                    lambda c=catalog, k=key, w=part: self.conn.execute(  # type: ignore[misc]
                        f"SELECT id, {k}, content FROM {c}"
                        f" WHERE id IN ({', '.join('?' for _ in w)})",
                        w,
                    ).fetchall()
                )
                found.update({(catalog, r[0]): (r[1], r[2]) for r in rows})
        out: list[dict[str, Any]] = []
        for _, catalog, rid, sim in ranked:
            if (catalog, rid) not in found:  # deleted in between
                continue
            name, content = found[(catalog, rid)]
            row: dict[str, Any] = {
                "name" if catalog == "knowledge" else "triple": name,
                "content": json.loads(content),
            }
            if target == "both":
                row["catalog"] = catalog
            row["distance"] = 1.0 - sim
            out.append(row)
        return out

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
