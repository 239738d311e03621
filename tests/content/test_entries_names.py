"""Entry names, tags, scopes and embed flags per entry kind, and the constants behind them."""

from __future__ import annotations

import hashlib
import re
from datetime import date

from dsh_memory_worker.memory import constants as C
from dsh_memory_worker.memory.entries import (
    LOG_EDGE_POLICY,
    MESSAGE_POLICY,
    SESSION_POLICY,
    WORK_UNIT_EDGE_POLICY,
    archive_data,
    archive_name,
    is_operational_name,
    is_operational_tag,
    message_name,
    scopes_for,
    session_name,
    span_summary_name,
    summary_policy,
    work_unit_content,
    work_unit_data,
    work_unit_name,
    work_unit_policy,
)


def test_name_formats() -> None:
    assert C.MESSAGE_NAME == "msg-{session_id}-{ordinal}"
    assert C.SESSION_NAME == "session-{session_id}"
    assert C.SPAN_SUMMARY_NAME == "sum-{session_id}-{from_seq}-{to_seq}"
    assert C.ARCHIVE_NAME == "sum{level}-{digest}"
    assert C.WORK_UNIT_NAME == "wu-{slug}-{digest}"
    assert message_name("s1", 0) == "msg-s1-0"
    for sid, n in (("s1", 0), ("a-b,c", 12), ("", 7)):  # spelled out, must equal the template
        assert message_name(sid, n) == C.MESSAGE_NAME.format(session_id=sid, ordinal=n)
    assert session_name("s1") == "session-s1"
    assert span_summary_name("s1", 4, 7) == "sum-s1-4-7"


def test_archive_name_is_order_independent_and_tiered() -> None:
    members = ["sum-a-0-10", "sum-b-3-9", "sum-a-10-20"]
    name = archive_name(2, members)
    assert re.fullmatch(r"sum2-[0-9a-f]{12}", name)
    assert name == archive_name(2, reversed(members))
    expected = hashlib.sha256("\n".join(sorted(members)).encode()).hexdigest()[:12]
    assert name == f"sum2-{expected}"
    assert archive_name(3, members) == f"sum3-{expected}"
    assert archive_name(2, members[:2]) != name


def test_work_unit_name_is_content_addressed() -> None:
    content = work_unit_content("Wrap shared state in Arc<Mutex<T>>.", "pattern")
    assert content == "Wrap shared state in Arc<Mutex<T>>.\n\n_Classification: pattern_"
    name = work_unit_name("Use Arc<Mutex<T>> for shared state", content)
    assert re.fullmatch(r"wu-use-arc-mutex-t-for-shared-state-[0-9a-f]{8}", name)
    slug = "use-arc-mutex-t-for-shared-state"
    digest = hashlib.sha256(f"{slug}\n{content.strip()}".encode()).hexdigest()[:8]
    assert name == f"wu-{slug}-{digest}"
    # independent of the recorded date; the classification is part of the hash
    assert work_unit_data(content, date(2025, 9, 9)).endswith("\n\n_Recorded: 2025-09-09_")
    assert name != work_unit_name(
        "Use Arc<Mutex<T>> for shared state",
        work_unit_content("Wrap shared state in Arc<Mutex<T>>."),
    )
    assert work_unit_name("---", "x").startswith("wu-memory-")


def test_tags_scopes_embed_per_kind() -> None:
    assert (MESSAGE_POLICY.tags, MESSAGE_POLICY.embed) == (("message",), False)
    assert (SESSION_POLICY.tags, SESSION_POLICY.embed) == (("session",), False)
    assert (summary_policy().tags, summary_policy().embed) == (("summary", "summary 1"), True)
    assert summary_policy(3).tags == ("summary", "summary 3")
    assert LOG_EDGE_POLICY.embed is False
    assert WORK_UNIT_EDGE_POLICY.embed is True
    policy = work_unit_policy(["Rust", "Concurrency Patterns", "a", "b", "c", "d", "e"])
    assert policy.tags == (
        "memory",
        "work-unit",
        "rust",
        "concurrency-patterns",
        "a",
        "b",
        "c",
        "d",
    )
    assert policy.embed is True
    assert scopes_for("demo") == ("demo",)


def test_relations_and_operational_names() -> None:
    assert (C.REL_BELONG_TO, C.REL_SUMMARY, C.REL_IS_A, C.REL_DERIVED_FROM) == (
        "belongTo",
        "summary",
        "is_a",
        "derivedFrom",
    )
    assert (C.REL_REFINES, C.REL_EXTENDS, C.REL_SUPERSEDES) == ("refines", "extends", "supersedes")
    assert C.WORK_UNIT_CLASS == "work-unit"
    for name in (
        "msg-s-1",
        "sum-s-1-2",
        "sum2-abc",
        "summary-of-x",
        "session-s",
        "hypatia-dream-run-1",
    ):
        assert is_operational_name(name)
    assert not is_operational_name("wu-x-12345678")
    for tag in ("message", "session", "summary", "summary 2", "hypatia-dream-run"):
        assert is_operational_tag(tag)
    assert not is_operational_tag("summaryish")


def test_archive_data() -> None:
    assert archive_data(2, "body", "Title") == "# Title\n\nbody"
    assert archive_data(2, "body") == "# Archive tier 2\n\nbody"
