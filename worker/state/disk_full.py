"""Naming a full disk under the state database, instead of SQLite's "disk I/O error".

SQLite reports ``ENOSPC`` on its database or WAL as ``SQLITE_FULL`` ("database or disk is full"),
but a WAL index (``-shm``) it cannot grow as ``SQLITE_IOERR_SHMSIZE`` ("disk I/O error"), which
reads like a broken disk. PostgreSQL reports SQLSTATE ``53100`` (``disk_full``). :func:`disk_full`
tells these apart: a SQLite I/O error counts as a full disk when the filesystem of a state
database this process opened has less than :data:`LOW_SPACE_BYTES` left. The line says where:
``disk full: the state database /data/state.db cannot grow (12 KiB free on its filesystem)``.
"""

from __future__ import annotations

import errno
import os
import sqlite3
from pathlib import Path

LOW_SPACE_BYTES = 1 << 20
_SQLITE_FULL = 13
_SQLITE_IOERR = 10
_PG_DISK_FULL = "53100"

#: SQLite state databases this process opened (registered by :mod:`worker.state.db`).
_SQLITE_PATHS: list[Path] = []


def remember_sqlite_path(path: str | None) -> None:
    if path and path != ":memory:" and Path(path) not in _SQLITE_PATHS:
        _SQLITE_PATHS.append(Path(path))


def _free_bytes(path: Path) -> int | None:
    try:
        found = os.statvfs(path.parent if not path.is_dir() else path)
    except OSError:
        return None
    return found.f_bavail * found.f_frsize


def disk_full(exc: BaseException) -> str | None:
    """The one line for ``exc`` when it is a full disk under the state database, else None."""
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:  # the driver's error is a cause
        seen.add(id(cause))
        line = _one(cause)
        if line is not None:
            return line
        cause = getattr(cause, "orig", None) or cause.__cause__
    return None


def _one(exc: BaseException) -> str | None:
    if isinstance(exc, OSError) and exc.errno == errno.ENOSPC:
        where = f" {exc.filename}" if exc.filename else ""
        return f"disk full: no space left on device{where}"
    if isinstance(exc, sqlite3.Error):
        code = getattr(exc, "sqlite_errorcode", None)
        primary = code & 0xFF if isinstance(code, int) else None
        if primary == _SQLITE_FULL or "disk is full" in str(exc):
            return _sqlite_line(always=True)
        if primary == _SQLITE_IOERR or "disk i/o error" in str(exc).lower():
            return _sqlite_line(always=False)
        return None
    if getattr(exc, "sqlstate", None) == _PG_DISK_FULL:
        return (
            "disk full on the PostgreSQL server of the state database: "
            + " ".join(str(exc).split())[:200]
        )
    return None


def _sqlite_line(*, always: bool) -> str | None:
    for path in _SQLITE_PATHS:
        free = _free_bytes(path)
        if free is not None and free < LOW_SPACE_BYTES:
            return (
                f"disk full: the state database {path} cannot grow ({free // 1024} KiB free "
                "on its filesystem); free some space and run again"
            )
    if always:
        where = f" {_SQLITE_PATHS[0]}" if _SQLITE_PATHS else ""
        return f"disk full: the state database{where} cannot grow; free some space and run again"
    return None
