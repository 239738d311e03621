"""The provenance repository keeps one row per (shelf, entry): a rewrite replaces the writer, other
shelves and entries are untouched, and an unknown kind is refused — on SQLite and PostgreSQL."""

from __future__ import annotations

import pytest

from dsh_memory_worker.memory.consolidation.extraction import extraction_instruction
from dsh_memory_worker.memory.consolidation.prompt_version import prompt_version
from dsh_memory_worker.worker.state import StateDB
from dsh_memory_worker.worker.state.provenance import Writer

A = Writer("http://a/v1/model-a", "model-a", "aaaaaaaaaaaa")
B = Writer("http://b/v1/model-b", "model-b", "bbbbbbbbbbbb")


def test_a_rewrite_replaces_the_writer_of_exactly_its_entries(state_db: StateDB) -> None:
    with state_db.transaction() as repos:
        repos.provenance.record("default", ["sum-s-0-4", "wu-x-1"], "summary", A, "s")
        repos.provenance.record("other", ["sum-s-0-4"], "summary", A, "s")
    with state_db.transaction() as repos:
        repos.provenance.record("default", ["sum-s-0-4"], "summary", B, "s")
    with state_db.read() as repos:
        rows = repos.provenance.get_many("default", ["sum-s-0-4", "wu-x-1", "absent"])
        other = repos.provenance.list("other")
        summaries = repos.provenance.list("default", kind="summary")
    assert {name: row.writer for name, row in rows.items()} == {"sum-s-0-4": B, "wu-x-1": A}
    assert [(p.name, p.writer) for p in other] == [("sum-s-0-4", A)]
    assert [p.name for p in summaries] == ["sum-s-0-4", "wu-x-1"]
    assert rows["sum-s-0-4"].session_id == "s"
    with state_db.transaction() as repos, pytest.raises(ValueError, match="unknown provenance"):
        repos.provenance.record("default", ["x"], "message", A)


def test_the_prompt_version_follows_the_prompt_text() -> None:
    assert prompt_version(3) == prompt_version(3)
    assert len(prompt_version(3)) == 12
    assert prompt_version(3) != prompt_version(4)  # the instruction quotes the maximum
    assert "At most 4 work units." in extraction_instruction(4)
