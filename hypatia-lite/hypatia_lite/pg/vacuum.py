"""``VACUUM FULL`` that knows whether it removed every dead row version (PostgreSQL, psycopg 3).

A rewrite copies into the new file every row version some snapshot may still see: a
transaction that was open when the delete or update committed, or, on a busy server, a backend
that is just starting up and holds an old horizon. Such a rewrite succeeds but keeps the text.
``VACUUM (FULL, VERBOSE)`` reports how many it kept ("N dead row versions cannot be removed
yet"); :func:`rewrite_clean` reads that report and tries again after a short pause.

Used by both places that purge text on PostgreSQL: hypatia-lite's shelves
(:mod:`hypatia_lite.pg.purge`) and the worker's state database (:mod:`worker.state.purge`).
The report is read from PostgreSQL's English message text; a server whose ``lc_messages`` is
another language leaves the check blind (the rewrite still runs).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import psycopg

from hypatia_lite import retry

#: How long a rewrite waits for another connection's lock before it gives up (then: owed).
LOCK_TIMEOUT = "5s"
#: Further rewrites when one had to keep dead row versions, and the pause before each.
KEPT_RETRIES = 2
KEPT_PAUSE_S = 0.25
_KEPT = re.compile(r"(\d+) dead row versions cannot be removed yet")


def rewrite_clean(raw: psycopg.Connection[Any], tables: Sequence[str]) -> bool:
    """Rewrite ``tables`` (``raw`` in autocommit: no transaction may be open); True once a
    rewrite kept no dead row version, False when the lock was not had within
    :data:`LOCK_TIMEOUT` or every try had to keep some (the caller records the purge as owed)."""
    for _ in retry.attempts(KEPT_RETRIES + 1, retry.Backoff(KEPT_PAUSE_S, factor=1)):
        try:
            kept = rewrite(raw, tables)
        except psycopg.errors.LockNotAvailable:
            return False
        if not kept:
            return True
    return False


def rewrite(raw: psycopg.Connection[Any], tables: Sequence[str]) -> int:
    """One ``VACUUM (FULL, VERBOSE)`` of ``tables``; the dead row versions it had to keep.
    Raises ``psycopg.errors.LockNotAvailable`` when a lock was not had in time."""
    kept: list[int] = []

    def _notice(diag: psycopg.errors.Diagnostic) -> None:
        found = _KEPT.search(diag.message_detail or "")
        if found is not None:
            kept.append(int(found.group(1)))

    names = ", ".join(f'"{table}"' for table in tables)
    raw.add_notice_handler(_notice)
    try:
        raw.execute(f"SET lock_timeout = '{LOCK_TIMEOUT}'")
        try:
            raw.execute(f"VACUUM (FULL, VERBOSE) {names}")
        finally:
            raw.execute("RESET lock_timeout")
    finally:
        raw.remove_notice_handler(_notice)
    return sum(kept)
