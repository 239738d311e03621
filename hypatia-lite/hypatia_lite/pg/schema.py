"""The tables of a PostgreSQL shelf: those of the SQLite shelf, with a ``tsvector`` for search.

* Text columns that are compared or ordered use ``COLLATE "C"`` (byte order, as SQLite's
  ``BINARY``), so ``$gt`` / ``$lt`` and ``ORDER BY`` agree with the SQLite shelf.
* ``content`` stays JSON *text* (printed byte for byte as stored); conditions read it as
  ``jsonb``.
* Full-text search: ``docs.tsv`` is a generated column — key weight A, tags B, synonyms C,
  data D — over the ``hypatia_lite_fts`` configuration (PostgreSQL's default parser, every word
  through an English snowball stemmer *without* stop words, so "the" is searchable as in FTS5),
  with a GIN index.
* Statistics: ``ANALYZE`` keeps sample values of each column in ``pg_statistic``; for the
  columns holding entry text it is turned off (``SET STATISTICS 0``), so a deleted entry's words
  cannot outlive it there (see :mod:`hypatia_lite.pg.purge`).

Creation runs in one transaction under the shelf's advisory lock, so processes opening a new
shelf at once do not race on ``CREATE``.
"""

from __future__ import annotations

from hypatia_lite.dialect import PG_FTS_CONFIG

SCHEMA_VERSION = "1"
_TSV = " || ".join(
    f"setweight(to_tsvector('{PG_FTS_CONFIG}'::regconfig, {column}), '{weight}')"
    for column, weight in (
        ("fts_key", "A"),
        ("fts_tags", "B"),
        ("fts_synonyms", "C"),
        ("fts_data", "D"),
    )
)
FTS_CONFIG = f"""
CREATE TEXT SEARCH DICTIONARY hypatia_lite_stem (TEMPLATE = snowball, Language = english);
CREATE TEXT SEARCH CONFIGURATION {PG_FTS_CONFIG} (COPY = pg_catalog.simple);
ALTER TEXT SEARCH CONFIGURATION {PG_FTS_CONFIG}
    ALTER MAPPING FOR asciiword, asciihword, hword_asciipart, word, hword, hword_part
    WITH hypatia_lite_stem;
"""
TABLES = f"""
CREATE TABLE IF NOT EXISTS meta (k TEXT PRIMARY KEY, v TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS knowledge (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name TEXT COLLATE "C" NOT NULL UNIQUE,
    content TEXT NOT NULL,
    created_at TEXT COLLATE "C" NOT NULL,
    embed_wanted INTEGER NOT NULL DEFAULT 1,
    embedding BYTEA,
    embedding_model TEXT COLLATE "C"
);
CREATE TABLE IF NOT EXISTS statement (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    triple TEXT COLLATE "C" NOT NULL UNIQUE,
    head TEXT COLLATE "C" NOT NULL,
    relation TEXT COLLATE "C" NOT NULL,
    tail TEXT COLLATE "C" NOT NULL,
    content TEXT NOT NULL,
    created_at TEXT COLLATE "C" NOT NULL,
    embed_wanted INTEGER NOT NULL DEFAULT 1,
    embedding BYTEA,
    embedding_model TEXT COLLATE "C"
);
CREATE INDEX IF NOT EXISTS statement_head ON statement(head);
CREATE INDEX IF NOT EXISTS statement_relation ON statement(relation);
CREATE INDEX IF NOT EXISTS statement_tail ON statement(tail);
CREATE INDEX IF NOT EXISTS knowledge_created ON knowledge(created_at, id);
CREATE INDEX IF NOT EXISTS statement_created ON statement(created_at, id);
CREATE INDEX IF NOT EXISTS knowledge_owed ON knowledge(embed_wanted)
    WHERE embed_wanted = 1 AND embedding IS NULL;
CREATE INDEX IF NOT EXISTS statement_owed ON statement(embed_wanted)
    WHERE embed_wanted = 1 AND embedding IS NULL;
CREATE INDEX IF NOT EXISTS knowledge_vector_model ON knowledge(embedding_model)
    WHERE embed_wanted = 1;
CREATE INDEX IF NOT EXISTS statement_vector_model ON statement(embedding_model)
    WHERE embed_wanted = 1;
CREATE TABLE IF NOT EXISTS docs (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    catalog TEXT COLLATE "C" NOT NULL,
    key TEXT COLLATE "C" NOT NULL,
    fts_key TEXT NOT NULL,
    fts_data TEXT NOT NULL,
    fts_tags TEXT NOT NULL,
    fts_synonyms TEXT NOT NULL,
    tsv tsvector GENERATED ALWAYS AS ({_TSV}) STORED,
    UNIQUE (catalog, key)
);
CREATE INDEX IF NOT EXISTS docs_tsv ON docs USING gin (tsv);
ALTER TABLE knowledge ALTER COLUMN content SET STATISTICS 0;
ALTER TABLE statement ALTER COLUMN content SET STATISTICS 0;
ALTER TABLE docs ALTER COLUMN fts_data SET STATISTICS 0;
ALTER TABLE docs ALTER COLUMN fts_tags SET STATISTICS 0;
ALTER TABLE docs ALTER COLUMN fts_synonyms SET STATISTICS 0;
ALTER TABLE docs ALTER COLUMN tsv SET STATISTICS 0;
INSERT INTO meta(k, v) VALUES ('schema_version', '{SCHEMA_VERSION}') ON CONFLICT (k) DO NOTHING;
"""
#: The tables a purge rewrites (``VACUUM FULL``): every table that holds entry text.
PURGED_TABLES = ("knowledge", "statement", "docs")
