"""Deleted means gone from the bytes, on a PostgreSQL shelf: what MVCC keeps and the purge.

PostgreSQL never overwrites a row in place. A ``DELETE`` (or an ``UPDATE`` that replaces
``content``) leaves the old row version as a *dead tuple* in the table's file, text and all —
in the heap, in the TOAST table for content over ~2 kB, and in every index that covered it (the
GIN index of ``docs.tsv`` keeps the deleted entry's lexemes as keys even after a plain
``VACUUM`` has emptied their posting lists). A plain ``VACUUM`` only marks that space
reusable; the bytes stay until a later write happens to reuse it.

So a write that removes text (``purge_text``) is followed, once it has committed, by
``VACUUM FULL knowledge, statement, docs``: each table, its TOAST table and its indexes are
rewritten into new files holding only live rows, and the old files are truncated. The rewrite
takes an ``ACCESS EXCLUSIVE`` lock on each table; it waits at most 5 s for readers and writers
of other processes, and when it cannot have the lock the purge is *owed*: recorded as
``purge_vacuum_owed`` in ``meta`` and done by the next write of this connection, its ``close``,
or the next open of the shelf by any process.

A row version still visible to some snapshot when the rewrite runs is copied into the new file;
the rewrite reports it, is tried again, and is then recorded as owed like a blocked one, so the
next write, close or open finishes it once that snapshot is gone
(:mod:`hypatia_lite.pg.vacuum`).

What it cannot reach, and is the operator's to bound: PostgreSQL's write-ahead log (``pg_wal``), WAL
archives, replicas' WAL and backups keep the row until they are recycled or expire. Column
statistics of entry text are off (:mod:`hypatia_lite.pg.schema`), so ``pg_statistic``
samples hold no deleted text.

Cost: a ``VACUUM FULL`` copies the three tables whole, so it grows with the shelf, not with the
deleted entry; a batch of deletes (``forget``, ``retract``) pays it once per delete call.
"""

from __future__ import annotations

from typing import Any

import psycopg

from hypatia_lite.pg import vacuum as rewrites
from hypatia_lite.pg.schema import PURGED_TABLES

OWED_VACUUM = "purge_vacuum_owed"


def _set_owed(raw: psycopg.Connection[Any], owed: bool) -> None:
    if owed:
        raw.execute(
            "INSERT INTO meta(k, v) VALUES (%s, '1') ON CONFLICT (k) DO NOTHING", (OWED_VACUUM,)
        )
    else:
        raw.execute("DELETE FROM meta WHERE k = %s", (OWED_VACUUM,))


def is_owed(raw: psycopg.Connection[Any]) -> bool:
    return raw.execute("SELECT 1 FROM meta WHERE k = %s", (OWED_VACUUM,)).fetchone() is not None


def vacuum(raw: psycopg.Connection[Any], owed_before: bool) -> bool:
    """Rewrite the purged tables (outside any transaction); returns whether the purge is still
    owed (another connection kept a lock past the lock timeout, or a snapshot kept dead row
    versions alive through every try; recorded in ``meta``)."""
    if rewrites.rewrite_clean(raw, PURGED_TABLES):
        if owed_before:
            _set_owed(raw, False)
        return False
    _set_owed(raw, True)
    return True
