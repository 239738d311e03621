"""Deleted means gone from the bytes: the shelf's secure-delete set-up and its purge checkpoint.

Three places can keep a deleted entry's text after ``DELETE`` commits, and each is closed here
or in :func:`memory.store.lite.db.connect`:

* **Table pages.** SQLite only unlinks a deleted cell or page. Every shelf connection sets
  ``PRAGMA secure_delete = ON``: the freed space is overwritten with zeros in the same write.
* **The FTS5 index.** FTS5's ``delete`` appends a tombstone; the old segment keeps the terms
  until a merge rewrites it. The index has its ``secure-delete`` option on (SQLite 3.42+, hence
  :mod:`memory.store.lite.sqlitelib`): a delete rewrites the leaf pages holding the document's
  terms without them — work proportional to the document, not to the shelf. A shelf created
  before the option gets it on its first open, with one ``rebuild`` of the index (its old
  segments may hold earlier deletes) and one ``VACUUM`` (its free pages were never zeroed).
* **The WAL.** Old page images stay in ``hypatia.sqlite-wal`` until a checkpoint copies the
  newest ones into the database and the log is truncated. A transaction that removes text
  records ``purge_checkpoint_owed`` in ``meta`` (atomically with the delete), and once it has
  committed runs ``PRAGMA wal_checkpoint(TRUNCATE)``. A checkpoint cannot finish while another
  connection reads an older snapshot (or writes); it then waits at most ``CHECKPOINT_WAIT_MS``,
  gives up without losing anything (the frames stay valid in the WAL), and the flag makes the
  next opportunity do it: the next write of this connection, its ``close``, or the next open of
  the shelf by any process. The flag is cleared only after a checkpoint that truncated.

``-shm`` holds the WAL index (page numbers and frame offsets), never row content.
"""

from __future__ import annotations

from memory.store.lite.sqlitelib import sqlite3

CHECKPOINT_WAIT_MS = 250
OWED_CHECKPOINT = "purge_checkpoint_owed"
OWED_VACUUM = "purge_vacuum_owed"
_SET_OWED = "INSERT OR REPLACE INTO meta(k, v) VALUES (?, '1')"


def configure_index(conn: sqlite3.Connection) -> None:
    """Turn the FTS5 index's ``secure-delete`` on unless it is (inside the open transaction).
    An index that held documents before is rebuilt, and a ``VACUUM`` is owed."""
    found = conn.execute(
        "SELECT v FROM docs_fts_config WHERE k = 'secure-delete'").fetchone()
    if found is not None and found[0] == 1:
        return
    conn.execute("INSERT INTO docs_fts(docs_fts, rank) VALUES ('secure-delete', 1)")
    if conn.execute("SELECT 1 FROM docs LIMIT 1").fetchone() is not None:
        conn.execute("INSERT INTO docs_fts(docs_fts) VALUES ('rebuild')")
        conn.execute(_SET_OWED, (OWED_VACUUM,))
        conn.execute(_SET_OWED, (OWED_CHECKPOINT,))


def mark_owed(conn: sqlite3.Connection) -> None:
    """Record, inside the purging transaction, that its truncating checkpoint is owed."""
    conn.execute(_SET_OWED, (OWED_CHECKPOINT,))


def _owed(conn: sqlite3.Connection) -> set[str]:
    rows = conn.execute(
        "SELECT k FROM meta WHERE k IN (?, ?)", (OWED_CHECKPOINT, OWED_VACUUM)).fetchall()
    return {str(row[0]) for row in rows}


def _short_wait(conn: sqlite3.Connection) -> int:
    previous = int(conn.execute("PRAGMA busy_timeout").fetchone()[0])
    conn.execute(f"PRAGMA busy_timeout = {CHECKPOINT_WAIT_MS}")
    return previous


def _clear(conn: sqlite3.Connection, key: str) -> None:
    try:
        conn.execute("BEGIN IMMEDIATE")
    except sqlite3.OperationalError:
        return  # busy: the flag stays; the next opportunity checkpoints (harmlessly) again
    try:
        conn.execute("DELETE FROM meta WHERE k = ?", (key,))
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def checkpoint(conn: sqlite3.Connection) -> bool:
    """Checkpoint the whole WAL into the database and truncate it to zero bytes; True when done.
    False (nothing lost, the owed flag kept) when readers or a writer kept it from finishing
    within ``CHECKPOINT_WAIT_MS``."""
    previous = _short_wait(conn)
    try:
        try:
            busy = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
        except sqlite3.OperationalError:  # locked: another checkpoint or a writer
            return False
        if busy:
            return False
        _clear(conn, OWED_CHECKPOINT)
        # The flag's own clearing wrote only the ``meta`` page; truncate once more when free.
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return True
    finally:
        conn.execute(f"PRAGMA busy_timeout = {previous}")


def finish_owed(conn: sqlite3.Connection) -> bool:
    """On open: do the ``VACUUM`` and the checkpoint an earlier purge still owes; True when
    nothing is owed any more."""
    owed = _owed(conn)
    if OWED_VACUUM in owed:
        previous = _short_wait(conn)
        try:
            conn.execute("VACUUM")
        except sqlite3.OperationalError:
            return False  # busy: the next open tries again
        finally:
            conn.execute(f"PRAGMA busy_timeout = {previous}")
        _clear(conn, OWED_VACUUM)
    if OWED_CHECKPOINT in owed or OWED_VACUUM in owed:
        return checkpoint(conn)
    return True
