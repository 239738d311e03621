"""End to end, embedded: `memory-worker demo-home` + `memory-worker run --once` over the shipped
fixtures writes exactly the expected entries and edges into hypatia-lite's default shelf (read
back through the `hypatia-lite` CLI too), withdrawn messages are absent, and a second run writes
nothing new."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from cli_fork import run_cli

from dsh_memory_worker.worker.commands.demo_home import demo_session_id
from hypatia_lite.store import LiteStore

pytestmark = pytest.mark.integration  # every test reads the CLI runs of one module fixture

BIN = Path(sys.executable).parent
V4 = "7d3c1f0e-2b6a-4c59-9e1d-5a8f3b2c4d10"
FS_READ = "a57f852d-d476-4716-a380-8a1116e4d905"
IMAGE = "44444444-4444-4444-8444-444444444444"
PARENT = "96cf59c9-b347-48b9-b234-a5200913ad05"
CHILD = "ada8966c-9fa3-441b-8721-37ff1e795e6a"
CANCEL = demo_session_id("cancel")
ERROR = demo_session_id("error-finish")
COMPACTION = demo_session_id("compaction-recovery")

#: session id → message ordinals written (the v4 example's 4 and 5 were withdrawn by a rewind).
EXPECTED_ORDINALS = {
    V4: [0, 1, 2, 3, 6, 7],
    FS_READ: [0, 1],
    IMAGE: [0, 1],
    PARENT: [0, 1, 2, 3],
    CHILD: [0, 1],  # the fork child's own messages only (its inherited prefix is the parent's)
    CANCEL: [0, 1],
    ERROR: [0],
    COMPACTION: [0, 1],
}
#: sessions with a host title → a session node; the fork child has none of its own.
WITH_NODE = {V4, FS_READ, IMAGE, PARENT, CANCEL, ERROR, COMPACTION}


def _cli(args: list[str], env: dict[str, str], tool: str = "memory-worker") -> Any:
    return run_cli(args, env=env, timeout=120, tool=tool)


@pytest.fixture(scope="module")
def first_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("embedded")
    env = {
        **os.environ,
        "MEMORY_WORKER_DATA_DIR": str(root / "data"),
        "HYPATIA_LITE_HOME": str(root / "lite"),
        "COLUMNS": "200",
    }
    env.pop("MEMORY_WORKER_LITE_HOME", None)
    env.pop("MEMORY_WORKER_STATE_URL", None)
    laid = _cli(["demo-home", str(root / "dsh")], env)
    assert laid.returncode == 0, laid.stderr
    first = _cli(["run", "--once", "--dsh-home", str(root / "dsh")], env)
    assert first.returncode == 0, first.stderr
    with LiteStore("default", home=root / "lite") as store:
        dump = store.dump()
    return {"root": root, "env": env, "first": first, "dump": dump}


def _names(dump: dict[str, Any]) -> set[str]:
    return {row["name"] for row in dump["knowledge"]}


def test_exactly_the_expected_entries_and_edges(first_run: dict[str, Any]) -> None:
    expected = {f"msg-{sid}-{n}" for sid, ordinals in EXPECTED_ORDINALS.items() for n in ordinals}
    expected |= {f"session-{sid}" for sid in WITH_NODE}
    assert _names(first_run["dump"]) == expected
    edges = {(s["head"], s["relation"], s["tail"]) for s in first_run["dump"]["statements"]}
    assert edges == {
        (f"msg-{sid}-{n}", "belongTo", f"session-{sid}")
        for sid in WITH_NODE
        for n in EXPECTED_ORDINALS[sid]
    }
    assert "28 entries written, 0 retracted, 19 edges" in " ".join(
        first_run["first"].stderr.split()
    )


def test_entry_contents(first_run: dict[str, Any]) -> None:
    rows = {row["name"]: row["content"] for row in first_run["dump"]["knowledge"]}
    answer = rows[f"msg-{V4}-7"]
    assert answer["data"] == (
        "## Role\nassistant\n\n## Timestamp\n2026-09-21T15:14:34.142Z\n\n## Turn\n4\n\n"
        "## Content\nPort 9090."
    )
    assert answer["tags"] == ["message"] and answer["scopes"] == ["widget"]
    assert rows[f"msg-{V4}-0"]["data"].endswith(
        "## Content\nRead config.json and tell me which port the service uses."
    )
    assert rows[f"session-{V4}"]["data"] == "Read config.json and tell me"
    assert rows[f"session-{V4}"]["tags"] == ["session"]
    assert rows[f"msg-{CANCEL}-1"]["data"].endswith("[turn interrupted mid-stream]")
    assert rows[f"msg-{CHILD}-1"]["data"].endswith("## Content\nMARMALADE")
    assert rows[f"msg-{PARENT}-1"]["data"].endswith("## Content\nOK")
    assert all(c["scopes"] == ["dsh-demo"] for n, c in rows.items() if V4 not in n)


def test_withdrawn_messages_are_absent(first_run: dict[str, Any]) -> None:
    names = _names(first_run["dump"])
    assert f"msg-{V4}-4" not in names and f"msg-{V4}-5" not in names
    text = json.dumps(first_run["dump"])
    assert "Now add a /healthz endpoint." not in text
    assert "cannot edit files now" not in text


def test_hypatia_lite_cli_reads_what_the_worker_wrote(first_run: dict[str, Any]) -> None:
    got = _cli(["knowledge-get", f"msg-{V4}-6"], first_run["env"], tool="hypatia-lite")
    assert got.returncode == 0, got.stderr
    entry = json.loads(got.stdout)
    assert entry["content"]["data"].endswith("## Content\nWhich port is configured now?")
    query = json.dumps({"$knowledge": [["$like", "name", f"msg-{V4}-%"]]})
    listed = _cli(["query", query], first_run["env"], tool="hypatia-lite")
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.count(f'"msg-{V4}-') == 6


def test_second_run_writes_nothing_new(first_run: dict[str, Any]) -> None:
    again = _cli(["run", "--once", "--dsh-home", str(first_run["root"] / "dsh")], first_run["env"])
    assert again.returncode == 0, again.stderr
    assert "0 entries written, 0 retracted" in " ".join(again.stderr.split())
    with LiteStore("default", home=first_run["root"] / "lite") as store:
        assert store.dump() == first_run["dump"]
    status = _cli(["status", "--json"], first_run["env"])
    sessions = json.loads(status.stdout)["sessions"]
    assert len(sessions) == 8
    assert all(row["lag"] == 0 and row["last_failure"] is None for row in sessions)
    child = next(row for row in sessions if row["session_id"] == CHILD)
    assert child["inherited_cut"] == 42 and child["has_session_node"] is False


def test_a_wiped_store_is_rebuilt_on_the_next_run(first_run: dict[str, Any]) -> None:
    """Runs last: the watermarks say everything was written, the store has nothing; the startup
    reconcile resets those sessions and the run writes the same entries again."""
    import shutil

    shutil.rmtree(first_run["root"] / "lite")
    again = _cli(["run", "--once", "--dsh-home", str(first_run["root"] / "dsh")], first_run["env"])
    assert again.returncode == 0, again.stderr
    assert "the store has none of the entries of 8 session(s)" in " ".join(again.stderr.split())
    with LiteStore("default", home=first_run["root"] / "lite") as store:
        assert store.dump() == first_run["dump"]
