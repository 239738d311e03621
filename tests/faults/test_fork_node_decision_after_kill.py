"""A fork child whose only title is its parent's (inherited, before the cut) owes no session
node, so the node decision (``progress.has_session_node``) must not depend on whether a run got
to the watcher's hint: a ``run --once --jobs 2`` killed (``kill -9`` by the crash-points hook)
before its first store write, or a run against a store whose writes hang, then ordinary runs,
end with the state a clean run leaves — the same progress row, no ``session-<child>`` node
(issue 32; found by the convergence fuzzer)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from convergence_logs import grow
from convergence_oracle import dump, oracle
from convergence_world import Model, World
from model_server import ModelServer

pytestmark = pytest.mark.integration

FORK = "conv-fork"


@pytest.fixture(scope="module")
def server() -> Iterator[ModelServer]:
    started = ModelServer().start()
    yield started
    started.stop()


def _fork_rows(root: Path) -> tuple[tuple[object, ...], tuple[object, ...]]:
    """The fork child's session facts (cut, last title seq) and its progress row."""
    with sqlite3.connect(root / "data" / "state.db") as conn:
        session = conn.execute(
            "SELECT inherited_cut, last_title_seq, title_text FROM sessions WHERE session_id = ?",
            (FORK,),
        ).fetchone()
        progress = conn.execute(
            "SELECT last_logged_seq, last_consolidated_seq, has_session_node FROM progress "
            "WHERE shelf = 'default' AND session_id = ?",
            (FORK,),
        ).fetchone()
    return session, progress


@pytest.mark.parametrize("fault", ["killed --jobs 2", "hanging store"])
def test_a_faulty_run_leaves_the_fork_childs_node_decision_as_a_clean_run(
    server: ModelServer, tmp_path: Path, fault: str
) -> None:
    model = Model()
    server.responder = model
    logs = grow(tmp_path / "staging", 0, fixtures=False)
    live = World(tmp_path / "world", logs, model, server)
    live.reveal(0, 0.0)
    assert live.run().returncode == 0
    live.reveal_all()
    if fault == "hanging store":
        live.store_fault("hang")
        assert live.journal[-1].startswith("run --once -> 1:"), live.journal[-1]
    else:
        killed = live.run("jobs2", crash_at=1)
        assert killed.returncode == 137, killed.stderr[-2000:]
    live.settle()
    journal = "\n".join(live.journal)

    clean_store, _ = oracle(live, tmp_path / "clean")
    clean = _fork_rows(tmp_path / "clean")
    # The child's only title is the parent's, inherited before the cut at seq 52: no node.
    assert clean == ((52, 3, None), (65, 65, 0)), journal
    assert _fork_rows(live.root) == clean, journal
    names = {row["name"] for row in dump(live.root)["knowledge"]}
    assert f"session-{FORK}" not in names
    assert f"session-{FORK}" not in {row["name"] for row in clean_store["knowledge"]}
    assert "session-conv-0" in names  # the parent's own node is written
