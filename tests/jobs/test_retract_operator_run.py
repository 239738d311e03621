"""``memory-worker retract`` on a store written under an older whitelist (``plugin:rollback``
markers were not withdrawals then): ``--dry-run`` lists exactly the entries a real run then
removes or rewrites and changes nothing; the real run removes them (messages, their summary's
withdrawn text, archives and work units built on it) and audits it; a second real run finds
nothing to do. ``--kind`` adds a marker kind for one run only."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from canary_support import (
    CanarySession,
    canary_reply,
    cli,
    cli_env,
    dump,
    dump_text,
    process,
    runtime_for,
)
from model_server import ModelServer, model_server_fixture  # noqa: F401

pytestmark = pytest.mark.integration


def _rows(root: Path) -> dict[str, Any]:
    return {row["name"]: row["content"]["data"] for row in dump(root)["knowledge"]}


def _older_store(
    root: Path, server: ModelServer, monkeypatch: pytest.MonkeyPatch
) -> tuple[list[str], list[str]]:
    """Two sessions logged and consolidated with ``dsh-rewind`` as the only withdrawal kind;
    one carries a ``plugin:rollback`` marker. Returns the rolled-back and kept canaries."""
    runtime = runtime_for(root, server, monkeypatch, withdrawal_kinds=["dsh-rewind"])
    old = CanarySession.start(root, "s-old")
    other = CanarySession.start(root, "s-other")
    old.turn("1")
    second = old.turn("2")
    other.turn("1")
    _, withdrawn = old.rewind(second.user_seq, kind="plugin:rollback")
    old.turn("3")
    other.turn("2")
    process(runtime)
    runtime.close()
    return withdrawn, old.kept(withdrawn) + list(other.canaries.values())


def test_dry_run_lists_exactly_what_the_real_run_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, model_server: ModelServer
) -> None:
    model_server.responder = canary_reply
    withdrawn, kept = _older_store(tmp_path, model_server, monkeypatch)
    before = _rows(tmp_path)
    assert all(c in dump_text(tmp_path) for c in withdrawn)  # the old whitelist kept them

    env = cli_env(tmp_path, model_server)  # today's whitelist includes plugin:rollback
    dry = cli(["retract", "--all", "--dry-run", "--json"], env)
    assert dry.returncode == 0, dry.stderr
    plan = [item for s in json.loads(dry.stdout)["sessions"] for item in s["plan"]]
    assert _rows(tmp_path) == before
    assert {(p["entry"], p["action"]) for p in plan if p["entry"].startswith("msg-")} == {
        ("msg-s-old-2", "retract"),
        ("msg-s-old-3", "retract"),
    }
    table = cli(["retract", "s-old", "--dry-run"], env)
    assert table.returncode == 0 and "msg-s-old-2" in table.stdout
    assert "withdrawn by plugin:rollback marker" in " ".join(table.stdout.split())

    real = cli(["retract", "--all", "--json"], env)
    assert real.returncode == 0, real.stderr
    after = _rows(tmp_path)
    removed = set(before) - set(after)
    changed = {n for n in after if n in before and after[n] != before[n]}
    assert {p["entry"] for p in plan if p["action"] == "retract"} == removed
    assert {p["entry"] for p in plan if p["action"] == "regenerate"} == changed
    assert {"msg-s-old-2", "msg-s-old-3"} <= removed and changed  # a summary was rewritten
    text = dump_text(tmp_path)
    for canary in withdrawn:
        assert canary not in text, canary
    for canary in kept:
        assert canary in text, canary

    again = cli(["retract", "--all", "--json"], env)
    assert again.returncode == 0, again.stderr
    assert all(s["plan"] == [] for s in json.loads(again.stdout)["sessions"])
    assert _rows(tmp_path) == after
    quiet = cli(["retract", "--all"], env)
    assert "nothing to retract" in quiet.stdout

    runtime = runtime_for(tmp_path, model_server, monkeypatch)
    with runtime.state.transaction() as repos:
        retractions = repos.audit.retractions(session_id="s-old")
        runs = [
            e.outcome for e in repos.audit.entries(session_id="s-old") if e.action == "retract-run"
        ]
    runtime.close()
    assert sorted((r.entry, r.source_kind, r.outcome) for r in retractions) == [
        ("msg-s-old-2", "plugin:rollback", "retracted"),
        ("msg-s-old-3", "plugin:rollback", "retracted"),
    ]
    assert runs == ["done"]
    trail = json.loads(cli(["status", "--json", "--audit", "--session", "s-old"], env).stdout)
    actions = [(row["action"], row["subject"], row["outcome"]) for row in trail["audit"]]
    assert ("retract-message", "msg-s-old-2", "retracted") in actions
    summaries = [a for a in actions if a[0] == "repair-summary"]
    assert summaries and all(a[2] == "regenerated" for a in summaries)
    shown = cli(["status", "--audit"], env)
    assert "audit trail" in shown.stdout and "repair-intent" in shown.stdout


def test_kind_adds_a_marker_kind_for_one_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, model_server: ModelServer
) -> None:
    model_server.responder = canary_reply
    withdrawn, _ = _older_store(tmp_path, model_server, monkeypatch)
    env = cli_env(tmp_path, model_server, MEMORY_WORKER_WITHDRAWAL_KINDS="dsh-rewind")
    without = cli(["retract", "s-old", "--dry-run", "--json"], env)
    assert json.loads(without.stdout)["sessions"][0]["plan"] == []
    run = cli(["retract", "s-old", "--kind", "plugin:rollback", "--json"], env)
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout)["sessions"][0]["result"]
    assert {"msg-s-old-2", "msg-s-old-3"} <= set(result["retracted"])
    text = dump_text(tmp_path)
    assert not [c for c in withdrawn if c in text]


def test_bad_usage_is_one_line_and_exit_2(tmp_path: Path, model_server: ModelServer) -> None:
    env = cli_env(tmp_path, model_server)
    both = cli(["retract", "s-x", "--all"], env)
    assert both.returncode == 2 and "give session ids or --all" in both.stderr
    unknown = cli(["retract", "s-missing", "--json"], env)
    assert unknown.returncode == 1
    assert json.loads(unknown.stdout)["undone"] == ["s-missing"]


def test_the_retract_job_runs_under_the_guard(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, model_server: ModelServer
) -> None:
    from dsh_memory_worker.worker.jobs.guard import run_job
    from dsh_memory_worker.worker.names import JOB_RETRACT

    model_server.responder = canary_reply
    withdrawn, kept = _older_store(tmp_path, model_server, monkeypatch)
    runtime = runtime_for(tmp_path, model_server, monkeypatch)  # today's whitelist
    result = run_job(runtime, JOB_RETRACT, "s-old", "default")
    assert (result.status, result.retracted) == ("done", 2), result.detail
    again = run_job(runtime, JOB_RETRACT, "s-old", "default")
    assert (again.status, again.retracted) == ("skipped", 0)
    runtime.close()
    text = dump_text(tmp_path)
    assert not [c for c in withdrawn if c in text] and all(c in text for c in kept)
