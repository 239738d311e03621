"""What the model endpoint receives: never a secret, never a withdrawn message.

Assertions are on the raw bytes the local server received from the real ``openai`` client.
"""

from __future__ import annotations

import json
from datetime import UTC
from pathlib import Path

import pytest
from eventkit import assistant, marker, tool_call, tool_result, user
from model_server import ModelServer, Reply, model_server_fixture  # noqa: F401

from dsh_memory_worker.memory.consolidation.adjudication import Candidate, adjudicate
from dsh_memory_worker.memory.consolidation.archive import ArchiveMember, write_archive_text
from dsh_memory_worker.memory.consolidation.extraction import extract
from dsh_memory_worker.memory.consolidation.transcript import build_transcript
from dsh_memory_worker.memory.dsh.reader import read_log
from dsh_memory_worker.memory.llm import ModelClient, ModelRoute
from dsh_memory_worker.memory.withdrawal import withdrawn_seqs

pytestmark = pytest.mark.integration

API_KEY = "sk-live-key-for-the-route-000"
SECRETS = [
    "sk-proj-9f8e7d6c5b4a3f2e1d0c",
    "ghp_abcdefghijklmnopqrstuvwx",
    "AKIAIOSFODNN7EXAMPLE",
    "hunter2hunter2",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N",
]


def client_for(server: ModelServer, stream: bool) -> ModelClient:
    route = ModelRoute(server.base_url, "deepseek-chat", "ROUTE_KEY")
    return ModelClient([route], env={"ROUTE_KEY": API_KEY}, stream=stream, retry_wait_s=0)


def span_with_secrets() -> list:  # type: ignore[type-arg]
    return [
        user(1, f"deploy with key {SECRETS[0]} and token {SECRETS[1]}"),
        assistant(2, f"I set AWS id {SECRETS[2]} and password={SECRETS[3]}"),
        tool_call(3, "c1", "bash"),
        tool_result(4, "c1", f"printed {SECRETS[4]} to stdout"),
        user(5, f"also Authorization: Bearer {SECRETS[4]}"),
        assistant(6, "done"),
    ]


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
def test_secrets_never_reach_the_request_body(model_server: ModelServer, stream: bool) -> None:
    model_server.echo = True
    transcript = build_transcript(span_with_secrets(), tz=UTC)

    result = extract(client_for(model_server, stream), transcript.text, attempt=0)

    (request,) = model_server.requests
    for secret in [*SECRETS, API_KEY]:
        assert secret.encode() not in request.body
        assert json.dumps(secret)[1:-1].encode() not in request.body
    assert b"[REDACTED:secret:key]" in request.body
    assert b"[REDACTED:secret:github]" in request.body
    assert b"[REDACTED:secret:aws]" in request.body
    # The echoed summary shows exactly the transcript the model saw.
    assert result.summary.split("\n") == [
        "U: deploy with key [REDACTED:secret:key] and token [REDACTED:secret:github]",
        "A: I set AWS id [REDACTED:secret:aws] and password=[REDACTED:secret:credential]",
        "T: bash ✅",
        # Only the credential is replaced; the scheme word is not secret.
        "U: also Authorization: Bearer [REDACTED:secret:bearer]",
        "A: done",
    ]


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
def test_a_withdrawn_messages_text_never_appears_in_any_request(
    model_server: ModelServer, stream: bool
) -> None:
    model_server.echo = True
    client = client_for(model_server, stream)
    span = [
        user(1, "How do I rotate the logs?"),
        assistant(2, "Use logrotate with a weekly rule."),
        user(3, "TAKEN-BACK: my home address is 12 Elm Street"),
        assistant(4, "TAKEN-BACK-ANSWER: noted your address"),
        user(5, "Thanks, and compress them too."),
        assistant(6, "Add `compress` to the rule."),
    ]
    # The marker sits after the span's end: the window must reach the end of the log.
    window = [*span, marker(8, [3, 4])]
    transcript = build_transcript(span, withdrawn=withdrawn_seqs(window), tz=UTC)

    extraction = extract(client, transcript.text, attempt=0)
    members = [ArchiveMember("sum-s-0-7", extraction.summary)]
    write_archive_text(client, 2, members, attempt=0)
    model_server.push(Reply(content='{"verdict": "unrelated", "target": ""}'))
    adjudicate(client, "Log rotation", extraction.summary, [Candidate("wu-x", "x")], attempt=0)

    assert len(model_server.requests) == 3
    for request in model_server.requests:
        assert b"TAKEN-BACK" not in request.body
        assert b"Elm Street" not in request.body
    assert extraction.summary.split("\n") == [
        "U: How do I rotate the logs?",
        "A: Use logrotate with a weekly rule.",
        "U: Thanks, and compress them too.",
        "A: Add `compress` to the rule.",
    ]


def test_a_real_logs_withdrawn_turn_never_reaches_the_model(
    model_server: ModelServer, fixtures_dir: Path
) -> None:
    log = read_log(fixtures_dir / "v4-example" / "session.v4.jsonl.zstd")
    span = [e for e in log.events if 19 <= e.seq < 68]  # the dsh-rewind marker is seq 58
    withdrawn = withdrawn_seqs(e for e in log.events if e.seq >= 19)
    transcript = build_transcript(span, withdrawn=withdrawn, inherited_cut=log.inherited, tz=UTC)
    model_server.echo = True

    extraction = extract(client_for(model_server, True), transcript.text, attempt=0)

    (request,) = model_server.requests
    assert b"healthz" not in request.body
    assert b"read-only" not in request.body
    assert extraction.summary.split("\n") == [
        "U: Change the port to 9090.",
        "T: edit ✅",
        "A: Done — config.json now sets port 9090.",
        "U: Which port is configured now?",
        "A: Port 9090.",
    ]
