"""Settings kept in a shelf (its ``meta`` table, on SQLite and PostgreSQL alike), and counts.

* ``embedding.model``: the embedding model registered for the shelf (``hypatia-lite model
  register``), as the environment settings that select it (``HYPATIA_LITE_EMBEDDER``, ``…_URL``,
  ``…_MODEL``, ``…_KEY_ENV``; never a key itself). A process whose environment names no embedder
  uses it; one that names one keeps its own.
* ``embedding.skip_tags``: Hypatia's shelf-level ``embedding.skip_tags`` (in its ``shelf.toml``):
  an entry carrying one of these tags gets no vector, whatever its write asked; ``backfill``
  retracts the vectors such entries already have. Their content is left as written (no
  ``embed: false`` marker appears). Statements have no tags, so it never reaches them.

A store reads both when it opens (as Hypatia reads ``shelf.toml``): a long-running MCP server
sees a change after a restart.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from hypatia_lite.backend import Connection
from hypatia_lite.dialect import Dialect
from hypatia_lite.embed import EMBEDDER_ENV, KEY_ENV_ENV, MODEL_ENV, URL_ENV

MODEL_KEY = "embedding.model"
SKIP_TAGS_KEY = "embedding.skip_tags"
SETTINGS = (MODEL_KEY, SKIP_TAGS_KEY)
_SPEC_VARS = (EMBEDDER_ENV, URL_ENV, MODEL_ENV, KEY_ENV_ENV)


def read(conn: Connection, key: str) -> Any:
    """The JSON value of ``key`` (None when unset)."""
    found = conn.execute("SELECT v FROM meta WHERE k = ?", (key,)).fetchone()
    return None if found is None else json.loads(found[0])


def write(conn: Connection, key: str, value: Any) -> None:
    """Set ``key`` (``None``: remove it). Call it inside a write transaction."""
    conn.execute("DELETE FROM meta WHERE k = ?", (key,))
    if value is not None:
        conn.execute(
            "INSERT INTO meta(k, v) VALUES (?, ?)", (key, json.dumps(value, ensure_ascii=False))
        )


def model_spec(kind: str, url: str = "", model: str = "", key_env: str = "") -> dict[str, str]:
    """The environment settings that select an embedder (see :func:`embed.embedder_from_env`)."""
    spec = {EMBEDDER_ENV: kind, URL_ENV: url, MODEL_ENV: model, KEY_ENV_ENV: key_env}
    return {k: v for k, v in spec.items() if v}


def embedder_settings(env: dict[str, str], registered: Any) -> dict[str, str]:
    """The settings to build the embedder from: ``env`` when it names an embedder, else the
    shelf's registration over ``env`` (API keys still come from the environment)."""
    if env.get(EMBEDDER_ENV, "").strip() or env.get(URL_ENV, "").strip():
        return env
    if not isinstance(registered, dict):
        return env
    picked = {k: str(v) for k, v in registered.items() if k in _SPEC_VARS}
    return {**env, **picked}


def skip_tags(value: Any) -> frozenset[str]:
    """The skip tags of a stored value (anything but a list of strings: none)."""
    if not isinstance(value, list):
        return frozenset()
    return frozenset(t for t in value if isinstance(t, str))


def skipped(tags: Sequence[str], skip: frozenset[str]) -> bool:
    return bool(skip) and any(t in skip for t in tags)


def retract_sql(dialect: Dialect, skip: frozenset[str]) -> tuple[str, tuple[Any, ...]]:
    """``UPDATE`` that takes the vectors (and the wish for one) from knowledge rows carrying a
    skip tag."""
    cond, params = dialect.has_any(("tags",), sorted(skip), strings_only=True)
    return (
        "UPDATE knowledge AS t SET embed_wanted = 0, embedding = NULL, embedding_model = NULL"
        f" WHERE t.embed_wanted = 1 AND {cond}",
        params,
    )


def scope_counts(conn: Connection, dialect: Dialect) -> list[tuple[str, int]]:
    """``(scope, entries and statements carrying it)``, by scope."""
    counts: dict[str, int] = {}
    for table in ("knowledge", "statement"):
        if dialect.postgres:
            scopes = r"(replace(t.content, '\u0000', '\ufffd')::jsonb -> 'scopes')"
            sql = (
                f"SELECT s.v, count(*) FROM {table} AS t, jsonb_array_elements_text(CASE WHEN"
                f" jsonb_typeof({scopes}) = 'array' THEN {scopes} ELSE '[]'::jsonb END) AS s(v)"
                " GROUP BY s.v"
            )
        else:
            sql = (
                f"SELECT je.value, count(*) FROM {table} AS t,"
                " json_each(t.content, '$.scopes') AS je WHERE je.type = 'text' GROUP BY je.value"
            )
        for scope, count in conn.execute(sql).fetchall():
            counts[scope] = counts.get(scope, 0) + int(count)
    return sorted(counts.items())
