"""The cascade's batching rules, archive prompt and reply parser."""

from __future__ import annotations

import pytest

from dsh_memory_worker.memory.consolidation.archive import (
    Archive,
    ArchiveMember,
    archive_levels,
    archive_prompt,
    not_summarised_query,
    parse_archive,
    plan_cascade_batch,
)
from dsh_memory_worker.memory.llm import UnusableModelOutput
from dsh_memory_worker.memory.store.base import Content, KnowledgeEntry


def entry(name: str, data: str = "") -> KnowledgeEntry:
    return KnowledgeEntry(name, Content(data=data or f"body of {name}"), "2026-01-01 00:00:00.000")


def test_the_query_uses_the_object_form_with_a_limit() -> None:
    assert not_summarised_query(2, "demo", 16) == {
        "$not-summaried": ["summary 1", ["$contains", "scopes", "demo"]],
        "limit": 16,
    }
    assert not_summarised_query(5, "/", 3)["$not-summaried"][0] == "summary 4"


def test_tiers_climb_from_two_to_eight() -> None:
    assert list(archive_levels()) == [2, 3, 4, 5, 6, 7, 8]


def test_a_full_batch_takes_the_first_rows_in_order() -> None:
    rows = [entry(f"sum-s-{i}-{i + 1}") for i in range(5)]
    batch = plan_cascade_batch(rows, 2, 3)
    assert batch == [
        ArchiveMember("sum-s-0-1", "body of sum-s-0-1"),
        ArchiveMember("sum-s-1-2", "body of sum-s-1-2"),
        ArchiveMember("sum-s-2-3", "body of sum-s-2-3"),
    ]


def test_a_short_tier_archives_nothing() -> None:
    assert plan_cascade_batch([entry("sum-a-0-1"), entry("sum-a-1-2")], 2, 3) is None
    assert plan_cascade_batch([], 2, 16) is None


def test_rows_without_a_string_name_do_not_count() -> None:
    class Nameless:
        name = None
        content = Content(data="x")

    rows = [entry("sum-a-0-1"), Nameless(), entry("sum-a-1-2")]
    assert plan_cascade_batch(rows, 2, 3) is None
    assert [m.name for m in plan_cascade_batch([*rows, entry("sum-a-2-3")], 2, 3) or []] == [
        "sum-a-0-1",
        "sum-a-1-2",
        "sum-a-2-3",
    ]


def test_no_batch_past_the_tier_ceiling() -> None:
    rows = [entry(f"sum8-{i:012x}") for i in range(3)]
    assert plan_cascade_batch(rows, 9, 3) is None
    assert plan_cascade_batch(rows, 8, 3) is not None


def test_the_prompt_lists_members_oldest_first_with_numbered_headings() -> None:
    members = [ArchiveMember("sum-s-0-4", "- a\n- b"), ArchiveMember("sum-s-4-9", "- c")]
    prompt = archive_prompt(3, members)
    assert "building tier 3" in prompt
    assert "Below are 2 summaries from tier 2, oldest first." in prompt
    assert (
        '{"title": "<short descriptive noun phrase>", "summary": "<markdown: 5-10 terse bullets>"}'
        in prompt
    )
    assert prompt.endswith("### 1. sum-s-0-4\n- a\n- b\n\n### 2. sum-s-4-9\n- c")


def test_a_reply_becomes_the_archive_markdown() -> None:
    archive = parse_archive('{"title": " Build  system work ", "summary": " - one\\n- two "}', 2)
    assert archive == Archive(2, "Build system work", "- one\n- two")
    assert archive.markdown == "# Build system work\n\n- one\n- two"


def test_a_missing_title_defaults_to_the_tier() -> None:
    archive = parse_archive('```json\n{"summary": "- x"}\n```', 4)
    assert archive.title == "Archive tier 4"
    assert archive.markdown == "# Archive tier 4\n\n- x"


@pytest.mark.parametrize(
    "reply", ["the archive is: nothing", '{"title": "t"}', '{"summary": ""}', '"x"']
)
def test_an_unusable_reply_is_never_quoted(reply: str) -> None:
    with pytest.raises(UnusableModelOutput) as caught:
        parse_archive(reply, 2)
    assert str(caught.value).startswith("cascade output ")
    assert "archive is" not in str(caught.value)
