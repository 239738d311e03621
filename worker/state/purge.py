"""After a purge of stored text: make the state database's files forget it too.

Text the worker keeps in the state database and must forget (today: ``sessions.title_text``,
the session's title, derived from its messages) is *overwritten* by an ``UPDATE`` (see
:meth:`worker.state.sessions.SessionRepo.scrub_title`), never only flagged. Error records
(``failures``, ``model_calls``) never hold message text, and ``forget`` deletes a session's rows
of them as well; their tables are purged with ``sessions``. What the engine
then still holds, and what :func:`after_purge` does about it:

* **SQLite.** Every connection sets ``PRAGMA secure_delete = ON`` (:mod:`worker.state.db`), so
  the old version of the row is zeroed in the page the ``UPDATE`` rewrites. Older images of that
  page stay in ``state.db-wal`` until a checkpoint: :func:`after_purge` runs
  ``PRAGMA wal_checkpoint(TRUNCATE)``. Readers holding an older snapshot (or a writer) keep it
  from finishing; it waits at most ``CHECKPOINT_WAIT_MS`` and reports False — nothing is lost,
  and the caller (:meth:`worker.state.database.StateDB.after_purge`) tries again at the end of
  its next transaction.
* **PostgreSQL.** An ``UPDATE`` writes a new tuple and leaves the old one as a dead tuple (MVCC)
  in the table's file; a plain ``VACUUM`` makes its space reusable but leaves the bytes in the
  page. :func:`after_purge` runs ``VACUUM (FULL, VERBOSE)`` on the affected tables, which
  rewrites them into new files (``sessions`` holds one small row per session: milliseconds,
  under an exclusive lock that waits at most 5 s). A snapshot that still sees the old tuple
  (another connection's open transaction, or a backend starting up on a busy server) makes the
  rewrite keep it; the rewrite's report says so, and it is tried twice more after a short pause
  (:mod:`hypatia_lite.pg.vacuum`). When the lock is not had or the tuple is still kept, it
  reports False and the next ``after_purge`` or ``dispose`` of that ``StateDB`` tries again.
  PostgreSQL's own WAL (``pg_wal``), WAL archives and backups keep the old row until they are
  recycled or expire; that is the operator's retention.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import Engine
from sqlalchemy.exc import DBAPIError

CHECKPOINT_WAIT_MS = 250
PURGED_TABLES = ("sessions", "failures", "model_calls")
#: the tables a migration may have rewritten text of (work units' names, revision 0004)
MIGRATED_TABLES = ("audit", "provenance")


def after_purge(engine: Engine, tables: Sequence[str] = PURGED_TABLES) -> bool:
    """Remove the old versions of purged rows from the database files (see the module doc);
    True when done, False when another connection kept it from finishing (try again later)."""
    if engine.dialect.name == "sqlite":
        return _sqlite_checkpoint(engine)
    from hypatia_lite.pg.vacuum import rewrite_clean  # psycopg: PostgreSQL only

    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        raw = conn.connection.driver_connection
        assert raw is not None  # a checked-out connection always has one
        return rewrite_clean(raw, tables)


def _sqlite_checkpoint(engine: Engine) -> bool:
    raw = engine.raw_connection()
    try:
        cursor = raw.cursor()
        try:
            previous = cursor.execute("PRAGMA busy_timeout").fetchone()[0]
            cursor.execute(f"PRAGMA busy_timeout = {CHECKPOINT_WAIT_MS}")
            try:
                busy = cursor.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
            finally:
                cursor.execute(f"PRAGMA busy_timeout = {int(previous)}")
        finally:
            cursor.close()
    except DBAPIError:
        return False
    except Exception as err:  # the DBAPI's own OperationalError (locked) outside SQLAlchemy
        if "locked" in str(err).lower() or "busy" in str(err).lower():
            return False
        raise
    finally:
        raw.close()
    return not busy
