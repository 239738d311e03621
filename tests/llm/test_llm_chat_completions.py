"""The real ``openai`` client against the local scripted server: what is sent, what comes back,
how finish reasons and HTTP failures map, what is recorded."""

from __future__ import annotations

import json

import pytest
from model_server import ModelServer, Reply, model_server_fixture  # noqa: F401

from dsh_memory_worker.memory.llm import (
    Completion,
    ModelCallRecord,
    ModelClient,
    ModelRoute,
    PermanentModelError,
    RetryableModelError,
    Usage,
)

pytestmark = pytest.mark.integration

KEY = "sk-test-0123456789abcdef"
ENV = {"TEST_MODEL_KEY": KEY}


def client_for(
    server: ModelServer,
    *models: str,
    stream: bool = True,
    effort: str | None = None,
    records: list[ModelCallRecord] | None = None,
    **kwargs: object,
) -> ModelClient:
    routes = [ModelRoute(server.base_url, m, "TEST_MODEL_KEY", effort) for m in models]
    return ModelClient(
        routes,
        timeout_s=kwargs.pop("timeout_s", 10.0),  # type: ignore[arg-type]
        recorder=None if records is None else records.append,
        env=ENV,
        stream=stream,
        retry_wait_s=0.0,
        **kwargs,  # type: ignore[arg-type]
    )


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
def test_a_stop_reply_returns_text_usage_and_one_ok_record(
    model_server: ModelServer, stream: bool
) -> None:
    records: list[ModelCallRecord] = []
    client = client_for(model_server, "deepseek-chat", stream=stream, records=records)
    usage = {"prompt_tokens": 120, "completion_tokens": 30, "reasoning_tokens": 12}
    model_server.push(Reply(content='{"summary": "- did it"}', usage=usage, chunks=4))

    result = client.complete("memory-consolidation", "SYS", "USER", 0)

    assert result == Completion(
        text='{"summary": "- did it"}',
        finish_reason="stop",
        usage=Usage(input_tokens=120, output_tokens=30, reasoning_tokens=12),
        route_index=0,
    )
    (sent,) = model_server.requests
    assert sent.path == "/v1/chat/completions"
    assert sent.json["model"] == "deepseek-chat"
    assert sent.json["messages"] == [
        {"role": "system", "content": "SYS"},
        {"role": "user", "content": "USER"},
    ]
    assert sent.json["max_tokens"] == 6000
    assert "reasoning_effort" not in sent.json
    assert sent.json.get("stream", False) is stream
    assert sent.headers["authorization"] == f"Bearer {KEY}"
    assert KEY.encode() not in sent.body
    (row,) = records
    assert (row.purpose, row.route_index, row.model, row.effort, row.outcome, row.error) == (
        "memory-consolidation",
        0,
        "deepseek-chat",
        None,
        "ok",
        None,
    )
    assert (row.input_tokens, row.output_tokens, row.reasoning_tokens) == (120, 30, 12)
    assert row.base_url == model_server.base_url
    assert row.ms >= 0


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
def test_a_truncated_reply_is_retryable_and_the_next_attempt_takes_the_next_route(
    model_server: ModelServer, stream: bool
) -> None:
    records: list[ModelCallRecord] = []
    client = client_for(model_server, "route-a", "route-b", stream=stream, records=records)
    truncated = '{"summary": "- half of a secret plan'
    model_server.push(
        Reply(content=truncated, finish_reason="length", usage={"completion_tokens": 6000}),
        Reply(content='{"summary": "- whole"}'),
    )

    with pytest.raises(RetryableModelError) as caught:
        client.complete("memory-consolidation", "s", "u", 0)
    assert str(caught.value) == "consolidation hit the output token cap (truncated JSON)"
    assert "secret plan" not in str(caught.value)

    again = client.complete("memory-consolidation", "s", "u", 1)
    assert again.text == '{"summary": "- whole"}'
    assert again.route_index == 1
    assert [r.json["model"] for r in model_server.requests] == ["route-a", "route-b"]
    assert [(r.route_index, r.model, r.outcome, r.error) for r in records] == [
        (0, "route-a", "incomplete", "length"),
        (1, "route-b", "ok", None),
    ]
    assert records[0].output_tokens == 6000  # the token split is recorded even on truncation


