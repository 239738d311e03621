"""``reconsolidate --replace``: with route A then route B, every summary, archive and work unit
ends in B's text under the same names with correct edges and none of A's text left; a second run
makes no model call; ``--dry-run`` changes nothing and predicts the calls exactly; ``--max-calls``
stops cleanly and ``--stale`` then selects exactly what A wrote."""

from __future__ import annotations

import json
from pathlib import Path
from unittest.mock import ANY

import pytest
from model_server import ModelServer, model_server_fixture  # noqa: F401
from pipeline_support import dump, process
from rewrite_support import (
    SESSIONS,
    SETTINGS,
    consolidate_with_a,
    derived,
    env_for,
    knowledge,
    route,
    scripted,
    shelf_bytes,
    triples,
    write_sessions,
)
from typer.testing import CliRunner
from worker_dshgen import embedded_runtime

from dsh_memory_worker.memory.entries import archive_name
from dsh_memory_worker.worker.cli import _register, app
from dsh_memory_worker.worker.jobs.reconsolidate import queued_rewrites
from dsh_memory_worker.worker.state.database import StateDB
from hypatia_lite.store import LiteStore

pytestmark = pytest.mark.integration


def cli(root: Path, server: ModelServer, model: str, *args: str) -> tuple[int, str, str]:
    _register()
    result = CliRunner().invoke(app, list(args), env=env_for(root, server, model))
    return result.exit_code, result.stdout, result.stderr


def provenance(root: Path) -> dict[str, tuple[str, str]]:
    """The provenance of each entry in the store, by its name (the table keeps work units by a
    stable id: ``get_many`` looks them up by name)."""
    state = StateDB(f"sqlite:///{root / 'data' / 'state.db'}")
    try:
        with state.transaction() as repos:
            found = repos.provenance.get_many("default", knowledge(root))
            return {name: (p.kind, p.writer.model) for name, p in found.items()}
    finally:
        state.dispose()


@pytest.fixture()
def a_store(tmp_path: Path, model_server: ModelServer) -> dict[str, int]:
    model_server.responder = scripted
    ends = write_sessions(tmp_path)
    consolidate_with_a(tmp_path, model_server)
    return ends


