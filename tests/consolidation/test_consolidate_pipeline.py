"""``consolidate`` in process against the real ``openai`` client and a local chat-completions
server: the summary is named by the covered range and links exactly the covered, non-withdrawn
messages; a withdrawn message's text never reaches the model; the watermark advances only over
what was covered; every call lands in ``model_calls``; without a model route logging continues,
one warning is logged and the watermark stays; a fork is summarised from its cut."""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO
from model_server import ModelServer, Reply, model_server_fixture  # noqa: F401
from pipeline_support import dump, entries, process, progress
from sqlalchemy import text
from typer.testing import CliRunner

from dsh_memory_worker.memory.llm import client as llm
from dsh_memory_worker.memory.store.base import TransientStoreError
from dsh_memory_worker.worker.cli import _register, app
from dsh_memory_worker.worker.jobs.guard import run_job
from dsh_memory_worker.worker.jobs.reconsolidate import request_reconsolidation

sys.path.insert(0, str(REPO / "benchmarks"))
from worker_dshgen import SessionLogWriter, embedded_runtime

pytestmark = pytest.mark.integration

CWD = "/home/dev/proj"
KEY_ENV = "CONSOLIDATE_TEST_KEY"


def routes(*servers: ModelServer) -> list[dict[str, str]]:
    return [
        {"base_url": s.base_url, "model": f"model-{i}", "api_key_env": KEY_ENV}
        for i, s in enumerate(servers)
    ]


def runtime_for(
    root: Path,
    monkeypatch: pytest.MonkeyPatch,
    *servers: ModelServer,
    force_idle: bool = True,
    **overrides: Any,
) -> Any:
    monkeypatch.setenv(KEY_ENV, "sk-test-route-key-0000000000")
    values: dict[str, Any] = {"model_routes": routes(*servers), "retry_backoff_s": 0.1}
    values.update(overrides)
    return embedded_runtime(root, force_idle=force_idle, **values)


def edges(root: Path, relation: str, head_prefix: str = "") -> set[tuple[str, str]]:
    return {
        (row["head"], row["tail"])
        for row in dump(root)["statements"]
        if row["relation"] == relation and row["head"].startswith(head_prefix)
    }


def test_summary_is_named_by_the_span_and_links_only_kept_messages(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, model_server: ModelServer
) -> None:
    model_server.echo = True
    runtime = runtime_for(tmp_path, monkeypatch, model_server)
    log = SessionLogWriter(tmp_path / "dsh", "s-sum", CWD)
    log.turn("first question about ruff", "first answer")
    second = log.turn("SECRET-WITHDRAWN prompt", "SECRET-WITHDRAWN answer")
    log.rewind(second.user_seq)
    log.turn("third question", "third answer")
    log.flush()
    end = log.seq

    process(runtime)

    rows = entries(tmp_path)
    summary = f"sum-s-sum-0-{end}"
    assert summary in rows
    assert rows[summary]["tags"] == ["summary", "summary 1"]
    assert rows[summary]["scopes"] == ["proj"]
    # The echo server repeats the transcript: exactly the kept lines, nothing withdrawn.
    assert rows[summary]["data"] == (
        "U: first question about ruff\nA: first answer\nU: third question\nA: third answer"
    )
    assert edges(tmp_path, "summary", "sum-") == {(summary, f"msg-s-sum-{n}") for n in (0, 1, 4, 5)}
    for request in model_server.requests:
        assert b"SECRET-WITHDRAWN" not in request.body
    assert progress(runtime, "s-sum").last_consolidated_seq == end
    with runtime.state.transaction() as repos:
        calls = repos.model_calls.recent()
    assert [(c.purpose, c.outcome, c.model, c.session_id) for c in calls] == [
        ("memory-consolidation", "ok", "model-0", "s-sum")
    ]
    runtime.close()


def test_budget_cut_covers_a_prefix_and_advances_only_over_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, model_server: ModelServer
) -> None:
    model_server.echo = True
    runtime = runtime_for(tmp_path, monkeypatch, model_server, max_input_tokens=1000)
    log = SessionLogWriter(tmp_path / "dsh", "s-cut", CWD)
    first = log.turn("a" * 1500, "b" * 1500)
    log.turn("c" * 1500, "d" * 1500)
    log.flush()

    process(runtime)

    covered = first.assistant_seq + 1
    summary = f"sum-s-cut-0-{covered}"
    assert {n for n in entries(tmp_path) if n.startswith("sum")} == {summary}
    assert edges(tmp_path, "summary") == {(summary, "msg-s-cut-0"), (summary, "msg-s-cut-1")}
    assert progress(runtime, "s-cut").last_consolidated_seq == covered
    runtime.close()


