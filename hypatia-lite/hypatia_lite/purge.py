"""Deleted means gone from the bytes: the shelf's secure-delete set-up and its purge checkpoint.

Three places can keep a deleted entry's text after ``DELETE`` commits, and each is closed here
or in :func:`hypatia_lite.db.connect`:

* **Table pages.** SQLite only unlinks a deleted cell or page. Every shelf connection sets
  ``PRAGMA secure_delete = ON``: the freed space is overwritten with zeros in the same write.
* **The FTS5 index.** FTS5's ``delete`` appends a tombstone; the old segment keeps the terms
  until a merge rewrites it. The index has its ``secure-delete`` option on (SQLite 3.42+, hence
  :mod:`hypatia_lite.sqlitelib`): a delete rewrites the leaf pages holding the document's
  terms without them — work proportional to the document, not to the shelf. A shelf created
  before the option gets it on its first open, with one ``rebuild`` of the index (its old
  segments may hold earlier deletes) and one ``VACUUM`` (its free pages were never zeroed).
* **The WAL.** Old page images stay in ``hypatia.sqlite-wal`` until a checkpoint copies the
  newest ones into the database and the log is truncated. Once a transaction that removes text
  has committed, :func:`hypatia_lite.db.write` runs ``PRAGMA wal_checkpoint(TRUNCATE)``
  (which syncs the WAL, then the database file, before it truncates: the write is as durable as
  any other). A checkpoint cannot finish while another connection reads an older snapshot (or
  writes); it then waits at most ``CHECKPOINT_WAIT_MS`` and gives up without losing anything
  (the frames stay valid in the WAL, which is fsynced as after any write), and the checkpoint is
  owed: recorded in this connection and as ``purge_checkpoint_owed`` in ``meta``, so the next
  opportunity does it — the next write of this connection, its ``close``, or the next open of
  the shelf by any process; the flag is cleared after a checkpoint that truncated. (A process
  killed between a purge's commit and its checkpoint leaves the frames to the next purge's
  checkpoint, or to the last connection's close, which checkpoints and deletes the WAL.)

``-shm`` holds the WAL index (page numbers and frame offsets), never row content.
"""

from __future__ import annotations

from hypatia_lite.sqlitelib import sqlite3

CHECKPOINT_WAIT_MS = 250
OWED_CHECKPOINT = "purge_checkpoint_owed"
OWED_VACUUM = "purge_vacuum_owed"
_SET_OWED = "INSERT OR REPLACE INTO meta(k, v) VALUES (?, '1')"


def configure_index(conn: sqlite3.Connection) -> None:
    """Turn the FTS5 index's ``secure-delete`` on unless it is (inside the open transaction).
    An index that held documents before is rebuilt, and a ``VACUUM`` is owed."""
    found = conn.execute("SELECT v FROM docs_fts_config WHERE k = 'secure-delete'").fetchone()
    if found is not None and found[0] == 1:
        return
    conn.execute("INSERT INTO docs_fts(docs_fts, rank) VALUES ('secure-delete', 1)")
    if conn.execute("SELECT 1 FROM docs LIMIT 1").fetchone() is not None:
        conn.execute("INSERT INTO docs_fts(docs_fts) VALUES ('rebuild')")
        conn.execute(_SET_OWED, (OWED_VACUUM,))


def _owed(conn: sqlite3.Connection) -> set[str]:
    rows = conn.execute(
        "SELECT k FROM meta WHERE k IN (?, ?)", (OWED_CHECKPOINT, OWED_VACUUM)
    ).fetchall()
    return {str(row[0]) for row in rows}


def _short_wait(conn: sqlite3.Connection) -> int:
    previous = int(conn.execute("PRAGMA busy_timeout").fetchone()[0])
    conn.execute(f"PRAGMA busy_timeout = {CHECKPOINT_WAIT_MS}")
    return previous


def _set_flag(conn: sqlite3.Connection, key: str, owed: bool) -> bool:
    """Set or clear an owed flag in ``meta`` in its own short transaction; False when the write
    lock stayed busy (the flag is then unchanged)."""
    previous = _short_wait(conn)
    try:
        conn.execute("BEGIN IMMEDIATE")
    except sqlite3.OperationalError:
        return False
    finally:
        conn.execute(f"PRAGMA busy_timeout = {previous}")
    try:
        if owed:
            conn.execute(_SET_OWED, (key,))
        else:
            conn.execute("DELETE FROM meta WHERE k = ?", (key,))
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
    return True


def truncate_wal(conn: sqlite3.Connection) -> bool:
    """Checkpoint the whole WAL into the database and truncate it to zero bytes; True when done,
    False (nothing lost) when readers or a writer kept it from finishing within
    ``CHECKPOINT_WAIT_MS``."""
    previous = _short_wait(conn)
    try:
        busy = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
    except sqlite3.OperationalError:  # locked: another checkpoint or a writer
        return False
    finally:
        conn.execute(f"PRAGMA busy_timeout = {previous}")
    return not busy


def after_purge(conn: sqlite3.Connection, owed_before: bool) -> bool:
    """After a purge (or with an owed checkpoint) committed: truncate the WAL. Returns whether
    the checkpoint is still owed; it is then recorded in ``meta`` (best effort: another writer
    may hold the lock) for the next opportunity. ``owed_before``: an owed flag may be set, to be
    cleared once the checkpoint is done."""
    if truncate_wal(conn):
        if owed_before:
            _set_flag(conn, OWED_CHECKPOINT, False)  # writes only the ``meta`` page
        return False
    _set_flag(conn, OWED_CHECKPOINT, True)
    return True


def finish_owed(conn: sqlite3.Connection) -> bool:
    """On open: do the ``VACUUM`` and the checkpoint an earlier purge still owes; True when a
    checkpoint is still owed afterwards."""
    owed = _owed(conn)
    if OWED_VACUUM in owed:
        previous = _short_wait(conn)
        try:
            conn.execute("VACUUM")
        except sqlite3.OperationalError:
            return True  # busy: the next open tries again
        finally:
            conn.execute(f"PRAGMA busy_timeout = {previous}")
        _set_flag(conn, OWED_VACUUM, False)
        owed.add(OWED_CHECKPOINT)
    if OWED_CHECKPOINT in owed:
        return after_purge(conn, True)
    return False
