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
takes an ``ACCESS EXCLUSIVE`` lock on each table; it waits at most ``LOCK_TIMEOUT`` for readers
and writers of other processes, and when it cannot have the lock the purge is *owed*: recorded
as ``purge_vacuum_owed`` in ``meta`` and done by the next write of this connection, its
``close``, or the next open of the shelf by any process.

A row version still visible to some snapshot when the rewrite runs (a transaction that was
open when the delete committed, or, on a busy server, a backend just starting up) is copied into
the new file. The rewrite runs ``VERBOSE``, and when PostgreSQL reports dead row versions it
could not remove yet, it is tried again after a short pause (:data:`KEPT_RETRIES` times) and
then recorded as owed like a blocked one, so the next write, close or open finishes it once
that snapshot is gone. (The report is read from PostgreSQL's English message text; a server
whose ``lc_messages`` is another language leaves this check blind.)

What it cannot reach, and is the operator's to bound: PostgreSQL's write-ahead log (``pg_wal``), WAL
archives, replicas' WAL and backups keep the row until they are recycled or expire. Column
statistics of entry text are off (:mod:`memory.store.lite.pg.schema`), so ``pg_statistic``
samples hold no deleted text.

Cost: a ``VACUUM FULL`` copies the three tables whole, so it grows with the shelf, not with the
deleted entry; a batch of deletes (``forget``, ``retract``) pays it once per delete call.
"""

from __future__ import annotations

import re
import time
from typing import Any

import psycopg

from memory.store.lite.pg.schema import PURGED_TABLES

LOCK_TIMEOUT = "5s"
OWED_VACUUM = "purge_vacuum_owed"
#: Further rewrites when one had to keep dead row versions, and the pause before each.
KEPT_RETRIES = 2
KEPT_PAUSE_S = 0.25
_KEPT = re.compile(r"(\d+) dead row versions cannot be removed yet")


def _set_owed(raw: psycopg.Connection[Any], owed: bool) -> None:
    if owed:
        raw.execute("INSERT INTO meta(k, v) VALUES (%s, '1') ON CONFLICT (k) DO NOTHING",
                    (OWED_VACUUM,))
    else:
        raw.execute("DELETE FROM meta WHERE k = %s", (OWED_VACUUM,))


def is_owed(raw: psycopg.Connection[Any]) -> bool:
    return raw.execute("SELECT 1 FROM meta WHERE k = %s", (OWED_VACUUM,)).fetchone() is not None


def vacuum(raw: psycopg.Connection[Any], owed_before: bool) -> bool:
    """Rewrite the purged tables (outside any transaction); returns whether the purge is still
    owed (another connection kept a lock past ``LOCK_TIMEOUT``, or a snapshot kept dead row
    versions alive through every try; recorded in ``meta``)."""
    for attempt in range(KEPT_RETRIES + 1):
        if attempt:
            time.sleep(KEPT_PAUSE_S)
        try:
            kept = _rewrite(raw)
        except psycopg.errors.LockNotAvailable:
            break
        if not kept:
            if owed_before:
                _set_owed(raw, False)
            return False
    _set_owed(raw, True)
    return True


def _rewrite(raw: psycopg.Connection[Any]) -> int:
    """One ``VACUUM (FULL, VERBOSE)`` of the purged tables; the dead row versions it kept."""
    kept: list[int] = []

    def _notice(diag: psycopg.errors.Diagnostic) -> None:
        found = _KEPT.search(diag.message_detail or "")
        if found is not None:
            kept.append(int(found.group(1)))

    raw.add_notice_handler(_notice)
    try:
        raw.execute(f"SET lock_timeout = '{LOCK_TIMEOUT}'")
        try:
            raw.execute(f"VACUUM (FULL, VERBOSE) {', '.join(PURGED_TABLES)}")
        finally:
            raw.execute("RESET lock_timeout")
    finally:
        raw.remove_notice_handler(_notice)
    return sum(kept)
