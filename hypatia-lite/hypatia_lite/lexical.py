"""The lexical half of ``similar``: any-word BM25 over the full-text index.

``search`` keeps Hypatia's rule (every word must match), which a question written in full
sentences almost never meets. ``similar`` also asks the same index for documents holding
*any* of the query's content words, ranked by the same weighted BM25 (SQLite) or ``ts_rank``
(PostgreSQL). Function words ("what", "did", "the", ...) are dropped first: they match nearly
every document, cost time on large shelves and pulled recall down (LoCoMo half A, see
docs/benchmarks.md: R@10 59.8 % with them, 65.2 % without). The list is a short, fixed list of
English function words, not fitted to any data set.

Only rows written to be embedded that hold a vector of the current model are ranked (the same
set the vector half ranks): a log entry written with ``embed: false`` is never returned.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hypatia_lite.dialect import PG_FTS_CONFIG, Dialect, pg_words
from hypatia_lite.fts import fts_words

#: Rows the lexical half scores per query (the best ones by BM25; the others score 0).
LEXICAL_DEPTH = 200
#: Documents of the whole index (log entries included) looked at first, best by BM25.
INDEX_DEPTH = 5 * LEXICAL_DEPTH
#: The documents the lexical half may score per query on a SQLite shelf (``bounded_words``):
#: chosen on LoCoMo's design half, where it changes 65 of 762 queries and R@10 by 0.1 point.
MAX_MATCHES = 5000
#: Hypatia's column weights (``fts.BM25``) as FTS5's ``rank`` function.
RANK = "bm25(10.0, 1.0, 5.0, 3.0)"

_STOP_TEXT = """a an the and or but if of at by for with about to from in on is are was were be been
    being am do does did doing have has had having what which who whom whose when where why
    how that this these those it its as into than then there so can could would should will
    may might i you he she they we me him her them us my your his their our s t not no any
    some all both each much many more most other such own same just also very too"""
STOP_WORDS = frozenset(_STOP_TEXT.split())


def content_words(query: str) -> list[str]:
    """The words of ``query`` (``search``'s clean-up) without the function words."""
    return [w for w in fts_words(query) if w.lower() not in STOP_WORDS]


def any_word(word: str) -> str:
    """One word as an FTS5 string (quoted: never an operator)."""
    return '"' + word.replace('"', '""') + '"'


def any_word_param(dialect: Dialect, words: Sequence[str]) -> str:
    """The bound full-text query matching documents with any of ``words``."""
    if dialect.postgres:
        return " | ".join(dict.fromkeys(w for w in pg_words(" ".join(words)).split()))
    return " OR ".join(any_word(w) for w in words)


def lexical_sql(dialect: Dialect, catalog: str, key: str, conds: Sequence[str], depth: int) -> str:
    """``(row id, score)`` of the best ``LEXICAL_DEPTH`` rows of ``catalog`` (higher score is
    better) among the best ``depth`` documents of the whole index (0: all of them). Params: the
    any-word query, then those of ``conds`` (about the table ``t``)."""
    where = " AND ".join(["t.embed_wanted = 1", *conds])
    if dialect.postgres:
        return (
            "SELECT t.id, ts_rank('{0.1, 0.3, 0.5, 1.0}', d.tsv, q.q, 1)::float8 AS score"
            f" FROM docs AS d CROSS JOIN to_tsquery('{PG_FTS_CONFIG}', ?) AS q(q)"
            f" JOIN {catalog} AS t ON d.catalog = '{catalog}' AND t.{key} = d.key"
            f" WHERE d.tsv @@ q.q AND {where} ORDER BY score DESC, t.id LIMIT {LEXICAL_DEPTH}"
        )
    # FTS5 ranks inside the index (``rank``) far faster than an ORDER BY over a join
    best = f" ORDER BY rank LIMIT {int(depth)}" if depth else ""
    return (
        f"SELECT t.id, -f.rank AS score FROM (SELECT rowid, rank FROM docs_fts"
        f" WHERE docs_fts MATCH ? AND rank MATCH '{RANK}'{best}) AS f"
        f" JOIN docs AS d ON d.id = f.rowid"
        f" JOIN {catalog} AS t ON d.catalog = '{catalog}' AND t.{key} = d.key"
        f" WHERE {where} ORDER BY f.rank, t.id LIMIT {LEXICAL_DEPTH}"
    )


def bounded_words(conn: Any, words: Sequence[str]) -> tuple[list[str], int]:
    """The rarest of ``words`` whose documents add up to at most ``MAX_MATCHES`` (always the
    rarest one), and that sum. BM25 costs FTS5 a few microseconds per matching document, so a
    query of common words over a large shelf would cost tens of milliseconds; this bounds it."""
    counted = []
    for word in dict.fromkeys(words):
        found = conn.execute(
            "SELECT count(*) FROM docs_fts WHERE docs_fts MATCH ?", (any_word(word),)
        ).fetchone()[0]
        if found:
            counted.append((found, word))
    counted.sort()
    kept: list[str] = []
    total = 0
    for found, word in counted:
        if kept and total + found > MAX_MATCHES:
            break
        kept.append(word)
        total += found
    return kept, total


def lexical_scores(
    conn: Any,
    dialect: Dialect,
    catalog: str,
    key: str,
    query: str,
    conds: Sequence[str],
    params: Sequence[Any],
) -> dict[int, float]:
    """``{row id: score / best score}`` of the rows of ``catalog`` holding any content word of
    ``query`` (1.0 for the best; empty when none). On SQLite the words are bounded first
    (:func:`bounded_words`), then the best ``INDEX_DEPTH`` documents of the whole index are
    looked at; when the log layer (never ranked) crowds them out, all are."""
    words = content_words(query)
    total = 0
    if words and not dialect.postgres:
        words, total = bounded_words(conn, words)
    if not words:
        return {}
    match = any_word_param(dialect, words)
    found = conn.execute(lexical_sql(dialect, catalog, key, conds, INDEX_DEPTH), (match, *params))
    found = found.fetchall()
    if len(found) < LEXICAL_DEPTH and total > INDEX_DEPTH:
        found = conn.execute(lexical_sql(dialect, catalog, key, conds, 0), (match, *params))
        found = found.fetchall()
    best = max((float(s) for _, s in found), default=0.0)
    if best <= 0:
        return {}
    return {int(rid): float(s) / best for rid, s in found}
