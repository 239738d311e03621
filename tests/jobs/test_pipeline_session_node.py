"""``session_node``: the first title (or compaction summary) makes the node, a later title never
replaces it, every logged message gets a ``belongTo`` edge except withdrawn ones, and later spans
settle their own edges."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from conftest import REPO

from dsh_memory_worker.worker.run.runner import InProcessRunner
from dsh_memory_worker.worker.watch.watcher import Watcher
from hypatia_lite.store import LiteStore

sys.path.insert(0, str(REPO / "benchmarks"))
from worker_dshgen import SessionLogWriter, embedded_runtime

CWD = "/home/dev/proj"


def process(runtime: Any) -> InProcessRunner:
    runner = InProcessRunner(runtime, keep_results=True)
    Watcher(runtime, runner.submit).poll_once()
    runner.drain(timeout_s=30)
    return runner


def store_rows(root: Path) -> tuple[dict[str, str], set[tuple[str, str, str]]]:
    with LiteStore("default", home=root / "lite") as store:
        dump = store.dump()
    knowledge = {row["name"]: row["content"]["data"] for row in dump["knowledge"]}
    edges = {(s["head"], s["relation"], s["tail"]) for s in dump["statements"]}
    return knowledge, edges


def belong(sid: str, ordinals: list[int]) -> set[tuple[str, str, str]]:
    return {(f"msg-{sid}-{n}", "belongTo", f"session-{sid}") for n in ordinals}


def test_first_title_wins_and_later_spans_settle_their_edges(tmp_path: Path) -> None:
    runtime = embedded_runtime(tmp_path)
    log = SessionLogWriter(tmp_path / "dsh", "s-node", CWD)
    first = log.turn("plan the release", "here is a plan")
    log.title("Release planning", first.user_seq)
    log.flush()
    process(runtime)
    knowledge, edges = store_rows(tmp_path)
    assert knowledge["session-s-node"] == "Release planning"
    assert edges == belong("s-node", [0, 1])

    second = log.turn("rename it", "renamed")
    log.title("Something else entirely", second.user_seq)
    log.turn("ship it", "shipped")
    log.flush()
    runner = process(runtime)
    knowledge, edges = store_rows(tmp_path)
    assert knowledge["session-s-node"] == "Release planning"  # never replaced
    assert edges == belong("s-node", [0, 1, 2, 3, 4, 5])
    node_runs = [r for r in runner.stats.results if r.job == "session_node"]
    assert [r.status for r in node_runs] == ["skipped"]
    with runtime.state.transaction() as repos:
        progress = repos.progress.get("default", "s-node")
    assert progress.has_session_node and progress.last_belong_to_index == 6
    runtime.close()


def test_a_late_node_links_everything_logged_except_withdrawn(tmp_path: Path) -> None:
    runtime = embedded_runtime(tmp_path)
    log = SessionLogWriter(tmp_path / "dsh", "s-late", CWD)
    log.turn("one", "uno")
    second = log.turn("two", "dos")
    log.rewind(second.user_seq)
    log.turn("three", "tres")
    log.flush()
    process(runtime)
    knowledge, edges = store_rows(tmp_path)
    assert "session-s-late" not in knowledge and edges == set()

    last = log.turn("four", "cuatro")
    log.title("Counting in Spanish", last.user_seq)
    log.flush()
    process(runtime)
    knowledge, edges = store_rows(tmp_path)
    assert knowledge["session-s-late"] == "Counting in Spanish"
    assert set(knowledge) == {"session-s-late"} | {f"msg-s-late-{n}" for n in (0, 1, 4, 5, 6, 7)}
    assert edges == belong("s-late", [0, 1, 4, 5, 6, 7])
    runtime.close()


def test_a_session_without_a_host_summary_gets_no_node(tmp_path: Path) -> None:
    runtime = embedded_runtime(tmp_path)
    log = SessionLogWriter(tmp_path / "dsh", "s-plain", CWD)
    log.turn("hi", "hello")
    log.flush()
    runner = process(runtime)
    runner_results = {r.job: r.status for r in runner.stats.results}
    assert runner_results == {"log_span": "done"}
    knowledge, edges = store_rows(tmp_path)
    assert set(knowledge) == {"msg-s-plain-0", "msg-s-plain-1"} and edges == set()
    runtime.close()