def test_other_finish_reasons_are_retryable_failures(model_server: ModelServer) -> None:
    records: list[ModelCallRecord] = []
    client = client_for(model_server, "m", records=records)
    model_server.push(Reply(content="x", finish_reason="content_filter"))
    with pytest.raises(RetryableModelError) as caught:
        client.complete("memory-cascade", "s", "u", 0)
    assert str(caught.value) == "cascade model call failed: finish reason content_filter"
    assert [(r.outcome, r.error) for r in records] == [("incomplete", "content_filter")]


def test_transient_server_errors_are_retried_within_the_attempt(model_server: ModelServer) -> None:
    records: list[ModelCallRecord] = []
    client = client_for(model_server, "m", records=records, transient_tries=3)
    model_server.push(
        Reply(status=503, error="overloaded"),
        Reply(status=429, error="slow down"),
        Reply(content="fine"),
    )
    assert client.complete("memory-consolidation", "s", "u", 0).text == "fine"
    assert len(model_server.requests) == 3
    assert [r.outcome for r in records] == ["ok"]


def test_exhausted_transient_retries_are_a_retryable_error(model_server: ModelServer) -> None:
    records: list[ModelCallRecord] = []
    client = client_for(model_server, "m", records=records, transient_tries=2)
    model_server.push(Reply(status=500, error="boom"), Reply(status=502, error="bad gateway"))
    with pytest.raises(RetryableModelError) as caught:
        client.complete("memory-adjudication", "s", "u", 0)
    # The status and the error's type; never the provider's message (it may quote the prompt).
    assert str(caught.value) == "adjudication model call failed: HTTP 502 scripted"
    assert len(model_server.requests) == 2
    assert [(r.outcome, r.error) for r in records] == [("error", "HTTP 502 scripted")]


def test_an_error_quoting_the_prompt_is_recorded_without_its_words(
    model_server: ModelServer,
) -> None:
    records: list[ModelCallRecord] = []
    client = client_for(model_server, "m", records=records, transient_tries=1)
    prompt = "plan the Zq51d0c0ffeeCanary migration"
    model_server.push(
        Reply(
            status=400, error=f"Content Exists Risk: {prompt}", error_type="invalid_request_error"
        ),
        Reply(status=400, error=f"refused: {prompt}", error_type=f"refused {prompt}"),
    )
    with pytest.raises(RetryableModelError) as first:
        client.complete("memory-consolidation", "s", prompt, 0)
    with pytest.raises(RetryableModelError) as second:
        client.complete("memory-consolidation", "s", prompt, 0)
    assert str(first.value) == "consolidation model call failed: HTTP 400 invalid_request_error"
    assert str(second.value) == "consolidation model call failed: HTTP 400"  # prose type dropped
    assert [r.error for r in records] == ["HTTP 400 invalid_request_error", "HTTP 400"]


def test_a_client_error_is_not_retried_in_the_attempt(model_server: ModelServer) -> None:
    client = client_for(model_server, "m", transient_tries=3)
    model_server.push(Reply(status=400, error="Model Not Exist"))
    with pytest.raises(RetryableModelError, match=r"^consolidation model call failed: HTTP 400"):
        client.complete("memory-consolidation", "s", "u", 0)
    assert len(model_server.requests) == 1


def test_an_unreachable_route_is_a_retryable_connection_error() -> None:
    route = ModelRoute("http://127.0.0.1:9/v1", "m", "TEST_MODEL_KEY")
    client = ModelClient([route], env=ENV, transient_tries=1, timeout_s=5)
    with pytest.raises(RetryableModelError) as caught:
        client.complete("memory-consolidation", "s", "u", 0)
    assert str(caught.value) == "consolidation model call failed: connection error"


def test_reasoning_effort_is_sent_only_when_set_and_caps_follow_it(
    model_server: ModelServer,
) -> None:
    model_server.push(Reply(content="a"), Reply(content="b"), Reply(content="c"))
    client_for(model_server, "m", effort="high").complete("memory-consolidation", "s", "u", 0)
    client_for(model_server, "m", effort="off").complete("memory-adjudication", "s", "u", 0)
    client_for(model_server, "m", max_output_tokens=900).complete("memory-cascade", "s", "u", 0)
    sent = [r.json for r in model_server.requests]
    assert [(j.get("reasoning_effort"), j["max_tokens"]) for j in sent] == [
        ("high", 6000),
        ("off", 1024),
        (None, 4900),
    ]
    assert "reasoning_effort" not in sent[2]


