"""hypatia-lite's pluggable embedder: a real OpenAI-compatible /v1/embeddings server over HTTP."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest

from dsh_memory_worker.memory.store.base import ModelUnavailableError
from hypatia_lite import semantic
from hypatia_lite.embed import (
    EmbeddingError,
    HashingEmbedder,
    OpenAIEmbedder,
    embedder_from_env,
)
from hypatia_lite.store import LiteStore

VOCAB = ["cat", "dog", "tax", "car"]


class _Handler(BaseHTTPRequestHandler):
    requests: ClassVar[list[dict[str, Any]]] = []
    fail = False

    def log_message(self, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        _Handler.requests.append(
            {"path": self.path, "auth": self.headers.get("Authorization"), "body": body}
        )
        if _Handler.fail:
            self.send_response(503)
            self.end_headers()
            return
        data = [
            {
                "object": "embedding",
                "index": i,
                "embedding": [float(text.lower().count(word)) + 0.01 for word in VOCAB],
            }
            for i, text in enumerate(body["input"])
        ]
        payload = json.dumps(
            {"object": "list", "data": list(reversed(data)), "model": body["model"]}
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


@pytest.fixture
def server() -> Iterator[str]:
    _Handler.requests = []
    _Handler.fail = False
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    httpd.shutdown()
    httpd.server_close()


@pytest.mark.integration
def test_similar_uses_the_remote_embeddings(server: str, tmp_path: Path) -> None:
    embedder = OpenAIEmbedder(server, "test-embed", api_key="sk-test")
    with LiteStore(home=tmp_path, embedder=embedder) as store:
        store.knowledge_create("pets", "cat cat dog")
        store.knowledge_create("money", "tax tax")
        rows = store.similar_rows("cat", target="knowledge", limit=2)
    assert [r["name"] for r in rows] == ["pets", "money"]
    first = _Handler.requests[0]
    assert first["path"] == "/v1/embeddings"
    assert first["auth"] == "Bearer sk-test"
    assert first["body"] == {"model": "test-embed", "input": ["pets\ncat cat dog"]}
    assert _Handler.requests[-1]["body"]["input"] == ["cat"]


@pytest.mark.integration
def test_provider_failure_never_fails_a_write(server: str, tmp_path: Path) -> None:
    embedder = OpenAIEmbedder(server, "test-embed")
    with LiteStore(home=tmp_path, embedder=embedder) as store:
        _Handler.fail = True
        assert store.knowledge_create("later", "dog dog")
        assert store.pending_embeddings() == {"knowledge": 1, "statement": 0}
        with pytest.raises(EmbeddingError, match=r"^embedding error: .*/v1/embeddings"):
            store.similar_rows("dog")
        _Handler.fail = False
        assert [r["name"] for r in store.similar_rows("dog")] == ["later"]
        assert store.pending_embeddings() == {"knowledge": 0, "statement": 0}


def test_environment_selects_the_embedder(server: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # the default with the `semantic` extra: hypatia-lite/tests/test_lite_semantic_embedder.py
    monkeypatch.setattr(semantic, "available", lambda: False)
    assert isinstance(embedder_from_env({}), HashingEmbedder)
    assert embedder_from_env({"HYPATIA_LITE_EMBEDDER": "none"}) is None
    remote = embedder_from_env(
        {
            "HYPATIA_LITE_EMBED_URL": server,
            "HYPATIA_LITE_EMBED_MODEL": "m1",
            "HYPATIA_LITE_EMBED_KEY_ENV": "MY_KEY",
            "MY_KEY": "k",
        }
    )
    assert isinstance(remote, OpenAIEmbedder)
    assert (remote.base_url, remote.model, remote.api_key) == (server, "m1", "k")
    with pytest.raises(ModelUnavailableError, match="needs HYPATIA_LITE_EMBED_URL"):
        embedder_from_env({"HYPATIA_LITE_EMBEDDER": "openai"})
    with pytest.raises(ModelUnavailableError, match="unknown HYPATIA_LITE_EMBEDDER 'onnx'"):
        embedder_from_env({"HYPATIA_LITE_EMBEDDER": "onnx"})
