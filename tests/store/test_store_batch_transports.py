"""``write_batch`` through every hypatia-lite transport leaves the same shelf.

In-process lite writes the batch natively (one transaction); the CLI and MCP adapters have no
``write_batch`` and go through the protocol's one-call-per-item fallback. All three, on a SQLite
shelf and on a PostgreSQL shelf, must report the same created names / triples and leave the same
dump, duplicates included.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from store_contract.transports import LITE_TRANSPORTS, PG_SHELF, open_harness

from dsh_memory_worker.memory.store.base import (
    BatchResult,
    BatchWriter,
    EntryWrite,
    StatementWrite,
    write_batch,
)
from hypatia_lite.store import LiteStore

ENTRIES = [
    EntryWrite(
        "msg-t-0",
        "## Role\nuser\n\n## Content\nhello",
        tags=("message",),
        scopes=("proj",),
        embed=False,
    ),
    EntryWrite(
        "msg-t-1",
        '## Role\nassistant\n\n## Content\nhi, "there"',
        tags=("message",),
        scopes=("proj",),
        embed=False,
    ),
    EntryWrite(
        "msg-t-0", "a duplicate of the first", tags=("message",), scopes=("proj",), embed=False
    ),
    EntryWrite("session-t", "Transport session", tags=("session",), scopes=("proj",), embed=False),
]
STATEMENTS = [
    StatementWrite("msg-t-0", "belongTo", "session-t", scopes=("proj",), embed=False),
    StatementWrite("msg-t-1", "belongTo", "session-t", scopes=("proj",), embed=False),
    StatementWrite("msg-t-1", "belongTo", "session-t", scopes=("proj",), embed=False),
]


def _dump(home: Path, shelf: str) -> dict[str, Any]:
    with LiteStore(shelf, home=home) as store:
        return store.dump()


@pytest.mark.integration
def test_every_lite_transport_writes_the_same_batch(tmp_path: Path) -> None:
    dumps: dict[str, dict[str, Any]] = {}
    for transport in LITE_TRANSPORTS:
        home = tmp_path / transport
        home.mkdir()
        harness = open_harness(transport, home)
        try:
            assert isinstance(harness.store, BatchWriter) == (transport in ("lite", "lite-pg"))
            first = write_batch(harness.store, ENTRIES, STATEMENTS)
            again = write_batch(harness.store, ENTRIES, STATEMENTS)
            dumps[transport] = _dump(home, PG_SHELF if transport.endswith("-pg") else "default")
        finally:
            harness.close()
        assert first == BatchResult(
            ("msg-t-0", "msg-t-1", "session-t"),
            ("msg-t-0,belongTo,session-t", "msg-t-1,belongTo,session-t"),
        ), transport
        assert again == BatchResult(), transport
    assert list(dumps) == list(LITE_TRANSPORTS)
    for transport in LITE_TRANSPORTS:
        assert dumps[transport] == dumps["lite"], transport
    first_entry = next(r for r in dumps["lite"]["knowledge"] if r["name"] == "msg-t-0")
    assert first_entry["content"]["data"] == "## Role\nuser\n\n## Content\nhello"
    assert len(dumps["lite"]["statements"]) == 2