def test_replace_rewrites_everything_in_place_and_a_second_run_calls_nothing(
    tmp_path: Path, model_server: ModelServer, a_store: dict[str, int]
) -> None:
    ends = a_store
    summaries = {sid: f"sum-{sid}-0-{ends[sid]}" for sid in SESSIONS}
    archive = archive_name(2, [summaries["s-1"], summaries["s-2"]])
    before = derived(tmp_path)
    assert sorted(n for n in before if n.startswith("sum")) == sorted(
        [*summaries.values(), archive]
    )
    assert sum(1 for n in before if n.startswith("wu-")) == 6  # two per summary from A
    assert before[archive] == (
        "# ALPHA digest\n\n- ALPHA saw ALPHA: U: fix the build of s-1\n"
        "- ALPHA saw ALPHA: U: fix the build of s-2"
    )
    assert {kind for kind, model in provenance(tmp_path).values()} == {
        "summary",
        "archive",
        "work-unit",
    }
    assert {model for _, model in provenance(tmp_path).values()} == {"model-a"}
    summary_edges = {t for t in triples(tmp_path) if t[1] == "summary"}

    # Dry run: nothing changes, and the call estimate is what the real run then makes.
    full = dump(tmp_path)
    code, out, err = cli(
        tmp_path,
        model_server,
        "model-b",
        "reconsolidate",
        "--all",
        "--replace",
        "--dry-run",
        "--json",
    )
    assert code == 0, err
    plan = json.loads(out)
    assert dump(tmp_path) == full
    # s-1 and s-2 each rewrite their summary and re-derive the archive above it; s-3 has none.
    assert [s["counts"]["calls"] for s in plan["sessions"]] == [2, 2, 1]
    assert plan["calls"] == 5 and plan["input_tokens"] > 0
    rows = {(i["entry"], i["action"]) for s in plan["sessions"] for i in s["plan"]}
    assert {(summaries[s], "rewrite") for s in SESSIONS} | {(archive, "re-derive")} <= rows
    code, out, _ = cli(
        tmp_path, model_server, "model-b", "reconsolidate", "--all", "--replace", "--dry-run"
    )
    assert "s-1: would rewrite 1 summary, 1 archive, re-extract 2 work units — 2 model calls" in out
    assert "dry run: 5 model calls" in out
    # Selectors: a project, an activity date, named sessions (an unknown one is an error).
    selections = (
        (["--project", "rewrite-proj"], list(SESSIONS)),
        (["--project", "nope"], []),
        (["--since", "2000-01-01"], list(SESSIONS)),
        (["--since", "2999-01-01"], []),
        (["s-3", "s-1"], ["s-3", "s-1"]),
    )
    for args, chosen in selections:
        code, out, err = cli(
            tmp_path,
            model_server,
            "model-b",
            "reconsolidate",
            "--replace",
            "--dry-run",
            "--json",
            *args,
        )
        assert code == 0, err
        assert [row["session_id"] for row in json.loads(out)["sessions"]] == chosen
    code, out, _ = cli(
        tmp_path, model_server, "model-b", "reconsolidate", "s-9", "--replace", "--dry-run"
    )
    assert (code, out) == (
        1,
        "s-9: unknown-session — the watcher has not seen this session\n"
        "dry run: 0 model calls, ~0 input tokens in 1 session(s); nothing "
        "changed\n",
    )
    assert dump(tmp_path) == full

    calls = len(model_server.requests)
    code, out, err = cli(
        tmp_path, model_server, "model-b", "reconsolidate", "--all", "--replace", "--wait"
    )
    assert code == 0, err
    assert len(model_server.requests) - calls == plan["calls"]
    assert out.splitlines() == [
        "s-1: rewrote 1 summary, 1 archive, 1 work unit; removed 2 entries the new pass no "
        "longer produces",
        "s-2: rewrote 1 summary, 1 archive, 1 work unit; removed 2 entries the new pass no "
        "longer produces",
        "s-3: rewrote 1 summary, 0 archives, 1 work unit; removed 2 entries the new pass no "
        "longer produces",
    ]
    after = derived(tmp_path)
    for sid in SESSIONS:
        assert after[summaries[sid]] == f"- BRAVO: U: fix the build of {sid}"
    assert after[archive] == (
        "# BRAVO digest\n\n- BRAVO saw BRAVO: U: fix the build of s-1\n"
        "- BRAVO saw BRAVO: U: fix the build of s-2"
    )
    units = sorted(n for n in after if n.startswith("wu-"))
    assert len(units) == 3 and all(after[u].startswith("## Context\nBRAVO learned") for u in units)
    edges = triples(tmp_path)
    assert {t for t in edges if t[1] == "summary"} == summary_edges  # same members, same archive
    derived_from = {(h, t) for h, r, t in edges if r == "derivedFrom"}
    assert derived_from == {
        (u, summaries[after[u].split("build of ")[1].split("\n")[0]]) for u in units
    }
    names = set(knowledge(tmp_path))
    assert all(h in names for h, _, _ in edges)  # no edge names a removed entry
    everything = json.dumps(dump(tmp_path))
    assert "ALPHA" not in everything
    assert b"ALPHA" not in shelf_bytes(tmp_path)  # not in freed pages or the WAL either
    with LiteStore("default", home=tmp_path / "lite") as store:
        assert store.search("ALPHA") == []
    # Every summary, archive and work unit in the store is recorded as B's.
    assert {n: m for n, (_, m) in provenance(tmp_path).items() if n in names} == {
        n: "model-b" for n in after
    }

    # A second run: everything is current, no model call.
    calls = len(model_server.requests)
    code, out, err = cli(
        tmp_path, model_server, "model-b", "reconsolidate", "--all", "--replace", "--wait"
    )
    assert code == 0, err
    assert out.splitlines() == [f"{sid}: already current: nothing to do" for sid in SESSIONS]
    assert len(model_server.requests) == calls


