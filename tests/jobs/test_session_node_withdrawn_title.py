"""A V4 log in DSH 0.2's shape: a ``{kind:'fallback'}`` title (the first words of the first
prompt, citing it) written inside the first turn, then a ``dsh-rewind`` marker withdrawing that
prompt, then more turns. No text of the withdrawn prompt stays in the ``session-*`` node or in the
state database — whether the marker is in the log at first read or arrives after the node was
written (the node is then rewritten from a later clean title, or deleted, and audited)."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from cli_fork import run_cli
from conftest import REPO
from test_pipeline_session_node import process, store_rows

from dsh_memory_worker.worker.watch.owed import owed_work
from hypatia_lite.store import LiteStore

sys.path.insert(0, str(REPO / "benchmarks"))
from worker_dshgen import SessionLogWriter, embedded_runtime

CWD = "/home/dev/proj"
SID = "s-title"
PROMPT = "Deploy the zebra-canary build to staging tonight"
FALLBACK = "Deploy the zebra-canary build to"  # DSH 0.2: about 5 words of the first prompt
WITHDRAWN_WORDS = ("zebra-canary", "Deploy the", "staging tonight")
LATER_TITLE = "Reviewing open pull requests"


def state_title(root: Path) -> tuple[Any, ...]:
    with sqlite3.connect(root / "data" / "state.db") as conn:
        row = conn.execute(
            "SELECT last_title_seq, title_text FROM sessions WHERE session_id = ?", (SID,)
        ).fetchone()
    return tuple(row)


def live_state_text(root: Path) -> str:
    """Every live row of every table of the state database, as SQL text."""
    conn = sqlite3.connect(root / "data" / "state.db")
    try:
        return "\n".join(conn.iterdump())
    finally:
        conn.close()


def belong(ordinals: list[int]) -> set[tuple[str, str, str]]:
    return {(f"msg-{SID}-{n}", "belongTo", f"session-{SID}") for n in ordinals}


def first_turn(log: SessionLogWriter) -> tuple[int, int]:
    """The first turn as DSH 0.2 writes it: prompt, fallback title citing it, answer."""
    prompt = log.open_turn(PROMPT)
    title = log.title(FALLBACK, prompt)
    log.close_turn("Deploying it now")
    return prompt, title


def later_turns(log: SessionLogWriter, *, titled: bool) -> int | None:
    second = log.turn("List the open pull requests", "Three are open")
    title = None
    if titled:
        title = log.event(
            "session/title",
            {
                "title": LATER_TITLE,
                "messageSeqs": [second.user_seq],
                "source": {"kind": "provider", "provider": "deepseek"},
            },
        )
    log.turn("Merge the first one", "Merged")
    return title


def assert_no_withdrawn_text(root: Path) -> None:
    with LiteStore("default", home=root / "lite") as store:
        dumped = json.dumps(store.dump(), ensure_ascii=False)
    state = live_state_text(root)
    files = {
        path: path.read_bytes()
        for folder in (root / "data", root / "lite")
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }
    assert any(path.name == "state.db" for path in files)
    for words in WITHDRAWN_WORDS:
        assert words not in dumped, words
        assert words not in state, words
        for path, raw in files.items():  # the raw bytes: freed pages, WAL, FTS segments
            assert words.encode() not in raw, (words, path)
            assert words.lower().encode() not in raw.lower(), (words, path)


def cli(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "MEMORY_WORKER_DATA_DIR": str(root / "data"),
        "MEMORY_WORKER_LITE_HOME": str(root / "lite"),
    }
    for name in ("MEMORY_WORKER_STATE_URL", "MEMORY_WORKER_WITHDRAWAL_KINDS"):
        env.pop(name, None)
    done = run_cli(list(args), env=env, timeout=180)
    assert done.returncode == 0, done.stderr
    return done


def audit(root: Path) -> list[dict[str, Any]]:
    done = cli(root, "status", "--audit", "--json")
    return [
        row for row in json.loads(done.stdout)["audit"] if row["action"] == "repair-session-node"
    ]


KEPT = [f"msg-{SID}-{n}" for n in (2, 3, 4, 5)]


def node_from_the_fallback_title(root: Path) -> tuple[Any, SessionLogWriter, int, int]:
    """The first turn logged with its node: the fallback title's words, in store and state."""
    runtime = embedded_runtime(root)
    log = SessionLogWriter(root / "dsh", SID, CWD)
    prompt, title = first_turn(log)
    log.flush()
    process(runtime)
    knowledge, edges = store_rows(root)
    assert knowledge[f"session-{SID}"] == FALLBACK and edges == belong([0, 1])
    assert state_title(root) == (title, FALLBACK)
    return runtime, log, prompt, title


