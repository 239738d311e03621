"""A span longer than ``max_span_events`` is surveyed in one streaming pass and written in slices
that end at step/turn boundaries — with exactly the store contents of an unsliced run (withdrawn
messages skipped, an earlier written one retracted, ordinals and edges aligned)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

from conftest import REPO
from pipeline_support import dump, process

from dsh_memory_worker.memory.dsh.events import Event
from dsh_memory_worker.memory.span_cut import Timing
from dsh_memory_worker.worker.jobs.logread import read_span, slice_span

sys.path.insert(0, str(REPO / "benchmarks"))
from worker_dshgen import SessionLogWriter, embedded_runtime

CWD = "/home/dev/proj"


def run(root: Path, max_span_events: int) -> tuple[dict[str, Any], list[Any]]:
    runtime = embedded_runtime(root, force_idle=True)
    runtime.max_span_events = max_span_events
    runner = process(runtime, consolidation=False)
    runtime.close()
    return dump(root), runner.stats.results


def test_sliced_spans_write_exactly_what_one_span_writes(tmp_path: Path) -> None:
    log = SessionLogWriter(tmp_path / "one" / "dsh", "s-big", CWD)
    first = log.turn("start", "started")
    log.title("A big session", first.user_seq)
    for i in range(30):
        log.turn(f"q{i}", f"a{i}", steps=2)
    doomed = log.turn("take this back", "taken back")
    log.turn("and this", "also gone")
    log.rewind(doomed.user_seq)
    for i in range(30, 45):
        log.turn(f"q{i}", f"a{i}")
    log.flush()
    shutil.copytree(tmp_path / "one", tmp_path / "sliced")

    whole, whole_results = run(tmp_path / "one", 1_000_000)
    sliced, sliced_results = run(tmp_path / "sliced", 40)
    assert sliced == whole
    names = {row["name"] for row in whole["knowledge"]}
    # 2 + 30 × 3 messages before the withdrawn two turns (ordinals 92–95), 15 turns after.
    assert not {f"msg-s-big-{n}" for n in range(92, 96)} & names
    assert {f"msg-s-big-{n}" for n in [*range(92), *range(96, 126)]} | {"session-s-big"} == names
    edges = {s["head"] for s in whole["statements"]}
    assert edges == names - {"session-s-big"}
    detail = next(r.detail for r in sliced_results if r.job == "log_span")
    slices = int(detail.rsplit(" in ", 1)[1].split()[0])
    assert slices > 10
    assert "slices" not in next(r.detail for r in whole_results if r.job == "log_span")


def test_a_withdrawal_of_sliced_entries_written_earlier_is_retracted(tmp_path: Path) -> None:
    root = tmp_path
    log = SessionLogWriter(root / "dsh", "s-late", CWD)
    for i in range(20):
        log.turn(f"q{i}", f"a{i}")
    log.flush()
    run(root, 25)
    doomed_user = log.surface[10]  # the prompt of turn 5 (ordinal 10)
    log.rewind(doomed_user)
    for i in range(20, 40):
        log.turn(f"q{i}", f"a{i}")
    log.flush()
    dump, results = run(root, 25)
    names = {row["name"] for row in dump["knowledge"]}
    assert names == {f"msg-s-late-{n}" for n in [*range(10), *range(40, 80)]}
    assert sum(r.retracted for r in results) == 30


def ev(seq: int, type_: str) -> Event:
    return Event(seq=seq, type=type_, time=None, data={})


def test_slices_end_after_boundaries_and_a_long_turn_stays_whole() -> None:
    bounds = [ev(9, "turn/end"), ev(19, "turn/end"), ev(60, "turn/end"), ev(70, "step/end")]
    assert slice_span(bounds, 0, 80, 25) == [(0, 20), (20, 61), (61, 80)]
    assert slice_span(bounds, 0, 80, 1000) == [(0, 80)]
    assert slice_span([], 0, 80, 10) == [(0, 80)]


def test_read_span_reads_the_first_slice_and_each_later_one_when_reached(tmp_path: Path) -> None:
    log = SessionLogWriter(tmp_path / "dsh", "s-read", CWD)
    for i in range(20):
        log.turn(f"q{i} the same words again", f"a{i} the same words again", steps=2)
    doomed = log.turn("take this back", "taken back")
    log.rewind(doomed.user_seq)
    log.flush()
    runtime = embedded_runtime(tmp_path, force_idle=True)
    process(runtime, consolidation=False)
    with runtime.state.read() as repos:
        state = repos.sessions.get("s-read")
    assert state is not None
    clock = Timing(now_ms=0, last_growth_ms=None, force_idle=True)
    kinds = runtime.settings.withdrawal_kinds

    whole = read_span(
        state, 0, clock, whitelist=kinds, limit=1_000_000, hand_off=None, segments=None
    )
    span = read_span(state, 0, clock, whitelist=kinds, limit=25, hand_off=None, segments=None)
    runtime.close()
    assert whole.cut is not None and span.cut == whole.cut
    assert span.cut.to_seq == state.durable_end_seq
    # The rewound prompt and its answer, both withdrawn by the one rewind marker.
    assert span.withdrawn == whole.withdrawn
    assert sorted(span.withdrawn) == [doomed.user_seq, doomed.user_seq + 1]
    assert {kind for _, kind in span.withdrawn.values()} == {"dsh-rewind"}
    assert (span.base_ordinal, span.withdrew_earlier) == (0, False)
    assert whole.slices == [(0, span.cut.to_seq)]
    assert len(span.slices) > 5 and span.slices[0][0] == 0
    assert span.slices[-1][1] == span.cut.to_seq
    first = span.first
    assert first is not None and first.window.durable_end == span.slices[0][1]
    seen: list[tuple[int, int]] = []
    for piece in span.pieces():
        assert span.first is None  # handed over, not kept while later slices are read
        seen.append((piece.lower, piece.upper))
        assert piece.window.durable_end == piece.upper
        assert piece.window.first_seq <= max(piece.lower - 1, 0)
        assert [e.seq for e in piece.window.tail(piece.lower)] == list(
            range(piece.lower, piece.upper)
        )
        if piece.lower:
            assert piece.before is not None and piece.before.seq == piece.lower - 1
    assert seen == span.slices
