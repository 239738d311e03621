"""The scripted test model server itself: reply order, responder, echo, failures, recording."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

import pytest
from model_server import ModelServer, Reply, echo_reply, model_server_fixture  # noqa: F401

from dsh_memory_worker.memory.llm import ModelClient, ModelRoute, RetryableModelError

pytestmark = pytest.mark.integration


def client(server: ModelServer) -> ModelClient:
    route = ModelRoute(server.base_url, "m", "K")
    return ModelClient([route], env={"K": "k"}, retry_wait_s=0, transient_tries=1)


def test_queued_replies_come_first_then_the_responder(model_server: ModelServer) -> None:
    seen: list[Any] = []

    def responder(request: Any) -> Reply:
        seen.append(request["model"])
        return Reply(content=f"from responder {len(seen)}")

    model_server.responder = responder
    model_server.push(Reply(content="queued"))
    texts = [client(model_server).complete("memory-cascade", "s", "u", 0).text for _ in range(3)]
    assert texts == ["queued", "from responder 1", "from responder 2"]
    assert seen == ["m", "m"]
    assert model_server.pending == 0


def test_without_a_script_the_server_fails_loudly(model_server: ModelServer) -> None:
    with pytest.raises(RetryableModelError) as caught:
        client(model_server).complete("memory-cascade", "s", "u", 0)
    assert str(caught.value) == "cascade model call failed: HTTP 500 no_scripted_reply_left"


def test_requests_are_recorded_as_bytes_and_json(model_server: ModelServer) -> None:
    body = json.dumps({"model": "x", "messages": [{"role": "user", "content": "héllo"}]}).encode()
    model_server.push(Reply(content="ok", usage={"prompt_tokens": 3, "completion_tokens": 1}))
    request = urllib.request.Request(
        model_server.base_url + "/chat/completions",
        data=body,
        headers={"Content-Type": "application/json", "X-Probe": "1"},
    )
    with urllib.request.urlopen(request, timeout=5) as response:
        reply = json.loads(response.read())
    assert reply["choices"][0] == {
        "index": 0,
        "message": {"role": "assistant", "content": "ok"},
        "finish_reason": "stop",
    }
    assert reply["usage"] == {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4}
    (recorded,) = model_server.requests
    assert recorded.body == body
    assert recorded.json["messages"][0]["content"] == "héllo"
    assert recorded.headers["x-probe"] == "1"
    assert recorded.user_text == "héllo"


def test_an_unknown_path_is_404(model_server: ModelServer) -> None:
    request = urllib.request.Request(model_server.base_url + "/embeddings", data=b"{}")
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(request, timeout=5)
    assert caught.value.code == 404
    assert model_server.pending == 0


def test_echo_repeats_the_transcript_or_the_whole_message() -> None:
    tagged = {
        "messages": [
            {"role": "user", "content": "do it\n\n<transcript>\nU: a\n\nA: b\n</transcript>"}
        ]
    }
    plain = {"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "x\ny"}]}
    assert json.loads(echo_reply(tagged).content) == {
        "summary": "U: a\nA: b",
        "workUnits": [],
        "title": "echo",
        "verdict": "unrelated",
        "target": "",
    }
    assert json.loads(echo_reply(plain).content)["summary"] == "x\ny"
