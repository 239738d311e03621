"""Which host summary the session node shows (``memory.titles``), decided without a database:
the first clean title or compaction summary; a title citing a withdrawn message, or a summary
whose checkpoint was withdrawn, does not count."""

from __future__ import annotations

from typing import Any

from eventkit import assistant, marker, other, user

from dsh_memory_worker.memory.dsh.events import Event
from dsh_memory_worker.memory.titles import HostSummary, choose_title, survey_titles


def title(seq: int, text: str, cites: list[int], kind: str = "fallback", **extra: Any) -> Event:
    return other(
        seq,
        "session/title",
        {"title": text, "messageSeqs": cites, "source": {"kind": kind}, **extra},
    )


def summary(seq: int, text: str, shadowed: list[int]) -> Event:
    return other(
        seq,
        "compaction/summary",
        {
            "compactionId": "cmp-1",
            "summary": [{"type": "text", "text": text}],
            "shadowedRange": {"start": shadowed[0], "end": shadowed[-1]},
            "shadowedSeqs": shadowed,
        },
    )


def checkpoint(seq: int, cites: list[int], span: tuple[int, int]) -> Event:
    return user(seq, "checkpoint", kind="compact-checkpoint", sources=cites, replace=span)


def test_without_withdrawals_the_first_host_summary_wins() -> None:
    events = [
        user(1, "Fix the flaky parser test in CI"),
        title(2, "Fix the flaky parser", [1]),
        assistant(3, "done"),
        user(4, "now the docs"),
        title(5, "Parser and docs", [1, 4], kind="provider"),
    ]
    choice = survey_titles(events)
    assert choice.chosen == HostSummary(
        2, "session/title", "fallback", "Fix the flaky parser", frozenset({1})
    )
    assert [(s.summary.seq, s.reason) for s in choice.skipped] == [(5, "later")]


def test_a_fallback_title_citing_a_withdrawn_prompt_is_skipped_for_the_next_clean_one() -> None:
    events = [
        user(1, "Deploy zebra-canary to staging"),
        title(2, "Deploy zebra-canary to", [1]),
        assistant(3, "deploying"),
        marker(4, [1, 3]),
        user(5, "List the open pull requests"),
        title(6, "Open pull requests", [5], kind="provider"),
    ]
    choice = survey_titles(events)
    assert choice.text == "Open pull requests"
    assert choice.chosen is not None and choice.chosen.seq == 6
    (skip,) = choice.skipped
    assert (skip.summary.seq, skip.reason, skip.seq, skip.marker_seq, skip.marker_kind) == (
        2,
        "withdrawn-source",
        1,
        4,
        "dsh-rewind",
    )
    assert skip.describe() == ("cites message seq 1, withdrawn by the dsh-rewind marker at seq 4")
    assert choice.tainted() == [skip]


def test_no_clean_host_summary_means_no_node() -> None:
    events = [
        user(1, "secret plan alpha"),
        title(2, "secret plan alpha", [1]),
        marker(3, [1]),
        user(4, "something else"),
    ]
    choice = survey_titles(events)
    assert choice.chosen is None and choice.text is None
    assert [(s.summary.seq, s.reason) for s in choice.skipped] == [(2, "withdrawn-source")]


def test_source_event_seqs_taint_a_title_too() -> None:
    cited = Event(
        seq=2,
        type="session/title",
        time=None,
        data={"title": "From the log", "messageSeqs": [], "source": {"kind": "user"}},
        source_seqs=(1,),
    )
    events = [user(1, "hello"), cited, marker(3, [1])]
    assert survey_titles(events).chosen is None


def test_markers_off_the_whitelist_change_nothing() -> None:
    events = [
        user(1, "keep me"),
        title(2, "keep me", [1]),
        marker(3, [1], kind="plugin:@dsh-external/manual-context"),
    ]
    assert survey_titles(events).text == "keep me"
    assert survey_titles(events, ["plugin:@dsh-external/manual-context"]).text is None


def test_a_compaction_summary_whose_checkpoint_was_withdrawn_does_not_count() -> None:
    events = [
        user(1, "one"),
        assistant(2, "uno"),
        other(3, "compaction/start", {"compactionId": "cmp-1", "turn": 1}),
        summary(4, "Earlier: counted to one", [1, 2]),
        checkpoint(5, [3, 4, 1, 2], (1, 2)),
        other(6, "compaction/end", {"compactionId": "cmp-1", "turn": 1}),
        user(7, "two"),
        marker(8, [5, 7], kind="plugin:rollback"),
    ]
    choice = survey_titles(events)
    assert choice.chosen is None
    (skip,) = choice.skipped
    assert (skip.summary.checkpoint, skip.reason, skip.seq, skip.marker_seq) == (
        5,
        "withdrawn-checkpoint",
        5,
        8,
    )


def test_a_clean_compaction_summary_takes_over_from_a_withdrawn_title() -> None:
    events = [
        user(1, "private words here"),
        title(2, "private words here", [1]),
        marker(3, [1]),
        user(4, "real work"),
        assistant(5, "ok"),
        summary(6, "Earlier: real work was done", [4, 5]),
        # adjacency alone attaches the checkpoint when it cites nothing
        checkpoint(7, [], (4, 5)),
    ]
    choice = survey_titles(events)
    assert choice.chosen == HostSummary(
        6, "compaction/summary", "compaction", "Earlier: real work was done", frozenset({4, 5}), 7
    )


def test_a_summary_shadowing_a_withdrawn_seq_is_tainted() -> None:
    withdrawn = {4: (9, "dsh-rewind")}
    found = HostSummary(6, "compaction/summary", "compaction", "text", frozenset({4, 5}), 7)
    choice = choose_title([found], withdrawn)
    assert choice.chosen is None and choice.skipped[0].reason == "withdrawn-source"


def test_host_summaries_in_a_forks_inherited_prefix_are_the_parents() -> None:
    events = [
        user(1, "parent prompt"),
        title(2, "Parent title", [1]),
        user(5, "child prompt"),
        title(6, "Child title", [5]),
    ]
    assert survey_titles(events, cut=4).text == "Child title"


def test_an_empty_title_is_skipped_and_the_next_one_used() -> None:
    events = [user(1, "x"), title(2, "   ", [1]), title(3, "Real title", [1])]
    choice = survey_titles(events)
    assert choice.text == "Real title"
    assert [(s.summary.seq, s.reason) for s in choice.skipped] == [(2, "empty")]
