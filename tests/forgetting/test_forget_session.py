"""``memory-worker forget``: the session's messages, node, summaries and work units are gone,
no archive text derived from it is left (archives are dropped at once and regenerated from the
other members by the next run), the
other session's entries are untouched (full dump comparison), the session is never ingested
again, and the run is audited. ``--dry-run`` lists exactly what a real run removes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from canary_support import CanarySession, canary_reply, cli, cli_env, dump, process, runtime_for
from model_server import ModelServer, model_server_fixture  # noqa: F401
from pipeline_support import entries

pytestmark = pytest.mark.integration


def test_forget_removes_the_session_and_its_share_of_archives(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, model_server: ModelServer
) -> None:
    model_server.responder = canary_reply
    runtime = runtime_for(tmp_path, model_server, monkeypatch)
    gone = CanarySession.start(tmp_path, "s-gone")
    kept = CanarySession.start(tmp_path, "s-kept")
    gone.log.title("a session to forget", gone.turn("1").user_seq)
    kept.turn("1")
    process(runtime)
    gone.turn("2")
    kept.turn("2")
    process(runtime)
    runtime.close()
    before = entries(tmp_path)
    archives = sorted(n for n in before if n.startswith(("sum2-", "sum3-")))
    assert len(archives) == 3 and "session-s-gone" in before
    mine = {n for n in before if "s-gone" in n}
    assert len(mine) == 2 + 4 + 1  # two summaries, four messages, the node
    units = {n for n in before if n.startswith("wu-")}
    assert len(units) == 4

    env = cli_env(tmp_path, model_server)
    dry = cli(["forget", "s-gone", "--dry-run", "--json"], env)
    assert dry.returncode == 0, dry.stderr
    planned = json.loads(dry.stdout)["sessions"][0]["plan"]
    assert entries(tmp_path) == before  # a dry run changes nothing

    real = cli(["forget", "s-gone", "--json"], env)
    assert real.returncode == 0, real.stderr
    owed = json.loads(real.stdout)["sessions"][0]["owed"]
    # The archives above go at once too (no model call), owed a regeneration.
    assert (
        sorted(owed)
        == archives
        == sorted(p["entry"] for p in planned if p["action"] == "regenerate")
    )
    assert set(before) - set(entries(tmp_path)) == {p["entry"] for p in planned}
    regenerated = cli(["run", "--once"], env)
    assert regenerated.returncode == 0, regenerated.stderr
    after = entries(tmp_path)
    removed = set(before) - set(after)
    assert {p["entry"] for p in planned if p["action"] == "retract"} == removed
    assert not [n for n in after if "s-gone" in n]
    text = json.dumps(dump(tmp_path), ensure_ascii=False)
    assert "CANARY-s-gone" not in text and "s-gone" not in text
    # The other session: every entry but the shared archives is byte-for-byte the same.
    for name, content in before.items():
        if name in removed or name in archives:
            continue
        assert after[name] == content, name
    assert {n for n in after if n.startswith("wu-")} == units - removed
    assert len(units - removed) == 2
    for canary in kept.canaries.values():
        assert canary in text
    left = [a for a in archives if a in after]
    assert left and all("CANARY-s-kept" in after[a]["data"] for a in left)

    # Never ingested again, even when the log grows; audited.
    gone.turn("3")
    again = runtime_for(tmp_path, model_server, monkeypatch)
    process(again)
    assert not [n for n in entries(tmp_path) if "s-gone" in n]
    with again.state.transaction() as repos:
        assert repos.sessions.is_forgotten("s-gone")
        audit = [
            (e.action, e.outcome)
            for e in repos.audit.entries(session_id="s-gone")
            if e.action == "forget"
        ]
    assert audit == [("forget", "started"), ("forget", "done")]
    again.close()
