"""Extraction, adjudication and archive calls through the real ``openai`` client against the
local scripted server: retries across routes, permanent failures, what is recorded."""

from __future__ import annotations

import json
import logging

import pytest
from model_server import ModelServer, Reply, model_server_fixture  # noqa: F401

from dsh_memory_worker.memory.consolidation.adjudication import Candidate, Verdict, adjudicate
from dsh_memory_worker.memory.consolidation.archive import (
    Archive,
    ArchiveMember,
    write_archive_text,
)
from dsh_memory_worker.memory.consolidation.extraction import Extraction, WorkUnit, extract
from dsh_memory_worker.memory.llm import (
    ModelCallRecord,
    ModelClient,
    ModelRoute,
    PermanentModelError,
    RetryableModelError,
    UnusableModelOutput,
)

pytestmark = pytest.mark.integration

ENV = {"TEST_MODEL_KEY": "sk-test-key-000000"}
REPLY = {
    "summary": "- fixed the flaky test",
    "workUnits": [
        {"title": "Pin the clock", "classification": "bug-fix", "content": "## Context\nflaky"},
        {"title": "Second", "content": "two"},
        {"title": "Third", "content": "three"},
    ],
}


def make_client(
    server: ModelServer, records: list[ModelCallRecord], *, stream: bool = True
) -> ModelClient:
    routes = [
        ModelRoute(server.base_url, "primary-model", "TEST_MODEL_KEY"),
        ModelRoute(server.base_url, "fallback-model", "TEST_MODEL_KEY", "off"),
    ]
    return ModelClient(routes, env=ENV, recorder=records.append, stream=stream, retry_wait_s=0)


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
def test_truncation_retries_on_the_next_route_asking_for_one_unit(
    model_server: ModelServer, stream: bool
) -> None:
    records: list[ModelCallRecord] = []
    client = make_client(model_server, records, stream=stream)
    model_server.push(
        Reply(content='{"summary": "- fixed the fla', finish_reason="length"),
        Reply(content="```json\n" + json.dumps(REPLY) + "\n```"),
    )

    with pytest.raises(RetryableModelError) as caught:
        extract(client, "U: why is the test flaky?", attempt=0, max_units=3)
    assert str(caught.value) == "consolidation hit the output token cap (truncated JSON)"

    result = extract(client, "U: why is the test flaky?", attempt=1, max_units=3)

    assert result == Extraction(
        summary="- fixed the flaky test",
        work_units=(
            WorkUnit("Pin the clock", "bug-fix", "## Context\nflaky"),
            WorkUnit("Second", "", "two"),
            WorkUnit("Third", "", "three"),
        ),
    )
    first, second = (r.json for r in model_server.requests)
    assert (first["model"], first["max_tokens"], first.get("reasoning_effort")) == (
        "primary-model",
        6000,
        None,
    )
    assert (second["model"], second["max_tokens"], second["reasoning_effort"]) == (
        "fallback-model",
        2000,
        "off",
    )
    assert "- At most 3 work units." in first["messages"][1]["content"]
    assert "- At most 1 work units." in second["messages"][1]["content"]
    assert first["messages"][0] == {
        "role": "system",
        "content": "You produce strict JSON only. You never add prose around it.",
    }
    assert [(r.purpose, r.route_index, r.effort, r.outcome, r.error) for r in records] == [
        ("memory-consolidation", 0, None, "incomplete", "length"),
        ("memory-consolidation", 1, "off", "ok", None),
    ]


def test_unusable_json_fails_permanently_without_quoting_the_reply(
    model_server: ModelServer,
) -> None:
    records: list[ModelCallRecord] = []
    client = make_client(model_server, records)
    rambling = "Here is a summary of the conversation: the user PRIVATE-DETAIL asked about X"
    model_server.push(Reply(content=rambling))

    with pytest.raises(UnusableModelOutput) as caught:
        extract(client, "U: x", attempt=0)

    assert isinstance(caught.value, PermanentModelError)
    assert not isinstance(caught.value, RetryableModelError)
    assert str(caught.value).startswith("consolidation output is not valid JSON (")
    assert "PRIVATE-DETAIL" not in str(caught.value)
    assert "Here is" not in str(caught.value)
    assert [(r.outcome, r.error) for r in records] == [("incomplete", "unusable output")]
    assert all("PRIVATE-DETAIL" not in (r.error or "") for r in records)


def test_an_empty_summary_is_permanent_too(model_server: ModelServer) -> None:
    records: list[ModelCallRecord] = []
    client = make_client(model_server, records)
    model_server.push(Reply(content='{"summary": "", "workUnits": []}'))
    with pytest.raises(UnusableModelOutput, match="no non-empty `summary` string"):
        extract(client, "U: x", attempt=0)
    assert len(model_server.requests) == 1


def test_adjudication_returns_the_verdict_on_the_runs_route(model_server: ModelServer) -> None:
    records: list[ModelCallRecord] = []
    client = make_client(model_server, records)
    model_server.push(Reply(content='{"verdict": "refines", "target": "wu-b"}'))
    candidates = [Candidate("wu-a", "alpha"), Candidate("wu-b", "beta")]

    verdict = adjudicate(client, "New", "content", candidates, attempt=1)

    assert verdict == Verdict("refines", "wu-b")
    (sent,) = model_server.requests
    assert (sent.json["model"], sent.json["max_tokens"]) == ("fallback-model", 1024)
    assert [(r.purpose, r.route_index, r.outcome) for r in records] == [
        ("memory-adjudication", 1, "ok")
    ]


def test_adjudication_failures_store_unrelated(
    model_server: ModelServer, caplog: pytest.LogCaptureFixture
) -> None:
    records: list[ModelCallRecord] = []
    client = make_client(model_server, records)
    model_server.push(
        Reply(content="they look related to me"),
        Reply(content='{"verdict": "duplicate"', finish_reason="length"),
    )
    candidates = [Candidate("wu-a", "alpha")]
    with caplog.at_level(
        logging.WARNING, logger="dsh_memory_worker.memory.consolidation.adjudication"
    ):
        assert adjudicate(client, "New", "c", candidates, attempt=0) is None
        assert adjudicate(client, "New", "c", candidates, attempt=0) is None
    assert adjudicate(client, "New", "c", [], attempt=0) is None  # no candidate: no call
    assert len(model_server.requests) == 2
    assert [(r.outcome, r.error) for r in records] == [
        ("incomplete", "unparseable reply"),
        ("incomplete", "length"),
    ]
    assert caplog.messages[0].startswith(
        "work-unit adjudication failed, storing unrelated: adjudication output is not valid JSON"
    )
    assert caplog.messages[1] == (
        "work-unit adjudication failed, storing unrelated: "
        "adjudication hit the output token cap (truncated JSON)"
    )


def test_an_archive_call_builds_the_tier_entry(model_server: ModelServer) -> None:
    records: list[ModelCallRecord] = []
    client = make_client(model_server, records, stream=False)
    model_server.push(Reply(content='{"title": "Flaky tests", "summary": "- pinned clocks"}'))
    members = [ArchiveMember("sum-s-0-4", "- a"), ArchiveMember("sum-s-4-8", "- b")]

    archive = write_archive_text(client, 2, members, attempt=0)

    assert archive == Archive(2, "Flaky tests", "- pinned clocks")
    (sent,) = model_server.requests
    assert "### 1. sum-s-0-4\n- a\n\n### 2. sum-s-4-8\n- b" in sent.json["messages"][1]["content"]
    assert [(r.purpose, r.outcome) for r in records] == [("memory-cascade", "ok")]
