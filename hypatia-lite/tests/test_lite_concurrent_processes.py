"""hypatia-lite across processes: racing creates yield exactly one winner, nothing is locked out."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hypatia_lite import shelves
from hypatia_lite.store import LiteStore

WORKERS = 4
NAMES = 40

_RACER = r"""
import json, sys, time
from pathlib import Path
from hypatia_lite.store import LiteStore

home, start_at, count = Path(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])
time.sleep(max(0.0, start_at - time.time()))
store = LiteStore("default", home=home)
out = {"knowledge": {}, "statement": {}}
for i in range(count):
    out["knowledge"][f"msg-race-{i}"] = store.knowledge_create(
        f"msg-race-{i}", f"written by {sys.argv[4]}", tags=["message"], scopes=["p"])
    out["statement"][f"s{i}"] = store.statement_create("session-race", "belongTo", f"msg-race-{i}")
store.close()
print(json.dumps(out))
"""

_CONNECTOR = r"""
import sys, time
from pathlib import Path
from hypatia_lite import shelves

home, start_at, name = Path(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
time.sleep(max(0.0, start_at - time.time()))
print(shelves.connect(home, home / "dirs" / name, name))
"""


def _spawn(script: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", script, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.mark.integration
def test_racing_creates_have_exactly_one_winner(tmp_path: Path) -> None:
    home = tmp_path / "home"  # does not exist yet: the processes also race to create `default`
    start_at = f"{time.time() + 1.5:.3f}"
    procs = [_spawn(_RACER, str(home), start_at, str(NAMES), f"w{n}") for n in range(WORKERS)]
    results = []
    for proc in procs:
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
        assert "locked" not in err
        results.append(json.loads(out))
    for kind, total in (("knowledge", NAMES), ("statement", NAMES)):
        wins = [sum(r[kind][key] for r in results) for key in results[0][kind]]
        assert len(wins) == total
        assert wins == [1] * total
    with LiteStore("default", home=home) as store:
        dump = store.dump()
        assert len(dump["knowledge"]) == NAMES
        assert len(dump["statements"]) == NAMES
        writers = {r["content"]["data"] for r in dump["knowledge"]}
        assert writers <= {f"written by w{n}" for n in range(WORKERS)}
        for i in range(NAMES):
            winner = [n for n, r in enumerate(results) if r["knowledge"][f"msg-race-{i}"]]
            assert store.knowledge_get(f"msg-race-{i}").content.data == (  # type: ignore[union-attr]
                f"written by w{winner[0]}"
            )
        hits = store.search_rows("msg race 7", catalog="knowledge")
        assert [r["key"] for r in hits] == ["msg-race-7"]
    registry = json.loads((home / "shelves.json").read_text())
    assert registry == {"shelves": {"default": str(home / "default")}}


@pytest.mark.integration
def test_racing_connects_lose_no_registry_entry(tmp_path: Path) -> None:
    home = tmp_path / "home"
    start_at = f"{time.time() + 1.5:.3f}"
    names = [f"shelf{n}" for n in range(WORKERS)]
    procs = [_spawn(_CONNECTOR, str(home), start_at, name) for name in names]
    for proc, name in zip(procs, names, strict=True):
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
        assert out.strip() == name
    listing = shelves.listing(home)
    assert [n for n, _, _ in listing] == ["default", *names]
    assert all(connected for _, _, connected in listing)
    assert dict((n, p) for n, p, _ in listing)["shelf2"] == str(home / "dirs" / "shelf2")
    assert not list(home.glob(".shelves.*.tmp"))


_UPDATER = r"""
import sys, time
from pathlib import Path
from hypatia_lite.store import LiteStore

home, start_at, field = Path(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
time.sleep(max(0.0, start_at - time.time()))
with LiteStore("default", home=home) as store:
    for i in range(30):
        if field == "data":
            store.knowledge_update("shared", data=f"data-{i}")
        else:
            store.knowledge_update("shared", tags=[f"tag-{i}"])
print("done")
"""


@pytest.mark.integration
def test_concurrent_updates_of_different_fields_are_not_lost(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with LiteStore("default", home=home) as store:
        store.knowledge_create("shared", "start", tags=["start"], scopes=["p"])
    start_at = f"{time.time() + 1.0:.3f}"
    procs = [_spawn(_UPDATER, str(home), start_at, field) for field in ("data", "tags")]
    for proc in procs:
        out, err = proc.communicate(timeout=60)
        assert (proc.returncode, out.strip()) == (0, "done"), err
    with LiteStore("default", home=home) as store:
        content = store.knowledge_get("shared").content  # type: ignore[union-attr]
        assert (content.data, content.tags, content.scopes) == ("data-29", ("tag-29",), ("p",))
        assert [r["key"] for r in store.search_rows("tag 29")] == ["shared"]
        assert [r["key"] for r in store.search_rows("data 29")] == ["shared"]
