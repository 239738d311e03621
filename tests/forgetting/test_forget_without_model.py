"""``forget`` never waits for a model: with the model endpoint down it removes the session and
every byte derived from it (archives above its summaries included) and exits 0, and
``verify-forgetting`` passes. The archives it had to drop are owed: the next run with the model
back regenerates them, and the store then equals the one a ``forget`` with the model up leaves
(entry for entry, edge for edge)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from bytes_support import TokenSession, leaks, present, shelf_files, state_files
from canary_support import canary_reply, cli, cli_env, dump, process, runtime_for
from model_server import ModelServer, model_server_fixture  # noqa: F401

from dsh_memory_worker.worker.watch.owed import owed_work

pytestmark = pytest.mark.integration

#: A model route nothing listens on (port 9 is "discard"; connections are refused here).
DOWN = json.dumps(
    [{"base_url": "http://127.0.0.1:9/v1", "model": "canary", "api_key_env": "CANARY_TEST_KEY"}]
)


def _homes(
    roots: tuple[Path, ...], model_server: ModelServer, monkeypatch: pytest.MonkeyPatch
) -> tuple[TokenSession, TokenSession]:
    """Homes over the same logs: two sessions of one project, consolidated in two steps, so
    each home holds two tier-2 archives and a tier-3 one, each with text of both."""
    first = roots[0]
    a = TokenSession.start(first, "s-a")
    b = TokenSession.start(first, "s-b")

    def step() -> None:
        for other in roots[1:]:
            shutil.copytree(first / "dsh", other / "dsh", dirs_exist_ok=True)
        for root in roots:
            runtime = runtime_for(root, model_server, monkeypatch)
            process(runtime)
            runtime.close()

    a.turn("1")
    b.turn("1")
    b.turn("2")
    step()
    a.turn("3")
    b.turn("3")
    step()
    return a, b


def _store(root: Path) -> tuple[dict[str, Any], set[tuple[str, str, str]]]:
    """The store without timestamps: each entry's text, tags and scopes; every edge."""
    dumped = dump(root)
    knowledge = {
        row["name"]: (row["content"]["data"], sorted(row.get("tags") or []), row.get("scopes"))
        for row in dumped["knowledge"]
    }
    return knowledge, {(s["head"], s["relation"], s["tail"]) for s in dumped["statements"]}


def _files(root: Path) -> list[Path]:
    return shelf_files(root / "lite") + state_files(root)


def test_forget_with_the_model_down_removes_now_and_regenerates_later(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, model_server: ModelServer
) -> None:
    model_server.responder = canary_reply
    down_home, up_home = tmp_path / "down", tmp_path / "up"
    a, b = _homes((down_home, up_home), model_server, monkeypatch)
    built, _ = _store(down_home)
    archives = sorted(n for n in built if n.startswith(("sum2-", "sum3-")))
    assert len(archives) == 3
    doomed = list(b.canaries.values())
    kept = list(a.canaries.values())
    assert present(shelf_files(down_home / "lite"), doomed) == set(doomed)

    # The reference: the same forget and run with the model answering throughout.
    up_env = cli_env(up_home, model_server)
    for args in (["forget", "s-b"], ["run", "--once"]):
        done = cli(args, up_env)
        assert done.returncode == 0, done.stderr
    reference = _store(up_home)
    # Each archive regenerated from the members left, under its name: the tier-2 ones from
    # one summary of s-a each, the tier-3 one from both of them.
    regenerated = {n: text for n, (text, _, _) in reference[0].items() if n in archives}
    assert sorted(regenerated) == archives
    members = {(h, t) for h, r, t in reference[1] if h in archives and r == "summary"}
    assert {t for _, t in members} == {"sum-s-a-0-6", "sum-s-a-6-12", *archives[:2]}
    for name, text in regenerated.items():
        assert not [c for c in doomed if c in text], name
        assert [c for c in kept if c in text], name

    calls = len(model_server.requests)
    env = cli_env(down_home, model_server, MEMORY_WORKER_MODEL_ROUTES=DOWN)
    gone = cli(["forget", "s-b"], env)
    assert gone.returncode == 0, gone.stderr
    assert "cascade model call failed" not in gone.stderr
    assert len(model_server.requests) == calls  # no model call at all
    now, _ = _store(down_home)
    assert not [n for n in now if "s-b" in n]
    assert not [n for n in archives if n in now]  # the archives above it: dropped, owed
    assert leaks(_files(down_home), doomed) == []
    assert present(shelf_files(down_home / "lite"), kept) == set(kept)
    verified = cli(["verify-forgetting"], env)
    assert verified.returncode == 0, verified.stdout + verified.stderr

    # A run while the model is still down owes them still, and says so (not "at rest").
    still = cli(["run", "--once"], env)
    assert not [n for n in _store(down_home)[0] if n in archives]
    assert still.returncode == 1, still.stderr
    assert "3 archive(s) dropped by forget are owed a regeneration" in still.stderr
    # The forgotten session's entries are gone on purpose: the start-up check does not take
    # that for a wiped store ("logged again").
    assert "logged again" not in still.stderr, still.stderr

    # The model is back: the next run regenerates what forget dropped, as a forget with the
    # model would have left it.
    back = cli(["run", "--once"], cli_env(down_home, model_server))
    assert back.returncode == 0, back.stderr
    assert _store(down_home) == reference
    # Nothing failing is left behind: the retract that failed while the model was down is done.
    runtime = runtime_for(down_home, model_server, monkeypatch)
    with runtime.state.read() as repos:
        assert [(f.task, f.session_id) for f in repos.failures.list()] == []
    runtime.close()
    assert leaks(_files(down_home), doomed) == []
    verified = cli(["verify-forgetting"], cli_env(down_home, model_server))
    assert verified.returncode == 0, verified.stdout + verified.stderr


def test_the_daemon_reconcile_regenerates_what_forget_owes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, model_server: ModelServer
) -> None:
    """The distributed mode's path: the reconcile owes a ``retract`` job for the forgotten
    session, which regenerates the archives (and a retry while the model fails keeps them
    owed)."""
    model_server.responder = canary_reply
    _, b = _homes((tmp_path,), model_server, monkeypatch)
    archives = sorted(n for n in _store(tmp_path)[0] if n.startswith(("sum2-", "sum3-")))
    gone = cli(["forget", "s-b"], cli_env(tmp_path, model_server, MEMORY_WORKER_MODEL_ROUTES=DOWN))
    assert gone.returncode == 0, gone.stderr
    assert not [n for n in _store(tmp_path)[0] if n in archives]

    runtime = runtime_for(tmp_path, model_server, monkeypatch)
    owed = [(o.job, o.session_id, o.why) for o in owed_work(runtime, "default")]
    assert owed == [("retract", "s-b", "owed archives")]
    process(runtime)
    assert owed_work(runtime, "default") == []
    runtime.close()
    now = _store(tmp_path)[0]
    assert sorted(n for n in now if n in archives) == archives
    assert leaks(_files(tmp_path), list(b.canaries.values())) == []