def test_no_model_route_keeps_logging_warns_once_and_holds_the_watermark(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(llm, "_warned_not_configured", False)
    runtime = embedded_runtime(tmp_path, force_idle=True)
    for sid in ("s-a", "s-b"):
        log = SessionLogWriter(tmp_path / "dsh", sid, CWD)
        log.turn(f"hello {sid}", "hi")
        log.flush()
    with caplog.at_level(logging.WARNING, logger="worker"):
        runner = process(runtime)
    assert set(entries(tmp_path)) == {f"msg-{sid}-{n}" for sid in ("s-a", "s-b") for n in (0, 1)}
    warnings = [r.getMessage() for r in caplog.records if "no model route" in r.getMessage()]
    assert len(warnings) == 1
    assert "MEMORY_WORKER_MODEL_ROUTES" in warnings[0]
    consolidations = [r for r in runner.stats.results if r.job == "consolidate"]
    assert [(r.status, r.detail) for r in consolidations] == [
        ("skipped", "no model route configured")
    ] * 2
    assert progress(runtime, "s-a").last_consolidated_seq == 0
    runtime.close()


def test_truncated_reply_retries_on_the_next_route_asking_for_one_unit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second = ModelServer().start(), ModelServer().start()
    try:
        first.push(Reply(content='{"summary": "- cut', finish_reason="length"))
        second.push(Reply(content=json.dumps({"summary": "- done", "workUnits": []})))
        runtime = runtime_for(tmp_path, monkeypatch, first, second)
        log = SessionLogWriter(tmp_path / "dsh", "s-retry", CWD)
        log.turn("question", "answer")
        log.flush()
        runner = process(runtime)
        (request_1,) = first.requests
        (request_2,) = second.requests
        assert "At most 3 work units" in request_1.user_text
        assert "At most 1 work units" in request_2.user_text
        assert entries(tmp_path)[f"sum-s-retry-0-{log.seq}"]["data"] == "- done"
        results = [(r.status, r.attempt) for r in runner.stats.results if r.job == "consolidate"]
        assert results == [("retry", 0), ("done", 1)]
        with runtime.state.transaction() as repos:
            calls = repos.model_calls.recent()
            assert repos.failures.get("consolidate", "s-retry") is None
        assert [(c.route_index, c.outcome, c.detail) for c in calls] == [
            (1, "ok", None),
            (0, "incomplete", "length"),
        ]
        runtime.close()
    finally:
        first.stop()
        second.stop()


def test_unusable_json_fails_permanently_without_quoting_the_reply(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, model_server: ModelServer
) -> None:
    model_server.push(Reply(content="Sure! Here is PRIVATE-REPLY-TEXT for you"))
    runtime = runtime_for(tmp_path, monkeypatch, model_server)
    log = SessionLogWriter(tmp_path / "dsh", "s-bad", CWD)
    log.turn("question", "answer")
    log.flush()
    runner = process(runtime)
    (result,) = [r for r in runner.stats.results if r.job == "consolidate"]
    assert result.status == "failed"
    assert "not valid JSON" in result.detail
    assert "PRIVATE-REPLY-TEXT" not in result.detail
    assert len(model_server.requests) == 1  # never retried
    with runtime.state.transaction() as repos:
        failure = repos.failures.get("consolidate", "s-bad")
        (call,) = repos.model_calls.recent()
    assert failure is not None and failure.permanent
    assert "PRIVATE-REPLY-TEXT" not in failure.last_error
    assert (call.outcome, call.detail) == ("incomplete", "unusable output")
    assert not any(name.startswith("sum") for name in entries(tmp_path))
    assert progress(runtime, "s-bad").last_consolidated_seq == 0
    runtime.close()


def test_a_rerun_over_a_written_summary_makes_no_model_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, model_server: ModelServer
) -> None:
    model_server.echo = True
    runtime = runtime_for(tmp_path, monkeypatch, model_server)
    log = SessionLogWriter(tmp_path / "dsh", "s-twice", CWD)
    log.turn("question", "answer")
    log.flush()
    process(runtime)
    assert len(model_server.requests) == 1
    # The watermark is lost (e.g. a crash before the advance): the re-run only re-links.
    with runtime.state.transaction() as repos:
        now = repos.progress.get("default", "s-twice")
        repos.conn.execute(
            text("UPDATE progress SET last_consolidated_seq = 0 WHERE session_id = 's-twice'")
        )
    assert now.last_consolidated_seq == log.seq
    result = run_job(runtime, "consolidate", "s-twice", "default")
    assert result.status == "done"
    assert len(model_server.requests) == 1
    assert [n for n in entries(tmp_path) if n.startswith("sum")] == [f"sum-s-twice-0-{log.seq}"]
    assert progress(runtime, "s-twice").last_consolidated_seq == log.seq
    runtime.close()


