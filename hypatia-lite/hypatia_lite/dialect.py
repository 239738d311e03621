"""The SQL that differs between the shelf backends: JSON paths, membership, text matching, FTS.

The protocol logic (``store``, ``batch``, ``vectors``, ``jse``) writes its SQL once, with ``?``
placeholders and the main table aliased ``t``; a :class:`Dialect` supplies the fragments that
SQLite and PostgreSQL spell differently. Content is stored as JSON *text* on both (so a row
prints byte for byte the same); PostgreSQL reads it as ``jsonb`` where a condition needs it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

#: Field paths in JSE (``meta.author``, ``tags[0]``) as segments: keys and array indexes.
Segments = tuple[str | int, ...]

#: The text-search configuration of a PostgreSQL shelf (:mod:`hypatia_lite.pg.schema`).
PG_FTS_CONFIG = "hypatia_lite_fts"
#: ``ts_rank`` weights {D, C, B, A} = data 1, synonyms 3, tags 5, key 10 (as the SQLite bm25).
_PG_WEIGHTS = "'{0.1, 0.3, 0.5, 1.0}'"
_PG_QUERY = f"plainto_tsquery('{PG_FTS_CONFIG}', ?)"
#: ``content`` as jsonb (which refuses the escape ``\u0000`` that JSON text may hold).
_PG_CONTENT = r"(replace(t.content, '\u0000', '\ufffd')::jsonb)"


_NOT_TOKEN = re.compile(r"[\W_]+")


def pg_words(text: str) -> str:
    """Text as FTS5's ``unicode61`` tokenizer sees it: runs of letters and digits, everything
    else a separator. A PostgreSQL shelf indexes and queries this form, so its parser (which
    would read ``tag-19`` as the word ``tag`` and the number ``-19``, or ``a.b`` as a host
    name) finds the same words as the SQLite shelf. (Diacritics are kept: FTS5 folds them.)"""
    return _NOT_TOKEN.sub(" ", text).strip()


def segments(name: str) -> Segments:
    """``meta.author`` → ``("meta", "author")``, ``tags[0]`` → ``("tags", 0)``."""
    out: list[str | int] = []
    for part in name.split("."):
        key, _, rest = part.partition("[")
        out.append(key)
        if rest:
            out.extend(int(i) for i in rest.rstrip("]").split("]["))
    return tuple(out)


def _sqlite_path(path: Segments) -> str:
    out = "$"
    for seg in path:
        if isinstance(seg, int):
            out += f"[{seg}]"
        else:
            out += f'."{seg}"' if "-" in seg else f".{seg}"
    return out


def _pg_path(path: Segments) -> str:
    return "'{" + ",".join(f'"{seg}"' for seg in path) + "}'"


@dataclass(frozen=True, slots=True)
class Dialect:
    """SQL fragments of one backend (``sqlite`` or ``postgresql``)."""

    name: str

    @property
    def postgres(self) -> bool:
        return self.name == "postgresql"

    @property
    def now(self) -> str:
        """``created_at`` of a new row: UTC, ``YYYY-MM-DD HH:MM:SS.mmm``."""
        if self.postgres:
            return "to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.MS')"
        return "strftime('%Y-%m-%d %H:%M:%f', 'now')"

    @property
    def text_param(self) -> str:
        """A bound text value that compares like the text columns (byte order)."""
        return 'CAST(? AS TEXT) COLLATE "C"' if self.postgres else "CAST(? AS TEXT)"

    @property
    def distinct(self) -> str:
        """The null-safe "not equal" operator."""
        return "IS DISTINCT FROM" if self.postgres else "IS NOT"

    def json_field(self, path: Segments) -> str:
        """A content field as an SQL value (text on PostgreSQL, compared byte-wise)."""
        if self.postgres:
            return f'(({_PG_CONTENT} #>> {_pg_path(path)}) COLLATE "C")'
        return f"json_extract(t.content, '{_sqlite_path(path)}')"

    def json_compare(self, path: Segments, op: str, value: Any) -> tuple[str, tuple[Any, ...]]:
        """``field <op> value`` for a content field and a non-string literal."""
        if self.postgres:
            node = f"({_PG_CONTENT} #> {_pg_path(path)})"
            text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
            return f"{node} {op} CAST(? AS jsonb)", (text,)
        if isinstance(value, list | dict):
            value = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        return f"{self.json_field(path)} {op} ?", (value,)

    def like(self, lhs: str) -> str:
        """SQLite's ``LIKE``: ASCII case-insensitive, ``%`` and ``_``, no escape character."""
        return f"{lhs} ILIKE ? ESCAPE ''" if self.postgres else f"{lhs} LIKE ?"

    def contains_text(self, lhs: str) -> str:
        return f"strpos({lhs}, ?) > 0" if self.postgres else f"instr({lhs}, ?) > 0"

    def has_any(
        self, path: Segments, values: list[Any], *, strings_only: bool = False
    ) -> tuple[str, tuple[Any, ...]]:
        """True when the content array at ``path`` (or the scalar there) holds one of ``values``
        (strings and numbers only; ``strings_only``: strings only)."""
        marks = ", ".join("?" for _ in values)
        if self.postgres:
            node = f"({_PG_CONTENT} #> {_pg_path(path)})"
            kinds = "('string')" if strings_only else "('string', 'number')"
            sql = (
                f"EXISTS (SELECT 1 FROM jsonb_array_elements(CASE WHEN jsonb_typeof({node})"
                f" = 'array' THEN {node} ELSE jsonb_build_array({node}) END) AS je(v)"
                f" WHERE jsonb_typeof(je.v) IN {kinds}"
                f" AND je.v IN ({', '.join('CAST(? AS jsonb)' for _ in values)}))"
            )
            return sql, tuple(json.dumps(v, ensure_ascii=False) for v in values)
        kinds = "('text')" if strings_only else "('text', 'integer', 'real')"
        return (
            f"EXISTS (SELECT 1 FROM json_each(t.content, '{_sqlite_path(path)}') AS je"
            f" WHERE je.type IN {kinds} AND je.value IN ({marks}))",
            tuple(values),
        )

    def fts_param(self, words: list[str]) -> str:
        """The bound full-text query for ``words`` (all of them must match)."""
        if self.postgres:
            return pg_words(" ".join(words))
        return " ".join('"' + w.replace('"', '""') + '"' for w in words)

    def fts_keys(self, key: str) -> str:
        """``key IN`` the documents of one catalog matching the query (params: query, catalog)."""
        if self.postgres:
            return (
                f"{key} IN (SELECT d.key FROM docs AS d WHERE d.tsv @@ {_PG_QUERY}"
                " AND d.catalog = ?)"
            )
        return (
            f"{key} IN (SELECT d.key FROM docs_fts JOIN docs AS d ON d.id = docs_fts.rowid"
            " WHERE docs_fts MATCH ? AND d.catalog = ?)"
        )

    def search(self, catalog_filter: str) -> str:
        """``search``: ``(id, catalog, key, rank, content)``, best (lowest rank) first. Params:
        the query, the catalog filter's, limit, offset."""
        joins = (
            " LEFT JOIN knowledge AS k ON d.catalog = 'knowledge' AND k.name = d.key"
            " LEFT JOIN statement AS s ON d.catalog = 'statement' AND s.triple = d.key"
        )
        if self.postgres:
            return (
                "SELECT d.id, d.catalog, d.key,"
                f" -(ts_rank({_PG_WEIGHTS}, d.tsv, q.q, 1)::float8) AS rank,"
                f" COALESCE(k.content, s.content) FROM docs AS d"
                f" CROSS JOIN {_PG_QUERY} AS q(q){joins}"
                f" WHERE d.tsv @@ q.q{catalog_filter}"
                " ORDER BY rank ASC, d.id ASC LIMIT ? OFFSET ?"
            )
        return (
            "SELECT d.id, d.catalog, d.key, bm25(docs_fts, 10.0, 1.0, 5.0, 3.0) AS rank,"
            " COALESCE(k.content, s.content) FROM docs_fts"
            f" JOIN docs AS d ON d.id = docs_fts.rowid{joins}"
            f" WHERE docs_fts MATCH ?{catalog_filter}"
            " ORDER BY rank ASC, d.id ASC LIMIT ? OFFSET ?"
        )


SQLITE = Dialect("sqlite")
POSTGRESQL = Dialect("postgresql")
