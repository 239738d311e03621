"""Searching the state database: every text column of every table, queried (SQLite and
PostgreSQL), and on SQLite the files themselves (``state.db``, ``-wal``, ``-shm``, ``-journal``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy import JSON, String, Text, cast, select
from sqlalchemy.engine import make_url

from dsh_memory_worker.worker.state.database import StateDB
from dsh_memory_worker.worker.state.models import Base
from dsh_memory_worker.worker.verify.matcher import Leak, TextMatcher
from dsh_memory_worker.worker.verify.sources import Sources

SQLITE_SUFFIXES = ("", "-wal", "-shm", "-journal")
#: (``table.column``, the row's primary key, phrase) → ``None`` when the row's own legitimate
#: source explains the phrase, else why not
Explain = Callable[[str, dict[str, object], str], "str | None"]


@dataclass(slots=True)
class StateScan:
    leaks: list[Leak] = field(default_factory=list)
    columns: list[str] = field(default_factory=list)
    #: phrases a row holds that its own source explains
    held: set[str] = field(default_factory=set)


def state_files(url: str) -> list[Path]:
    """The files of a SQLite state database that exist now (none for PostgreSQL)."""
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite" or parsed.database in (None, "", ":memory:"):
        return []
    main = Path(parsed.database)
    return [
        Path(f"{main}{suffix}") for suffix in SQLITE_SUFFIXES if Path(f"{main}{suffix}").is_file()
    ]


def scan_state(state: StateDB, sources: Sources, explain: Explain | None = None) -> StateScan:
    """Every text value of the state database searched for the phrases of ``sources``; a phrase
    ``explain`` accounts for is not a leak."""
    scan = StateScan()
    matcher = TextMatcher(sources.messages)
    with state.read() as repos:
        for table in Base.metadata.sorted_tables:
            keys = list(table.primary_key.columns)
            for column in table.columns:
                if not isinstance(column.type, String | Text | JSON) or column.primary_key:
                    continue
                scan.columns.append(f"{table.name}.{column.name}")
                if not matcher:
                    continue
                query = select(*keys, cast(column, Text)).where(column.is_not(None))
                for row in repos.conn.execute(query):
                    text = row[-1]
                    if not isinstance(text, str):
                        continue
                    key = {k.name: v for k, v in zip(keys, row[:-1], strict=True)}
                    ident = ", ".join(f"{k}={v}" for k, v in key.items())
                    place = f"{table.name}.{column.name}"
                    for message, phrase in matcher.find(text):
                        why = (
                            explain(place, key, phrase)
                            if explain is not None
                            else "no source of this column holds it"
                        )
                        if why is None:
                            scan.held.add(phrase)
                            continue
                        scan.leaks.append(
                            Leak(
                                f"state {place} [{ident}]",
                                "query",
                                message.session_id,
                                message.name,
                                message.seq,
                                message.why,
                                phrase,
                                why,
                            )
                        )
    return scan
