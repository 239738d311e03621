"""Work-unit adjudication: candidate filtering, the prompt, verdict parsing, verdict → edges."""

from __future__ import annotations

import pytest

from dsh_memory_worker.memory.consolidation.adjudication import (
    Candidate,
    Verdict,
    adjudication_edges,
    adjudication_prompt,
    filter_candidates,
    nearest,
    parse_verdict,
    similar_exclude_tags,
    similar_limit,
    similar_query_text,
    stores_unit,
)
from dsh_memory_worker.memory.llm import UnusableModelOutput
from dsh_memory_worker.memory.store.base import Content, SimilarRow

NEW = "wu-use-arc-mutex-0a1b2c3d"


def row(
    key: str, distance: float, tags: tuple[str, ...] = ("memory",), data: str = "d"
) -> SimilarRow:
    return SimilarRow("knowledge", key, Content(data=data, tags=tags), distance)


@pytest.mark.parametrize(
    ("verdict", "edges", "stored"),
    [
        ("refines", [(NEW, "refines", "wu-old-1")], True),
        ("extends", [(NEW, "extends", "wu-old-1")], True),
        ("supersedes", [(NEW, "supersedes", "wu-old-1")], True),
        ("contradicts", [(NEW, "supersedes", "wu-old-1")], True),
        ("unrelated", [], True),
        ("duplicate", [], False),
        ("sideways", [], True),
    ],
)
def test_verdicts_map_to_edges(
    verdict: str, edges: list[tuple[str, str, str]], stored: bool
) -> None:
    assert adjudication_edges(Verdict(verdict, "wu-old-1"), NEW, "wu-old-1") == edges
    assert adjudication_edges(verdict, NEW, "wu-old-1") == edges
    assert stores_unit(Verdict(verdict)) is stored
    assert adjudication_edges(None, NEW, "wu-old-1") == []


def test_candidates_drop_self_operational_rows_and_far_rows_and_keep_three() -> None:
    rows = [
        row(NEW, 0.0),
        row("msg-s1-4", 0.05),
        row("sum-s1-0-9", 0.05),
        row("sum2-0123456789ab", 0.05),
        row("session-s1", 0.05),
        row("hypatia-dream-run-7", 0.05),
        row("wu-tagged-summary", 0.05, tags=("summary 2",)),
        row("wu-tagged-message", 0.05, tags=("message",)),
        row("", 0.05),
        row("wu-far", 0.46),
        row("wu-a", 0.10, data="alpha"),
        row("wu-b", 0.45),
        row("wu-c", 0.30),
        row("wu-d", 0.20),
    ]
    kept = filter_candidates(rows, NEW, max_distance=0.45)
    assert kept == [
        Candidate("wu-a", "alpha", 0.10),
        Candidate("wu-b", "d", 0.45),
        Candidate("wu-c", "d", 0.30),
    ]


def test_rows_without_a_distance_are_kept() -> None:
    class Row:
        key = "wu-x"
        content = Content(data="x")
        distance = None

    assert filter_candidates([Row()], NEW) == [Candidate("wu-x", "x", None)]


def test_similar_lookup_shape() -> None:
    assert similar_query_text("Title", "c" * 600) == "Title\n" + "c" * 494
    assert similar_limit(5, True) == 5
    assert similar_limit(5, False) == 20
    assert similar_limit(20, False) == 40
    assert similar_exclude_tags() == ["hypatia-dream-run", "message", "session", "summary"]


def test_the_prompt_shows_the_new_memory_and_collapsed_candidates() -> None:
    candidates = [
        Candidate("wu-old-1", "line one\n\n  line   two " + "z" * 400),
        Candidate("wu-old-2", "short"),
    ]
    prompt = adjudication_prompt("New title", "n" * 1200, candidates)
    assert (
        '{"verdict": "duplicate|refines|extends|supersedes|contradicts|unrelated", '
        '"target": "<existing entry name>"}'
    ) in prompt
    assert "Prefer unrelated when unsure — a wrong edge is worse than a missing one." in prompt
    assert f"NEW memory:\nNew title\n{'n' * 1000}\n\n" in prompt
    assert "n" * 1001 not in prompt
    first = ("line one line two " + "z" * 400)[:300]
    assert prompt.endswith(f"EXISTING memories:\n1. wu-old-1\n{first}\n\n2. wu-old-2\nshort")


def test_verdict_parsing() -> None:
    assert parse_verdict('{"verdict": " Refines ", "target": "wu-old-2"}') == Verdict(
        "refines", "wu-old-2"
    )
    assert parse_verdict('```json\n{"verdict": "duplicate"}\n```') == Verdict("duplicate", "")
    with pytest.raises(UnusableModelOutput) as caught:
        parse_verdict("I think they are related")
    assert caught.value.detail == "unparseable reply"
    assert "related" not in str(caught.value)
    with pytest.raises(UnusableModelOutput) as caught:
        parse_verdict('{"verdict": 3}')
    assert caught.value.detail == "no verdict"


def test_nearest_is_the_named_target_else_the_first_candidate() -> None:
    candidates = [Candidate("wu-a", ""), Candidate("wu-b", "")]
    assert nearest(Verdict("refines", "wu-b"), candidates) == candidates[1]
    assert nearest(Verdict("refines", "wu-zzz"), candidates) == candidates[0]
    assert nearest(Verdict("refines", ""), []) is None
