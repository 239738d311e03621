"""Raw byte scans for the forgetting tests: which files of a shelf or a state database still hold
a removed string, in any form an index may store it.

Canaries here are single FTS tokens (``Zq<10 hex>Canary``): a hyphenated ``CANARY-s-1-ASK``
is split by the tokenizer into common terms (``canary``, ``s``, ``1``) that say nothing about a
leak. FTS5 stores terms lowercased and porter-stemmed, so each canary is searched as written,
lowercased, and by its lowercased distinctive head (``zq`` + the hex), which a stem keeps.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import psycopg
from canary_support import CanarySession
from state_db_support import PG_ADMIN_DSN

from hypatia_lite import db, shelves

HEAD = 12  # "zq" + 10 hex digits: unique per canary, kept by any stem


def token(seed: str) -> str:
    """A canary that is one FTS token, unique per ``seed``."""
    return "Zq" + hashlib.sha256(seed.encode()).hexdigest()[:10] + "Canary"


def forms(canary: str) -> list[bytes]:
    """The byte strings a leak of ``canary`` may show up as."""
    text = canary.encode()
    return sorted({text, text.lower(), text.lower()[:HEAD]})


class TokenSession(CanarySession):
    """A :class:`CanarySession` whose canaries are single FTS tokens (see the module doc)."""

    def canary(self, label: str, role: str) -> str:
        return token(f"{self.log.session_id}-{label}-{role}")


def shelf_files(lite_home: Path, shelf: str = shelves.DEFAULT_SHELF) -> list[Path]:
    """Every file of the shelf database that exists: ``hypatia.sqlite``, ``-wal``, ``-shm``."""
    base = shelves.resolve(shelves.lite_home(lite_home), shelf) / db.DB_FILE
    assert base.is_file(), base
    return [p for p in (base, Path(f"{base}-wal"), Path(f"{base}-shm")) if p.exists()]


def state_files(root: Path) -> list[Path]:
    """Every file of the SQLite state database ``root/data/state.db`` that exists."""
    base = root / "data" / "state.db"
    assert base.is_file(), base
    return [p for p in (base, Path(f"{base}-wal"), Path(f"{base}-shm")) if p.exists()]


def leaks(files: list[Path], canaries: Any) -> list[tuple[str, str]]:
    """``(file name, form)`` for every form of every canary found in the files' bytes."""
    found = []
    for path in files:
        data = path.read_bytes()
        for canary in canaries:
            found += [(path.name, f.decode()) for f in forms(canary) if f in data]
    return sorted(set(found))


def present(files: list[Path], canaries: Any) -> set[str]:
    """The canaries whose exact text is somewhere in the files' bytes (the scans' control)."""
    blob = b"".join(p.read_bytes() for p in files)
    return {c for c in canaries if c.encode() in blob}


def pg_table_file(url: str, table: str = "sessions") -> Path:
    """The file of a PostgreSQL table of the database at ``url``, after a CHECKPOINT wrote its
    pages to disk (the server is local: its data directory is readable here)."""
    name = url.rsplit("/", 1)[1]
    with psycopg.connect(
        PG_ADMIN_DSN.replace("dbname=postgres", f"dbname={name}"), autocommit=True
    ) as conn:
        conn.execute("CHECKPOINT")
        data = conn.execute("SHOW data_directory").fetchone()
        rel = conn.execute("SELECT pg_relation_filepath(%s)", (table,)).fetchone()
    assert data is not None and rel is not None
    return Path(data[0]) / rel[0]
