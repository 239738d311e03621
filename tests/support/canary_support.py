"""Shared by the canary, repair, retract and forget tests: a model server whose replies repeat
every line they were shown (so any withdrawn text that ever reached the model lands in memory),
sessions written with unique canary strings, and store dumps."""

from __future__ import annotations

import hashlib
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO
from model_server import ModelServer, Reply, echo_reply, transcript_lines
from pipeline_support import dump, names, process  # noqa: F401 (the canary tests import them from here)

sys.path.insert(0, str(REPO / "benchmarks"))
from worker_dshgen import SessionLogWriter, embedded_runtime

CWD = "/home/dev/canaryproj"
KEY_ENV = "CANARY_TEST_KEY"


def canary_reply(request: Any) -> Reply:
    """Extraction requests: the summary is every transcript line, and one work unit whose
    content is every transcript line too. Anything else (archive, adjudication): echo."""
    users = [m for m in request.get("messages", []) if m.get("role") == "user"]
    if not users or "<transcript>" not in str(users[-1].get("content", "")):
        return echo_reply(request)
    lines = transcript_lines(request)
    digest = hashlib.sha256("\n".join(lines).encode()).hexdigest()[:6]
    payload = {
        "summary": "\n".join(lines) or "(empty)",
        "workUnits": [
            {
                "title": f"lesson {digest}",
                "classification": "one-shot",
                "content": "## Context\n" + "\n".join(lines),
                "tags": ["canary"],
            }
        ],
    }
    return Reply(content=json.dumps(payload, ensure_ascii=False))


def settings_for(server: ModelServer, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    monkeypatch.setenv(KEY_ENV, "sk-canary-test-key-000000000000")
    return {
        "model_routes": [{"base_url": server.base_url, "model": "canary", "api_key_env": KEY_ENV}],
        "cascade_batch_size": 2,
        "retry_backoff_s": 0.1,
        "adjudicate": False,
    }


def runtime_for(
    root: Path, server: ModelServer, monkeypatch: pytest.MonkeyPatch, **overrides: Any
) -> Any:
    values = settings_for(server, monkeypatch)
    values.update(overrides)
    return embedded_runtime(root, force_idle=True, **values)


def dump_text(root: Path) -> str:
    return json.dumps(dump(root), ensure_ascii=False)


def triples(root: Path) -> set[tuple[str, str, str]]:
    return {(s["head"], s["relation"], s["tail"]) for s in dump(root)["statements"]}


@dataclass
class CanarySession:
    """A session whose every message carries a unique canary string."""

    log: SessionLogWriter
    turns: list[Any] = field(default_factory=list)
    canaries: dict[int, str] = field(default_factory=dict)  # message seq → its canary

    @classmethod
    def start(cls, root: Path, session_id: str, cwd: str = CWD) -> CanarySession:
        return cls(SessionLogWriter(root / "dsh", session_id, cwd))

    def canary(self, label: str, role: str) -> str:
        """The unique string of turn ``label``'s ``role`` message (``ASK`` or ``ANSWER``)."""
        return f"CANARY-{self.log.session_id}-{label}-{role}"

    def turn(self, label: str) -> Any:
        ask, answer = self.canary(label, "ASK"), self.canary(label, "ANSWER")
        seqs = self.log.turn(f"question {ask}", f"reply {answer}")
        self.canaries[seqs.user_seq] = ask
        self.canaries[seqs.assistant_seq] = answer
        self.turns.append(seqs)
        self.log.flush()
        return seqs

    def rewind(self, from_seq: int, kind: str = "dsh-rewind") -> tuple[int, list[str]]:
        """Withdraw the surface from ``from_seq`` on; the marker seq and withdrawn canaries."""
        withdrawn = [c for s, c in self.canaries.items() if s >= from_seq]
        marker = self.log.rewind(from_seq, kind=kind)
        self.log.flush()
        return marker, withdrawn

    def kept(self, withdrawn: list[str]) -> list[str]:
        return [c for c in self.canaries.values() if c not in withdrawn]


def consolidated_pair(
    root: Path,
    server: ModelServer,
    monkeypatch: pytest.MonkeyPatch,
    ids: tuple[str, str],
    **overrides: Any,
) -> tuple[CanarySession, CanarySession, Any]:
    """Two sessions logged and consolidated in process, the first with two turns and the second
    with one (with the default cascade their summaries share one archive); returns both and the
    first session's second turn (the one the tests withdraw)."""
    runtime = runtime_for(root, server, monkeypatch, **overrides)
    a = CanarySession.start(root, ids[0])
    b = CanarySession.start(root, ids[1])
    a.turn("1")
    second = a.turn("2")
    b.turn("1")
    process(runtime)
    runtime.close()
    return a, b, second


BIN = Path(sys.executable).parent


def cli_env(root: Path, server: ModelServer, **extra: str) -> dict[str, str]:
    """Environment for ``memory-worker`` subprocesses on the same state, store and DSH home as
    :func:`runtime_for` (``root``)."""
    import os

    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORY_WORKER_")}
    env.update(
        {
            "MEMORY_WORKER_DSH_HOME": str(root / "dsh"),
            "MEMORY_WORKER_DATA_DIR": str(root / "data"),
            "MEMORY_WORKER_LITE_HOME": str(root / "lite"),
            "MEMORY_WORKER_MODEL_ROUTES": json.dumps(
                [{"base_url": server.base_url, "model": "canary", "api_key_env": KEY_ENV}]
            ),
            "MEMORY_WORKER_CASCADE_BATCH_SIZE": "2",
            "MEMORY_WORKER_ADJUDICATE": "false",
            KEY_ENV: "sk-canary-test-key-000000000000",
            "COLUMNS": "200",
        }
    )
    env.update(extra)
    return env


def cli(args: list[str], env: dict[str, str], timeout: float = 60) -> Any:
    """``memory-worker ARGS`` run to its end (forked from a pre-imported parent: cli_fork)."""
    from cli_fork import run_cli

    return run_cli(args, env=env, timeout=timeout)