def test_max_calls_stops_cleanly_and_stale_selects_exactly_what_a_wrote(
    tmp_path: Path, model_server: ModelServer, a_store: dict[str, int]
) -> None:
    ends = a_store
    calls = len(model_server.requests)
    code, out, err = cli(
        tmp_path,
        model_server,
        "model-b",
        "reconsolidate",
        "--all",
        "--replace",
        "--wait",
        "--max-calls",
        "1",
    )
    assert code == 0, err
    assert len(model_server.requests) - calls == 1
    assert out.splitlines() == [
        "s-1: stopped at the --max-calls budget, 1 left (rerun to continue)",
        "s-2: stopped at the --max-calls budget, 1 left (rerun to continue)",
        "s-3: rewrote 1 summary, 0 archives, 1 work unit; removed 2 entries the new pass no "
        "longer produces",
    ]
    names = set(knowledge(tmp_path))
    written_by_a = {
        name
        for name, (_, model) in provenance(tmp_path).items()
        if model == "model-a" and name in names
    }
    assert f"sum-s-1-0-{ends['s-1']}" in written_by_a
    assert f"sum-s-3-0-{ends['s-3']}" not in written_by_a

    code, out, err = cli(
        tmp_path, model_server, "model-b", "reconsolidate", "--stale", "--dry-run", "--json"
    )
    assert code == 0, err
    plan = json.loads(out)
    selected = {
        i["entry"]
        for s in plan["sessions"]
        for i in s["plan"]
        if i["kind"] in ("summary", "work-unit") or i["why"] == "written by a different writer"
    }
    archives = {i["entry"] for s in plan["sessions"] for i in s["plan"] if i["kind"] == "archive"}
    assert selected | archives == written_by_a
    assert [s["line"] for s in plan["sessions"]][2] == "already current: nothing to do"

    # Resuming converges on the same store as one uninterrupted run would.
    code, out, err = cli(tmp_path, model_server, "model-b", "reconsolidate", "--stale", "--wait")
    assert code == 0, err
    assert "ALPHA" not in json.dumps(dump(tmp_path))


def test_a_queued_request_whose_hint_is_lost_is_run_by_the_reconcile_loop(
    tmp_path: Path, model_server: ModelServer, a_store: dict[str, int]
) -> None:
    _register()
    env = env_for(
        tmp_path, model_server, "model-b", MEMORY_WORKER_BROKER_URL="redis://127.0.0.1:1/0"
    )  # nothing listens there
    result = CliRunner().invoke(app, ["reconsolidate", "s-3", "--replace"], env=env)
    assert result.exit_code == 0, result.output
    assert result.stdout == (
        "s-3: queued — recorded, but the broker is unreachable: a running "
        "`memory-worker run` or the daemon takes it up, or rerun with "
        "--wait\n"
    )
    assert knowledge(tmp_path)[f"sum-s-3-0-{a_store['s-3']}"].startswith("- ALPHA:")

    runtime = embedded_runtime(
        tmp_path, force_idle=True, model_routes=route(model_server, "model-b"), **SETTINGS
    )
    try:
        assert queued_rewrites(runtime, "default") == {"s-3": ANY}
        runner = process(runtime)  # what `memory-worker run` does: poll, reconcile, run owed jobs
        assert [
            (r.job, r.session_id, r.status) for r in runner.stats.results if r.job == "rewrite"
        ] == [("rewrite", "s-3", "done")]
        assert queued_rewrites(runtime, "default") == {}
    finally:
        runtime.close()
    now = knowledge(tmp_path)
    assert now[f"sum-s-3-0-{a_store['s-3']}"] == "- BRAVO: U: fix the build of s-3"
    assert now[f"sum-s-1-0-{a_store['s-1']}"].startswith("- ALPHA:")  # only what was asked