def test_a_call_over_the_timeout_is_retryable(model_server: ModelServer) -> None:
    records: list[ModelCallRecord] = []
    client = client_for(model_server, "m", records=records, timeout_s=0.5, transient_tries=1)
    model_server.push(Reply(content="late", delay_s=1.5))
    with pytest.raises(RetryableModelError) as caught:
        client.complete("memory-consolidation", "s", "u", 0)
    assert str(caught.value) == "consolidation model call failed: request timed out"
    assert [(r.outcome, r.error) for r in records] == [("error", "request timed out")]


def test_a_failing_recorder_never_fails_the_call(model_server: ModelServer) -> None:
    def broken(_: ModelCallRecord) -> None:
        raise RuntimeError("table is gone")

    route = ModelRoute(model_server.base_url, "m", "TEST_MODEL_KEY")
    client = ModelClient([route], env=ENV, recorder=broken, retry_wait_s=0)
    model_server.push(Reply(content="ok"))
    assert client.complete("memory-consolidation", "s", "u", 0).text == "ok"


def test_the_server_echo_mode_repeats_transcript_lines(model_server: ModelServer) -> None:
    model_server.echo = True
    client = client_for(model_server, "m")
    text = client.complete(
        "memory-consolidation", "s", "go\n\n<transcript>\nU: a\nA: b\n</transcript>", 0
    )
    assert json.loads(text.text)["summary"] == "U: a\nA: b"


def test_a_parse_failure_is_permanent_and_recorded_as_unusable_output(
    model_server: ModelServer,
) -> None:
    from dsh_memory_worker.memory.llm import UnusableModelOutput

    def parse(text: str) -> int:
        raise UnusableModelOutput("not what was asked")

    records: list[ModelCallRecord] = []
    client = client_for(model_server, "m", records=records)
    model_server.push(Reply(content="the model rambles on"))
    with pytest.raises(PermanentModelError, match=r"^not what was asked$"):
        client.complete_json("memory-consolidation", "s", "u", 0, parse)
    assert [(r.outcome, r.error) for r in records] == [("incomplete", "unusable output")]


def test_a_base_url_without_v1_posts_to_chat_completions(model_server: ModelServer) -> None:
    route = ModelRoute(f"http://127.0.0.1:{model_server.port}", "deepseek-chat", "TEST_MODEL_KEY")
    client = ModelClient([route], env=ENV, retry_wait_s=0)
    model_server.push(Reply(content="hi"))
    assert client.complete("memory-consolidation", "s", "u", 0).text == "hi"
    assert [r.path for r in model_server.requests] == ["/chat/completions"]


def test_a_slow_stream_is_cut_at_the_whole_call_deadline(model_server: ModelServer) -> None:
    records: list[ModelCallRecord] = []
    client = client_for(model_server, "m", records=records, timeout_s=0.4, transient_tries=1)
    model_server.push(Reply(content="x" * 50, chunks=10, chunk_delay_s=0.1))
    with pytest.raises(RetryableModelError) as caught:
        client.complete("memory-cascade", "s", "u", 0)
    assert str(caught.value) == "cascade model call failed: timed out after 0.4s"
    assert [(r.outcome, r.error) for r in records] == [("error", "timed out after 0.4s")]


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
@pytest.mark.parametrize(
    "raw",
    [b"not json at all", b"data: {broken\n\n", b'{"choices": 5}'],
    ids=["text", "sse", "shape"],
)
def test_a_malformed_reply_is_a_retryable_one_line_error(
    model_server: ModelServer, stream: bool, raw: bytes
) -> None:
    records: list[ModelCallRecord] = []
    client = client_for(model_server, "m", stream=stream, records=records, transient_tries=1)
    model_server.push(Reply(raw=raw))
    with pytest.raises(RetryableModelError) as caught:
        client.complete("memory-consolidation", "s", "u", 0)
    message = str(caught.value)
    assert message.startswith("consolidation model call failed: ")
    assert "\n" not in message
    assert "broken" not in message and "not json" not in message
    assert [r.outcome for r in records] in (["error"], ["incomplete"])
