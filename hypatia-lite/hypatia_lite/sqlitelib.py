"""The SQLite library every shelf is opened with: ``sqlean`` (sqlean.py), not the stdlib's.

Forgetting needs FTS5's ``secure-delete`` option (SQLite 3.42 or newer): without it a deleted
document's terms stay in the index segments until a merge happens to rewrite them. The Python
here bundles SQLite 3.40, so hypatia-lite uses sqlean.py, a maintained drop-in build of the
stdlib ``sqlite3`` module with a current SQLite (same API, same exceptions hierarchy, its own
classes). Every piece of code that touches a shelf must use *this* module: once a shelf has
deleted a document with secure-delete on, its FTS index is format version 5, and SQLite before
3.42 refuses to use it (``invalid fts5 file format (found 5, expected 4)``); the plain tables
(``knowledge``, ``statement``, ``meta``) stay readable by any SQLite 3.

For mypy the module is typed as the stdlib ``sqlite3`` (sqlean.py ships no annotations and
mirrors that API).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import sqlite3 as sqlite3
else:
    import sqlean as sqlite3

# FTS5 ``secure-delete`` appeared in SQLite 3.42.0.
MIN_VERSION = (3, 42, 0)

if sqlite3.sqlite_version_info < MIN_VERSION:  # pragma: no cover - a broken install
    raise ImportError(
        f"hypatia-lite needs SQLite {'.'.join(map(str, MIN_VERSION))} or newer for secure "
        f"deletion; sqlean.py brought {sqlite3.sqlite_version}: reinstall sqlean-py"
    )

__all__ = ["MIN_VERSION", "sqlite3"]
