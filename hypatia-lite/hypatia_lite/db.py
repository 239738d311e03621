"""The shelf database: one SQLite file in WAL mode, its schema and write transactions.

Several processes may open one shelf at once: every connection sets ``busy_timeout``, writes run
in short ``BEGIN IMMEDIATE`` transactions, and a lock that outlives the timeout is retried a few
times before it surfaces as a ``TransientStoreError`` (never a raw ``database is locked``).

Durability: every write is on disk before :func:`write` returns, even across an OS crash or
power loss. The worker advances its watermarks (in another database, where a lost last
transaction only makes them lag) after a write returns; if a write could still be lost after
returning, an OS crash could keep the advance and drop the entries, leaving a watermark ahead of
the store. The commit itself runs with ``synchronous = NORMAL`` (no fsync while the write lock
is held), and :func:`write` then fsyncs the WAL file after the lock is released: the same
guarantee as ``FULL``, but another process waiting for the lock does not also wait for the disk.
(A checkpoint that moved the frames into the database file first has synced that file.)

Deletion leaves no bytes behind (see :mod:`hypatia_lite.purge`): every connection sets
``PRAGMA secure_delete = ON`` (freed cells and pages are zeroed), the FTS5 index has its
``secure-delete`` option on (a deleted document's terms are removed from the index segments,
not only marked deleted), and a write that removes text is a *purge* (:func:`write` with
``purge_text=True``) that ends with a truncating WAL checkpoint.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

from hypatia_lite import purge, retry
from hypatia_lite.protocol import TransientStoreError
from hypatia_lite.sqlitelib import sqlite3

DB_FILE = "hypatia.sqlite"
SCHEMA_VERSION = "1"
BUSY_TIMEOUT_MS = 10_000
_LOCK_RETRIES = 6
#: 0.05 s before the second try, doubling: 1.55 s in all before the sixth gives up.
_LOCK_BACKOFF = retry.Backoff(0.05, cap=1.0)

T = TypeVar("T")

# ``id`` columns are AUTOINCREMENT so they never go backwards: they break ``created_at`` ties
# (entries created in the same millisecond) in insertion order. The partial ``*_owed`` and
# ``*_vector_model`` indexes hold only rows that want a vector, so counting pending embeddings
# (every MCP write reply does) is a few index probes, not a scan of the table.
_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (k TEXT PRIMARY KEY, v TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS knowledge (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL UNIQUE,
    content TEXT NOT NULL,
    created_at TEXT NOT NULL,
    embed_wanted INTEGER NOT NULL DEFAULT 1,
    embedding BLOB,
    embedding_model TEXT
);
CREATE TABLE IF NOT EXISTS statement (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    triple TEXT NOT NULL UNIQUE,
    head TEXT NOT NULL,
    relation TEXT NOT NULL,
    tail TEXT NOT NULL,
    content TEXT NOT NULL,
    created_at TEXT NOT NULL,
    embed_wanted INTEGER NOT NULL DEFAULT 1,
    embedding BLOB,
    embedding_model TEXT
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
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    catalog TEXT NOT NULL,
    key TEXT NOT NULL,
    fts_key TEXT NOT NULL,
    fts_data TEXT NOT NULL,
    fts_tags TEXT NOT NULL,
    fts_synonyms TEXT NOT NULL,
    UNIQUE (catalog, key)
);
CREATE VIRTUAL TABLE IF NOT EXISTS docs_fts USING fts5(
    fts_key, fts_data, fts_tags, fts_synonyms,
    content='docs', content_rowid='id', tokenize='porter unicode61'
);
DROP TRIGGER IF EXISTS docs_ai;
CREATE TRIGGER IF NOT EXISTS docs_ad AFTER DELETE ON docs BEGIN
    INSERT INTO docs_fts(docs_fts, rowid, fts_key, fts_data, fts_tags, fts_synonyms)
    VALUES ('delete', old.id, old.fts_key, old.fts_data, old.fts_tags, old.fts_synonyms);
END;
CREATE TRIGGER IF NOT EXISTS docs_au AFTER UPDATE ON docs BEGIN
    INSERT INTO docs_fts(docs_fts, rowid, fts_key, fts_data, fts_tags, fts_synonyms)
    VALUES ('delete', old.id, old.fts_key, old.fts_data, old.fts_tags, old.fts_synonyms);
    INSERT INTO docs_fts(rowid, fts_key, fts_data, fts_tags, fts_synonyms)
    VALUES (new.id, new.fts_key, new.fts_data, new.fts_tags, new.fts_synonyms);
END;
"""


