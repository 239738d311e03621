"""One PostgreSQL shelf, many writing processes: racing creates (single and batched) have exactly
one winner per name, nothing is duplicated (rows, FTS documents), concurrent updates of one
entry lose no field, and nothing surfaces as a lock error."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

from hypatia_lite import shelves
from hypatia_lite.store import LiteStore

pytestmark = pytest.mark.integration
SHELF = "pg"
WORKERS = 4
NAMES = 30

# Every racer waits for the file ``go`` (written once all of them have opened the shelf), then
# creates the same names: singly (even i) or in one batch per ten names (odd i).
_RACER = r"""
import json, sys, time
from pathlib import Path
from hypatia_lite.protocol import EntryWrite, StatementWrite
from hypatia_lite.store import LiteStore

home, go, count, me = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
store = LiteStore(sys.argv[5], home=home)
print("ready", flush=True)
while not go.exists():
    time.sleep(0.005)
out = {"knowledge": {}, "statement": {}}
for i in range(0, count, 2):
    out["knowledge"][f"msg-race-{i}"] = store.knowledge_create(
        f"msg-race-{i}", f"written by {me}", tags=["message"], scopes=["p"])
    out["statement"][f"msg-race-{i}"] = store.statement_create(
        "session-race", "belongTo", f"msg-race-{i}")
for start in range(1, count, 10):
    odd = range(start, min(start + 10, count), 2)
    done = store.write_batch(
        [EntryWrite(f"msg-race-{i}", f"written by {me}", tags=("message",), scopes=("p",))
         for i in odd],
        [StatementWrite("session-race", "belongTo", f"msg-race-{i}") for i in odd])
    for i in odd:
        out["knowledge"][f"msg-race-{i}"] = f"msg-race-{i}" in done.created_names
        out["statement"][f"msg-race-{i}"] = (
            f"session-race,belongTo,msg-race-{i}" in done.created_triples)
store.close()
print(json.dumps(out))
"""

_UPDATER = r"""
import sys, time
from pathlib import Path
from hypatia_lite.store import LiteStore

home, go, field = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
with LiteStore(sys.argv[4], home=home) as store:
    print("ready", flush=True)
    while not go.exists():
        time.sleep(0.005)
    for i in range(20):
        if field == "data":
            store.knowledge_update("shared", data=f"data-{i}")
        else:
            store.knowledge_update("shared", tags=[f"tag-{i}"])
print("done")
"""


def _spawn(script: str, *args: str) -> subprocess.Popen[str]:
    env = {
        **os.environ,
        "HYPATIA_LITE_EMBEDDER": "hash",
    }
    return subprocess.Popen(
        [sys.executable, "-c", script, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def _all_ready(procs: list[subprocess.Popen[str]], go: Path) -> None:
    for proc in procs:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready"
    go.write_text("go")


def test_racing_writers_have_exactly_one_winner_per_name(tmp_path: Path, pg_url: str) -> None:
    home, go = tmp_path / "home", tmp_path / "go"
    shelves.connect(home, pg_url, SHELF)
    procs = [_spawn(_RACER, str(home), str(go), str(NAMES), f"w{n}", SHELF) for n in range(WORKERS)]
    _all_ready(procs, go)
    results = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        assert "lock" not in err.lower()
        results.append(json.loads(out))
    for kind in ("knowledge", "statement"):
        wins = {key: sum(r[kind][key] for r in results) for key in results[0][kind]}
        assert wins == {f"msg-race-{i}": 1 for i in range(NAMES)}
    with LiteStore(SHELF, home=home) as store:
        dump = store.dump()
        assert [r["name"] for r in dump["knowledge"]] == sorted(
            f"msg-race-{i}" for i in range(NAMES)
        )
        assert [r["triple"] for r in dump["statements"]] == sorted(
            f"session-race,belongTo,msg-race-{i}" for i in range(NAMES)
        )
        for i in range(NAMES):
            winner = [n for n, r in enumerate(results) if r["knowledge"][f"msg-race-{i}"]]
            entry = store.knowledge_get(f"msg-race-{i}")
            assert entry is not None and entry.content.data == f"written by w{winner[0]}"
        assert [r["key"] for r in store.search_rows("msg race 7", catalog="knowledge")] == [
            "msg-race-7"
        ]
    with psycopg.connect(pg_url) as conn:
        docs = conn.execute(
            "SELECT catalog, count(*), count(DISTINCT key)"
            " FROM hypatia_lite.docs GROUP BY catalog ORDER BY catalog"
        )
        assert docs.fetchall() == [("knowledge", NAMES, NAMES), ("statement", NAMES, NAMES)]


def test_concurrent_updates_of_different_fields_are_not_lost(tmp_path: Path, pg_url: str) -> None:
    home, go = tmp_path / "home", tmp_path / "go"
    shelves.connect(home, pg_url, SHELF)
    with LiteStore(SHELF, home=home) as store:
        assert store.knowledge_create("shared", "start", tags=["start"], scopes=["p"])
    procs = [_spawn(_UPDATER, str(home), str(go), field, SHELF) for field in ("data", "tags")]
    _all_ready(procs, go)
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert (proc.returncode, out.strip()) == (0, "done"), err
    with LiteStore(SHELF, home=home) as store:
        entry = store.knowledge_get("shared")
        assert entry is not None
        content = entry.content
        assert (content.data, content.tags, content.scopes) == ("data-19", ("tag-19",), ("p",))
        assert [r["key"] for r in store.search_rows("tag 19")] == ["shared"]
        assert [r["key"] for r in store.search_rows("data 19")] == ["shared"]
        assert store.search_rows("tag 18") == []
