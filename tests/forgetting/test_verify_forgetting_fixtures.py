"""``verify-forgetting`` on the logs DSH itself wrote (the shipped fixtures: DSH's examples in V0
and V4, and what DSH 0.2.1 wrote), consolidated, then rewound late — after their messages,
summaries, archives and units were stored — and repaired by the next run: 0 leaks, although the
fixtures repeat phrases ("Reading the file now.", "Answer N to: …") across sessions."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import zstandard
from canary_support import canary_reply, runtime_for
from model_server import ModelServer, model_server_fixture  # noqa: F401
from pipeline_support import process

from dsh_memory_worker.memory.dsh.reader import read_log
from dsh_memory_worker.memory.dsh.surface import fold_surface
from dsh_memory_worker.worker.commands.demo_home import lay_out_fixtures
from dsh_memory_worker.worker.verify.run import verify

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
DSH_02 = REPO / "tests" / "fixtures" / "dsh-0.2" / "sessions"


def _logs(home: Path) -> list[Path]:
    return sorted(p for p in (home / "sessions").rglob("session*.jsonl*") if p.is_file())


def rewind_last_prompt(path: Path) -> bool:
    """Append a dsh-rewind marker withdrawing the last human prompt on the surface and all after
    it (as a zstd frame to a compressed log); False when the log has none."""
    log = read_log(path)
    if log.problems or not log.events:
        return False
    surface = fold_surface(log.events).nodes
    by_seq = {e.seq: e for e in log.events}
    prompts = [
        s
        for s in surface
        if s >= log.inherited
        and by_seq[s].type == "user/message"
        and by_seq[s].message is not None
        and by_seq[s].message.source_kind == "user"
    ]
    if not prompts:
        return False
    shadowed = surface[surface.index(prompts[-1]) :]
    last = log.events[-1]
    version = log.header.version if log.header is not None else 4
    op = (
        {"op": "replace", "startSeq": shadowed[0], "endSeq": shadowed[-1]}
        if version >= 3
        else {"op": "replace", "start": shadowed[0], "end": shadowed[-1]}
    )
    source = {"kind": "dsh-rewind"} if version >= 4 else {"kind": "plugin", "plugin": "dsh-rewind"}
    row = {
        "type": "user/message",
        "seq": last.seq + 1,
        "time": (last.time or 0) + 1,
        "data": {
            "id": "late-rewind",
            "role": "user",
            "source": source,
            "content": [{"type": "text", "text": "(empty message)"}],
        },
        "surfaceOp": op,
        "sourceEventSeqs": shadowed,
    }
    line = (json.dumps(row, separators=(",", ":")) + "\n").encode()
    if path.name.endswith(".zstd"):
        line = zstandard.ZstdCompressor(write_checksum=True).compress(line)
    with path.open("ab") as handle:
        handle.write(line)
    return True


def test_shipped_fixtures_rewound_late_verify_clean(
    tmp_path: Path,
    model_server: ModelServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    model_server.responder = canary_reply
    home = tmp_path / "dsh"
    lay_out_fixtures(REPO / "tests" / "fixtures" / "dsh", home)
    for project in DSH_02.iterdir():
        shutil.copytree(project, home / "sessions" / project.name, dirs_exist_ok=True)
    runtime = runtime_for(tmp_path, model_server, monkeypatch)
    try:
        process(runtime)
        before = verify(runtime, "default")
        rewound = [p for p in _logs(home) if rewind_last_prompt(p)]
        process(runtime)
        after = verify(runtime, "default")
    finally:
        runtime.close()
    assert [leak.line() for leak in before.leaks] == []
    assert len(rewound) >= 10
    assert after.sources.withdrawn_count >= before.sources.withdrawn_count + 2 * len(rewound) - 4
    assert [leak.line() for leak in after.leaks] == []
    assert after.entries > 50 and after.sources.unreadable == {}