def assert_node_shows_the_later_title(root: Path, later: int | None) -> None:
    knowledge, edges = store_rows(root)
    assert sorted(knowledge) == sorted([f"session-{SID}", *KEPT])
    assert knowledge[f"session-{SID}"] == LATER_TITLE
    assert edges == belong([2, 3, 4, 5])
    assert state_title(root) == (later, LATER_TITLE)
    assert_no_withdrawn_text(root)


@pytest.mark.integration
def test_marker_in_the_first_read_no_other_title_means_no_node(tmp_path: Path) -> None:
    runtime = embedded_runtime(tmp_path)
    log = SessionLogWriter(tmp_path / "dsh", SID, CWD)
    prompt, title = first_turn(log)
    log.rewind(prompt)
    later_turns(log, titled=False)
    log.flush()
    runner = process(runtime)
    knowledge, edges = store_rows(tmp_path)
    assert sorted(knowledge) == KEPT and edges == set()
    assert state_title(tmp_path) == (title, None)
    node_runs = [r.detail for r in runner.stats.results if r.job == "session_node"]
    assert node_runs == ["every title and compaction summary cites withdrawn messages"]
    assert_no_withdrawn_text(tmp_path)
    # Decided: the reconcile loop does not hint the session node again and again.
    assert [o.job for o in owed_work(runtime, "default") if o.session_id == SID] == []
    runtime.close()
    assert audit(tmp_path) == []  # nothing was written, so nothing was repaired


def test_marker_in_the_first_read_takes_the_later_clean_title(tmp_path: Path) -> None:
    runtime = embedded_runtime(tmp_path)
    log = SessionLogWriter(tmp_path / "dsh", SID, CWD)
    prompt, _ = first_turn(log)
    log.rewind(prompt)
    later = later_turns(log, titled=True)
    log.flush()
    process(runtime)
    assert_node_shows_the_later_title(tmp_path, later)
    runtime.close()


@pytest.mark.integration
def test_a_late_marker_rewrites_the_node_from_the_later_clean_title(tmp_path: Path) -> None:
    runtime, log, prompt, title = node_from_the_fallback_title(tmp_path)
    marker = log.rewind(prompt)
    later = later_turns(log, titled=True)
    log.flush()
    process(runtime)
    assert_node_shows_the_later_title(tmp_path, later)
    runtime.close()
    (row,) = audit(tmp_path)
    assert (row["subject"], row["outcome"], row["cause_marker_seq"], row["source_kind"]) == (
        f"session-{SID}",
        "rewritten",
        marker,
        "dsh-rewind",
    )
    assert row["detail"] == (
        f"now from session/title seq {later} (provider); skipped session/title seq {title}: "
        f"cites message seq {prompt}, withdrawn by the dsh-rewind marker at seq {marker}"
    )


@pytest.mark.integration
def test_a_late_marker_deletes_the_node_when_no_clean_title_is_left(tmp_path: Path) -> None:
    runtime, log, prompt, title = node_from_the_fallback_title(tmp_path)
    marker = log.rewind(prompt)
    log.flush()  # the rewind is the session's last action for now
    process(runtime)
    knowledge, edges = store_rows(tmp_path)
    assert knowledge == {} and edges == set()
    assert state_title(tmp_path) == (title, None)

    later_turns(log, titled=False)
    log.flush()
    process(runtime)
    knowledge, edges = store_rows(tmp_path)
    assert sorted(knowledge) == KEPT and edges == set()  # no node comes back, no edges to it
    assert_no_withdrawn_text(tmp_path)
    runtime.close()
    (row,) = audit(tmp_path)
    assert (row["subject"], row["outcome"], row["cause_marker_seq"], row["detail"]) == (
        f"session-{SID}",
        "deleted",
        marker,
        f"skipped session/title seq {title}: cites message seq {prompt}, withdrawn by the "
        f"dsh-rewind marker at seq {marker}",
    )


