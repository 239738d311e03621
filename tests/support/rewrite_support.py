"""Shared by the rewrite tests (``reconsolidate --replace``, ``relog``): a scripted model whose
replies say which model wrote them (``ALPHA`` for ``model-a``, ``BRAVO`` otherwise), three
sessions consolidated with route A (two of them archived together), and the store read back."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from conftest import REPO
from model_server import ModelServer, Reply
from pipeline_support import dump, process

sys.path.insert(0, str(REPO / "benchmarks"))
from worker_dshgen import SessionLogWriter, embedded_runtime

KEY_ENV = "REWRITE_TEST_KEY"
CWD = "/home/dev/rewrite-proj"
SESSIONS = ("s-1", "s-2", "s-3")
BIN = Path(sys.executable).parent


def tag_of(request: dict[str, Any]) -> str:
    return "ALPHA" if request.get("model") == "model-a" else "BRAVO"


def scripted(request: dict[str, Any]) -> Reply:
    """Consolidation: ``- <TAG>: <first transcript line>`` and one unit (``ALPHA`` adds a second
    unit the B pass never produces); cascade: one line per member summary; judge: unrelated."""
    tag = tag_of(request)
    text = request["messages"][-1]["content"]
    if "memory consolidation engine" in text:
        body = text.split("<transcript>\n", 1)[1].split("\n</transcript>", 1)[0]
        first = body.splitlines()[0]
        units = [
            {
                "title": f"{tag} lesson {first[3:30]}",
                "classification": "bug-fix",
                "content": f"## Context\n{tag} learned from {first}\n## Solution\nfixed",
                "tags": ["ci"],
            }
        ]
        if tag == "ALPHA":
            units.append(
                {
                    "title": f"ALPHA extra {first[3:30]}",
                    "classification": "one-shot",
                    "content": f"## Context\nALPHA only {first}",
                    "tags": [],
                }
            )
        return Reply(content=json.dumps({"summary": f"- {tag}: {first}", "workUnits": units}))
    return archive_or_verdict(tag, text)


def archive_or_verdict(tag: str, text: str) -> Reply:
    """The cascade's reply (one line per member summary) or the judge's (unrelated)."""
    if "memory archivist" in text:
        members = [
            line[2:] for line in text.splitlines() if line.startswith(("- ALPHA:", "- BRAVO:"))
        ]
        return Reply(
            content=json.dumps(
                {
                    "title": f"{tag} digest",
                    "summary": "\n".join(f"- {tag} saw {m}" for m in members),
                }
            )
        )
    return Reply(content=json.dumps({"verdict": "unrelated", "target": ""}))


def route(server: ModelServer, model: str) -> list[dict[str, str]]:
    return [{"base_url": server.base_url, "model": model, "api_key_env": KEY_ENV}]


SETTINGS: dict[str, Any] = {"adjudicate": False, "cascade_batch_size": 2, "retry_backoff_s": 0.1}


def env_for(root: Path, server: ModelServer, model: str, **extra: str) -> dict[str, str]:
    """The environment of a ``memory-worker`` process (or a CliRunner run) on ``root``."""
    return {
        **os.environ,
        KEY_ENV: "sk-rewrite-test-0000000000",
        "MEMORY_WORKER_DSH_HOME": str(root / "dsh"),
        "MEMORY_WORKER_DATA_DIR": str(root / "data"),
        "MEMORY_WORKER_LITE_HOME": str(root / "lite"),
        "MEMORY_WORKER_MODEL_ROUTES": json.dumps(route(server, model)),
        "MEMORY_WORKER_ADJUDICATE": "false",
        "MEMORY_WORKER_CASCADE_BATCH_SIZE": "2",
        "MEMORY_WORKER_RETRY_BACKOFF_S": "0.1",
        "MEMORY_WORKER_LEASE_TTL_S": "5",
        **extra,
    }


def write_sessions(root: Path, secret: str = "") -> dict[str, int]:
    """Three finished sessions of two turns each (``s-1`` has a title); their end seqs."""
    ends = {}
    for index, sid in enumerate(SESSIONS):  # fixed times: two roots hold the same entries
        log = SessionLogWriter(
            root / "dsh", sid, CWD, created_at=1_764_000_000_000 + index * 60_000
        )
        first = log.turn(f"fix the build of {sid} {secret}".strip(), f"fixed {sid}")
        if sid == "s-1":
            log.title(f"Build fixes {secret}".strip(), first.user_seq)
        log.turn(f"thanks for {sid}", "welcome")
        log.flush()
        ends[sid] = log.seq
    return ends


def consolidate_with_a(root: Path, server: ModelServer, **overrides: Any) -> None:
    """Log and consolidate the sessions with route A (``model-a``), in process."""
    os.environ.setdefault(KEY_ENV, "sk-rewrite-test-0000000000")
    runtime = embedded_runtime(
        root, force_idle=True, model_routes=route(server, "model-a"), **{**SETTINGS, **overrides}
    )
    try:
        process(runtime)
    finally:
        runtime.close()


def knowledge(root: Path) -> dict[str, str]:
    return {row["name"]: row["content"]["data"] for row in dump(root)["knowledge"]}


def triples(root: Path) -> set[tuple[str, str, str]]:
    return {(r["head"], r["relation"], r["tail"]) for r in dump(root)["statements"]}


def derived(root: Path) -> dict[str, str]:
    """Summaries, archives and work units by name."""
    return {n: d for n, d in knowledge(root).items() if n.startswith(("sum", "wu-"))}


def shelf_bytes(root: Path) -> bytes:
    """The raw bytes of every file of the hypatia-lite home (database, WAL, journal)."""
    return b"".join(p.read_bytes() for p in sorted((root / "lite").rglob("*")) if p.is_file())
