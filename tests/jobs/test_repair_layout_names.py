"""Reading the derived layout back: a span summary name belongs to exactly one session even when
session ids share a prefix or contain dashes; archive tiers are parsed from ``sum<L>-<digest12>``
and nothing else."""

from __future__ import annotations

from dsh_memory_worker.worker.jobs.storeview import (
    SpanSummaryRef,
    archive_level,
    parse_span_summary,
)


def test_span_summary_names_parse_to_their_own_session_only() -> None:
    assert parse_span_summary("sum-s-a-0-12", "s-a") == SpanSummaryRef("sum-s-a-0-12", 0, 12)
    assert parse_span_summary("sum-s-a-b-3-9", "s-a-b") == SpanSummaryRef("sum-s-a-b-3-9", 3, 9)
    assert parse_span_summary("sum-s-a-b-3-9", "s-a") is None  # another session's summary
    assert parse_span_summary("sum-s-a-3", "s-a") is None
    assert parse_span_summary("sum-s-a-x-9", "s-a") is None
    assert parse_span_summary("sum2-0123456789ab", "s-a") is None
    uuid = "7d3c1f0e-2b6a-4c59-9e1d-5a8f3b2c4d10"
    assert parse_span_summary(f"sum-{uuid}-42-108", uuid) == SpanSummaryRef(
        f"sum-{uuid}-42-108", 42, 108
    )


def test_archive_levels() -> None:
    assert archive_level("sum2-0123456789ab") == 2
    assert archive_level("sum12-abcdefabcdef") == 12
    assert archive_level("sum-s-a-0-12") is None
    assert archive_level("sum2-0123456789") is None
    assert archive_level("wu-lesson-01234567") is None