class _FailFirstSummaryCreate:
    """A store whose first create of a span summary fails transiently (a crash after the work
    units were written)."""

    def __init__(self, store: Any) -> None:
        self._store = store
        self.failed = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    def knowledge_create(self, name: str, data: str, **kw: Any) -> bool:
        if name.startswith("sum-") and not self.failed:
            self.failed = True
            raise TransientStoreError("store went away")
        return bool(self._store.knowledge_create(name, data, **kw))


def test_a_failure_before_the_summary_reruns_the_call_and_keeps_the_units(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, model_server: ModelServer
) -> None:
    unit = {
        "title": "Cache the venv",
        "classification": "one-shot",
        "content": "## Context\nSlow CI.\n## Solution\nCache .venv.",
        "tags": [],
    }
    reply = json.dumps({"summary": "- cached", "workUnits": [unit]})
    model_server.push(Reply(content=reply), Reply(content=reply))
    runtime = runtime_for(tmp_path, monkeypatch, model_server)
    opened = runtime.store("default")
    wrapper = _FailFirstSummaryCreate(opened)
    runtime.store_factory = lambda shelf: wrapper
    runtime._stores.clear()
    log = SessionLogWriter(tmp_path / "dsh", "s-crash", CWD)
    log.turn("speed up CI", "cached the venv")
    log.flush()
    process(runtime)
    assert wrapper.failed
    assert len(model_server.requests) == 2  # the run was redone, not skipped
    names = set(entries(tmp_path))
    summary = f"sum-s-crash-0-{log.seq}"
    (wu,) = [n for n in names if n.startswith("wu-cache-the-venv-")]
    assert summary in names
    assert (wu, summary) in edges(tmp_path, "derivedFrom")
    assert progress(runtime, "s-crash").last_consolidated_seq == log.seq
    runtime.close()


def test_a_marker_beyond_the_logged_part_still_withdraws_from_the_summary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, model_server: ModelServer
) -> None:
    model_server.echo = True
    runtime = runtime_for(
        tmp_path,
        monkeypatch,
        model_server,
        force_idle=False,
        check_every_turns=50,
        min_new_tokens=100_000,
    )
    log = SessionLogWriter(tmp_path / "dsh", "s-late", CWD)
    log.turn("keep this", "kept")
    taken = log.turn("WITHDRAWN-LATE question", "WITHDRAWN-LATE answer")
    log.flush()
    process(runtime)
    logged = log.seq
    log.rewind(taken.user_seq)  # the marker, at seq `logged`, cuts its own span (acts at once)
    log.open_turn("next question")  # no turn end: nothing after the marker is logged yet
    log.flush()
    process(runtime)
    assert progress(runtime, "s-late").last_logged_seq == logged + 1
    assert request_reconsolidation(runtime, "s-late", "default").queued
    assert run_job(runtime, "consolidate", "s-late", "default").status == "done"
    summary = f"sum-s-late-0-{logged + 1}"
    assert entries(tmp_path)[summary]["data"] == "U: keep this\nA: kept"
    assert edges(tmp_path, "summary") == {(summary, "msg-s-late-0"), (summary, "msg-s-late-1")}
    assert all(b"WITHDRAWN-LATE" not in r.body for r in model_server.requests)
    runtime.close()


def test_a_fork_is_summarised_from_its_cut_over_its_own_messages(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, model_server: ModelServer
) -> None:
    model_server.echo = True
    _register()
    made = CliRunner().invoke(app, ["demo-home", str(tmp_path / "dsh")])
    assert made.exit_code == 0, made.output
    runtime = runtime_for(tmp_path, monkeypatch, model_server)
    process(runtime)
    with runtime.state.transaction() as repos:
        (fork,) = [s for s in repos.sessions.list() if s.inherited_cut > 0]
        logged = repos.progress.get("default", fork.session_id).last_logged_seq
    sid = fork.session_id
    assert fork.inherited_cut == 42
    rows = entries(tmp_path)
    own = {n for n in rows if n.startswith(f"msg-{sid}-")}
    assert own and "msg-" + sid + "-0" in own
    assert [n for n in rows if n.startswith(f"sum-{sid}-")] == [f"sum-{sid}-42-{logged}"]
    assert edges(tmp_path, "summary", f"sum-{sid}-") == {
        (f"sum-{sid}-42-{logged}", name) for name in own
    }
    runtime.close()
