"""End to end: secrets written into DSH session logs never reach the store. A real
`memory-worker run --once` over a generated home (messages, a session title, a compaction
summary) leaves none of the table's secrets in any byte of the hypatia-lite shelf or the state
directory; every stored text is exactly its expected redaction, and ordinary text is stored byte
for byte."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from redaction_cases import NEGATIVE, POSITIVE, expected, secrets_of

from benchmarks.worker_dshgen import SessionLogWriter
from hypatia_lite.store import LiteStore

pytestmark = pytest.mark.integration

BIN = Path(sys.executable).parent / "memory-worker"
CWD = "/home/dev/secret-app"
MESSAGES = "redact-messages-0001"
COMPACTED = "redact-compaction-0001"
#: Cases that go into the title and the compaction summary (by name).
#: A key with no END line takes the rest of the text: such a case comes last.
TITLE_CASES = (
    "github fine-grained",
    "env *_PASSWORD",
    "mongodb url password with #",
    "curl -u user:pass",
    "pem cut inside a title",
)
SUMMARY_CASES = (
    "postgres url",
    "stripe live",
    "authorization basic",
    "sshpass quoted",
    "mysql -pPASS",
    "django SECRET_KEY env",
    "npm token glued by _",
    "pem unterminated",
)
BY_NAME = {name: (raw, template) for name, raw, template in POSITIVE}


def _joined(names: tuple[str, ...], sep: str) -> tuple[str, str]:
    raws = [BY_NAME[n][0] for n in names]
    wants = [expected(BY_NAME[n][1]) for n in names]
    return sep.join(raws), sep.join(wants)


def _compaction(log: SessionLogWriter, summary: str) -> None:
    """Compact the whole surface so far (V4 shape: start, summary, checkpoint, end)."""
    shadowed = list(log.surface)
    start = log.event("compaction/start", {"compactionId": "cmp-1", "turn": None})
    blocks = [{"type": "text", "text": summary}]
    data = {
        "compactionId": "cmp-1",
        "summary": blocks,
        "shadowedRange": {"start": shadowed[0], "end": shadowed[-1]},
        "shadowedSeqs": shadowed,
        "shadowedTokenCount": 100,
        "provider": "deepseek-official",
        "model": "deepseek-v4-flash",
    }
    summary_seq = log.event("compaction/summary", data)
    checkpoint = {
        "id": "m-ck-1",
        "role": "user",
        "content": [{"type": "text", "text": "<compacted-summary>"}, *blocks],
        "source": {"kind": "compact-checkpoint", "compactionId": "cmp-1"},
    }
    op = {"op": "replace", "startSeq": shadowed[0], "endSeq": shadowed[-1]}
    seq = log.event(
        "user/message", checkpoint, surfaceOp=op, sourceEventSeqs=[start, summary_seq, *shadowed]
    )
    log.surface[:] = [seq]
    log.event("compaction/end", {"compactionId": "cmp-1", "turn": None})


def _home(root: Path) -> None:
    home = root / "dsh"
    log = SessionLogWriter(home, MESSAGES, CWD)
    for i, (_name, raw, _template) in enumerate(POSITIVE):
        seqs = log.turn(raw, NEGATIVE[i % len(NEGATIVE)])
        if i == 0:
            log.title(_joined(TITLE_CASES, " / ")[0], seqs.user_seq)
    log.flush()
    other = SessionLogWriter(home, COMPACTED, CWD)
    other.turn("start the deploy", "started")
    _compaction(other, _joined(SUMMARY_CASES, "\n")[0])
    other.turn("continue", "done")
    other.flush()


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("redaction")
    _home(root)
    env = {
        **os.environ,
        "MEMORY_WORKER_DATA_DIR": str(root / "data"),
        "HYPATIA_LITE_HOME": str(root / "lite"),
    }
    for name in ("MEMORY_WORKER_LITE_HOME", "MEMORY_WORKER_STATE_URL", "MEMORY_WORKER_CONFIG"):
        env.pop(name, None)
    done = subprocess.run(
        [str(BIN), "run", "--once", "--dsh-home", str(root / "dsh")],
        env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    with LiteStore("default", home=root / "lite") as store:
        dump = store.dump()
    files = [p for d in ("lite", "data") for p in sorted((root / d).rglob("*")) if p.is_file()]
    return {
        "entries": {row["name"]: row["content"] for row in dump["knowledge"]},
        "bytes": {str(p.relative_to(root)): p.read_bytes() for p in files},
    }


def _body(entry: dict[str, Any]) -> str:
    data = entry.get("data") if isinstance(entry.get("data"), str) else json.dumps(entry)
    assert isinstance(data, str)
    return data.split("## Content\n", 1)[1]


def test_no_secret_reaches_any_byte_of_the_shelf_or_the_state(stored: dict[str, Any]) -> None:
    shelf = [name for name in stored["bytes"] if name.startswith("lite/")]
    assert shelf, "the shelf wrote no file"
    secrets = [s for _, raw, template in POSITIVE for s in secrets_of(raw, template)]
    assert len(secrets) >= len(POSITIVE)
    for name, content in stored["bytes"].items():
        for secret in secrets:
            for form in (secret.encode(), json.dumps(secret)[1:-1].encode()):
                assert form not in content, f"{secret!r} found in {name}"


def test_each_message_is_stored_as_its_exact_redaction(stored: dict[str, Any]) -> None:
    entries = stored["entries"]
    for i, (name, _raw, template) in enumerate(POSITIVE):
        assert _body(entries[f"msg-{MESSAGES}-{2 * i}"]) == expected(template), name
        assert _body(entries[f"msg-{MESSAGES}-{2 * i + 1}"]) == NEGATIVE[i % len(NEGATIVE)]


def test_ordinary_text_is_in_the_shelf_byte_for_byte(stored: dict[str, Any]) -> None:
    shelf = b"".join(v for k, v in stored["bytes"].items() if k.startswith("lite/"))
    for text in NEGATIVE:
        assert text.encode() in shelf or json.dumps(text)[1:-1].encode() in shelf, text


def test_the_title_and_the_compaction_summary_are_redacted(stored: dict[str, Any]) -> None:
    entries = stored["entries"]
    assert entries[f"session-{MESSAGES}"]["data"] == _joined(TITLE_CASES, " / ")[1]
    assert entries[f"session-{COMPACTED}"]["data"] == _joined(SUMMARY_CASES, "\n")[1]
