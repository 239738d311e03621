"""What leaves the worker during consolidation: no secret from the log, no API key and no
withdrawn message's text appears in any request body the model endpoint receives (summary and
adjudication calls alike), and none is stored in the summary."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from model_server import ModelServer, Reply, echo_reply, model_server_fixture  # noqa: F401
from test_consolidate_pipeline import entries, process, runtime_for
from worker_dshgen import SessionLogWriter

pytestmark = pytest.mark.integration

CWD = "/home/dev/proj"
SECRETS = ["sk-proj-9f8e7d6c5b4a3f2e1d0c", "ghp_abcdefghijklmnopqrstuvwx", "AKIAIOSFODNN7EXAMPLE"]
ROUTE_KEY = "sk-test-route-key-0000000000"


def reply(request: dict[str, Any]) -> Reply:
    text = request["messages"][-1]["content"]
    if "memory consolidation engine" in text:
        unit = {
            "title": "Rotate leaked keys",
            "classification": "bug-fix",
            "content": "## Context\nA key leaked.\n## Solution\nRotate it.",
            "tags": [],
        }
        base = json.loads(echo_reply(request).content)
        return Reply(content=json.dumps({"summary": base["summary"], "workUnits": [unit]}))
    return Reply(content=json.dumps({"verdict": "unrelated", "target": ""}))


def test_no_secret_key_or_withdrawn_text_reaches_the_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, model_server: ModelServer
) -> None:
    model_server.responder = reply
    runtime = runtime_for(tmp_path, monkeypatch, model_server)
    runtime.store("default").knowledge_create(
        "wu-rotate-keys-00000000",
        "Rotate leaked keys\n## Context\nA key leaked.\n## Solution\nRotate it now.",
        tags=["memory", "work-unit"],
        scopes=["proj"],
    )
    log = SessionLogWriter(tmp_path / "dsh", "s-priv", CWD)
    log.turn(f"deploy with {SECRETS[0]} and token {SECRETS[1]}", f"set AWS id {SECRETS[2]}")
    taken = log.turn("WITHDRAWN-CANARY question", "WITHDRAWN-CANARY answer")
    log.rewind(taken.user_seq)
    log.turn("rotate them", "rotated")
    log.flush()

    process(runtime)

    prompts = [r.user_text[:40] for r in model_server.requests]
    assert len(prompts) == 2, prompts  # the summary call and one judgement
    assert prompts[1].startswith("Decide how a NEW memory relates")
    for request in model_server.requests:
        for secret in [*SECRETS, ROUTE_KEY, "WITHDRAWN-CANARY"]:
            assert secret.encode() not in request.body
        assert request.headers["authorization"] == f"Bearer {ROUTE_KEY}"
    summary = next(c for n, c in entries(tmp_path).items() if n.startswith("sum-"))
    for secret in [*SECRETS, "WITHDRAWN-CANARY"]:
        assert secret not in summary["data"]
    runtime.close()