def _is_lock_error(err: sqlite3.OperationalError) -> bool:
    text = str(err).lower()
    return "locked" in text or "busy" in text


def retry_locked(action: Callable[[], T]) -> T:
    """Run ``action``; retry a few times when SQLite reports the database locked or busy."""
    try:
        return retry.call(
            action,
            times=_LOCK_RETRIES,
            backoff=_LOCK_BACKOFF,
            retry_on=lambda err: isinstance(err, sqlite3.OperationalError) and _is_lock_error(err),
        )
    except sqlite3.OperationalError as err:
        if not _is_lock_error(err):
            raise
        raise TransientStoreError(f"storage error: SQLite error: {err}") from err


class ShelfConnection(sqlite3.Connection):
    """A shelf connection that knows its WAL file (fsynced after every write) and whether a
    purge still owes its truncating checkpoint (:mod:`hypatia_lite.purge`)."""

    wal_path: str = ""
    checkpoint_owed: bool = False


def connect(shelf_dir: Path) -> ShelfConnection:
    """Open (creating if needed) the shelf database and make sure its schema exists."""
    shelf_dir.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(
        str(shelf_dir / DB_FILE),
        timeout=BUSY_TIMEOUT_MS / 1000,
        isolation_level=None,
        check_same_thread=False,
        factory=ShelfConnection,
    )
    conn.wal_path = str(shelf_dir / DB_FILE) + "-wal"
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    conn.execute("PRAGMA secure_delete = ON")  # per connection: freed cells/pages are zeroed

    def _init() -> None:
        mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
        if str(mode).lower() != "wal":
            conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")  # write() syncs: see the module doc
        script = (
            "BEGIN IMMEDIATE;\n"
            + _SCHEMA
            + f"INSERT OR IGNORE INTO meta(k, v) VALUES ('schema_version', '{SCHEMA_VERSION}');\n"
        )
        try:
            conn.executescript(script)
            purge.configure_index(conn)
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise

    try:
        retry_locked(_init)
        conn.checkpoint_owed = purge.finish_owed(conn)
    except BaseException:
        conn.close()
        raise
    return conn


@contextmanager
def write(conn: ShelfConnection, *, purge_text: bool = False) -> Iterator[None]:
    """A short ``BEGIN IMMEDIATE`` transaction: committed on success, rolled back on error; on
    disk when this returns (see the module doc).

    ``purge_text``: the transaction removes stored text (a delete, or an update that replaces
    content). Once it has committed, the WAL is checkpointed and truncated (the checkpoint
    syncs the WAL and the database); when other connections keep it from finishing, the WAL is
    fsynced instead and the checkpoint is owed (:mod:`hypatia_lite.purge`)."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
    if purge_text or conn.checkpoint_owed:
        try:
            owed = purge.after_purge(conn, conn.checkpoint_owed)
        except sqlite3.OperationalError:  # never let a lock retry run a committed write again
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            owed = True
        if owed or not purge_text:
            sync_wal(conn)
        conn.checkpoint_owed = owed
    else:
        sync_wal(conn)


def sync_wal(conn: ShelfConnection) -> None:
    """fsync the connection's WAL file: every transaction committed to it is then on disk."""
    try:
        fd = os.open(conn.wal_path, os.O_RDONLY)
    except FileNotFoundError:
        return  # not in WAL mode (nothing was written through a WAL)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