@pytest.mark.integration
def test_inspect_json_shows_the_title_source_used_and_the_one_skipped(tmp_path: Path) -> None:
    log = SessionLogWriter(tmp_path / "dsh", SID, CWD)
    prompt, title = first_turn(log)
    marker = log.rewind(prompt)
    later = later_turns(log, titled=True)
    log.flush()
    env = {**os.environ, "MEMORY_WORKER_TIMEZONE": "UTC"}
    done = run_cli(["inspect", "--json", str(log.path)], env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    (report,) = json.loads(done.stdout)["sessions"]
    # turn/start, step/start, prompt, answer, step/end, turn/end, then the provider title
    second_prompt = later - 4
    assert report["session_node"] == {
        "source": {
            "seq": later,
            "type": "session/title",
            "source": "provider",
            "cites": [second_prompt],
            "checkpoint": None,
            "text": LATER_TITLE,
        },
        "skipped": [
            {
                "seq": title,
                "type": "session/title",
                "source": "fallback",
                "reason": "withdrawn-source",
                "withdrawn_seq": prompt,
                "marker_seq": marker,
                "marker_kind": "dsh-rewind",
                "detail": f"cites message seq {prompt}, withdrawn by the dsh-rewind marker at seq "
                f"{marker}",
            }
        ],
    }
    plain = run_cli(["inspect", str(log.path)], env=env, timeout=120)
    assert plain.returncode == 0, plain.stderr
    assert f"session node: session/title seq {later} (provider)" in plain.stdout
    assert (
        f"node skips session/title seq {title}: cites message seq {prompt}, withdrawn by "
        f"the dsh-rewind marker at seq {marker}"
    ) in plain.stdout


@pytest.mark.integration
def test_a_late_rollback_of_a_compaction_checkpoint_deletes_the_node_built_on_it(
    tmp_path: Path,
) -> None:
    runtime = embedded_runtime(tmp_path)
    log = SessionLogWriter(tmp_path / "dsh", SID, CWD)
    first = log.turn("Plan the walrus migration", "Here is the plan")
    start = log.event("compaction/start", {"compactionId": "cmp-1", "turn": None})
    shadowed = [first.user_seq, first.assistant_seq]
    summary = log.event(
        "compaction/summary",
        {
            "compactionId": "cmp-1",
            "summary": [{"type": "text", "text": "Earlier: walrus plan"}],
            "shadowedRange": {"start": shadowed[0], "end": shadowed[-1]},
            "shadowedSeqs": shadowed,
            "shadowedTokenCount": 40,
            "provider": "deepseek",
            "model": "deepseek-chat",
        },
    )
    checkpoint = log.event(
        "user/message",
        {
            "id": "m-cp",
            "role": "user",
            "source": {"kind": "compact-checkpoint", "compactionId": "cmp-1"},
            "content": [{"type": "text", "text": "checkpoint"}],
        },
        surfaceOp={"op": "replace", "startSeq": shadowed[0], "endSeq": shadowed[-1]},
        sourceEventSeqs=[start, summary, *shadowed],
    )
    log.surface[:] = [checkpoint]
    log.event("compaction/end", {"compactionId": "cmp-1", "turn": None})
    log.turn("Carry on", "Carrying on")
    log.flush()
    process(runtime)
    knowledge, edges = store_rows(tmp_path)
    assert knowledge[f"session-{SID}"] == "Earlier: walrus plan"
    assert edges == belong([0, 1, 2, 3])
    assert state_title(tmp_path) == (summary, "Earlier: walrus plan")

    marker = log.rewind(checkpoint, kind="plugin:rollback")  # the checkpoint and all after it
    log.flush()
    process(runtime)
    knowledge, edges = store_rows(tmp_path)
    assert sorted(knowledge) == [f"msg-{SID}-0", f"msg-{SID}-1"] and edges == set()
    assert state_title(tmp_path) == (summary, None)
    runtime.close()
    (row,) = audit(tmp_path)
    assert (row["outcome"], row["cause_marker_seq"], row["source_kind"], row["detail"]) == (
        "deleted",
        marker,
        "plugin:rollback",
        f"skipped compaction/summary seq {summary}: its checkpoint seq {checkpoint} was "
        f"withdrawn by the plugin:rollback marker at seq {marker}",
    )


@pytest.mark.integration
def test_the_retract_run_plans_and_makes_the_node_rewrite_a_new_marker_kind_causes(
    tmp_path: Path,
) -> None:
    # Logged while only dsh-rewind counted: the rollback did not withdraw the first prompt then.
    runtime = embedded_runtime(tmp_path, withdrawal_kinds=["dsh-rewind"])
    log = SessionLogWriter(tmp_path / "dsh", SID, CWD)
    prompt, title = first_turn(log)
    marker = log.rewind(prompt, kind="plugin:rollback")
    later = later_turns(log, titled=True)
    log.flush()
    process(runtime)
    runtime.close()
    assert store_rows(tmp_path)[0][f"session-{SID}"] == FALLBACK

    dry = json.loads(cli(tmp_path, "retract", "--all", "--dry-run", "--json").stdout)
    (session,) = dry["sessions"]
    node = [p for p in session["plan"] if p["entry"] == f"session-{SID}"]
    assert node == [
        {
            "session_id": SID,
            "entry": f"session-{SID}",
            "action": "regenerate",
            "why": f"session/title seq {title} cites message seq {prompt}, withdrawn by the "
            f"plugin:rollback marker at seq {marker}",
        }
    ]
    assert store_rows(tmp_path)[0][f"session-{SID}"] == FALLBACK  # a dry run changes nothing

    cli(tmp_path, "retract", "--all")
    assert_node_shows_the_later_title(tmp_path, later)
    (row,) = audit(tmp_path)
    assert (row["outcome"], row["cause_marker_seq"], row["source_kind"]) == (
        "rewritten",
        marker,
        "plugin:rollback",
    )
    again = json.loads(cli(tmp_path, "retract", "--all", "--dry-run", "--json").stdout)
    assert again["sessions"][0]["plan"] == []
