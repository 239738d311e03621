"""One commit for one fact: a finished consolidation advances ``last_consolidated_seq`` and
settles its reconsolidation request in the same state transaction, so no reader can see the
watermark moved while the request still says ``queued`` (what made
``tests/e2e/test_daemon_reconcile_lost_hints.py`` flaky on a loaded machine). Every statement the
state engine runs is recorded with the transaction it ran in."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from model_server import ModelServer, model_server_fixture  # noqa: F401
from sqlalchemy import event
from test_consolidate_pipeline import process, progress, runtime_for
from worker_dshgen import SessionLogWriter

from dsh_memory_worker.worker.jobs.guard import run_job
from dsh_memory_worker.worker.jobs.reconsolidate import request_reconsolidation

pytestmark = pytest.mark.integration


class Transactions:
    """The statements of every committed transaction on an engine, in commit order."""

    def __init__(self, engine: Any) -> None:
        self.open: dict[int, list[str]] = defaultdict(list)
        self.committed: list[list[str]] = []
        event.listen(engine, "after_cursor_execute", self._statement)
        event.listen(engine, "commit", self._commit)
        event.listen(engine, "rollback", self._rollback)

    def _statement(
        self, conn: Any, _cursor: Any, statement: str, _params: Any, context: Any, _many: bool
    ) -> None:
        text = " ".join(statement.split()).upper()
        compiled = getattr(context, "compiled_parameters", None)
        values = compiled[0] if compiled else {}
        if text.startswith("INSERT INTO AUDIT") and values.get("action") == "reconsolidate":
            self.open[id(conn)].append(f"request {values.get('outcome')}")
        elif text.startswith("UPDATE PROGRESS") and any(
            key.startswith("v_last_consolidated") for key in values
        ):
            self.open[id(conn)].append("advance last_consolidated_seq")

    def _commit(self, conn: Any) -> None:
        done = self.open.pop(id(conn), [])
        if done:
            self.committed.append(done)

    def _rollback(self, conn: Any) -> None:
        self.open.pop(id(conn), None)


def test_watermark_and_request_settle_in_one_transaction(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, model_server: ModelServer
) -> None:
    model_server.echo = True
    runtime = runtime_for(
        tmp_path,
        monkeypatch,
        model_server,
        force_idle=False,
        check_every_turns=50,
        min_new_tokens=100_000,
    )
    log = SessionLogWriter(tmp_path / "dsh", "s-one", "/home/dev/one-commit")
    log.turn("which port", "8443")
    log.turn("and the health check", "GET /healthz")
    log.flush()
    process(runtime)
    end = log.seq
    assert progress(runtime, "s-one").last_consolidated_seq == 0
    assert request_reconsolidation(runtime, "s-one", "default").queued

    seen = Transactions(runtime.state.engine)
    assert run_job(runtime, "consolidate", "s-one", "default").status == "done"
    assert seen.committed == [["advance last_consolidated_seq", "request done"]]
    assert progress(runtime, "s-one").last_consolidated_seq == end
    with runtime.state.read() as repos:
        audit = repos.audit.entries(session_id="s-one", action="reconsolidate")
    assert [(a.outcome, a.subject) for a in audit] == [("queued", f"0-{end}"), ("done", f"0-{end}")]
    runtime.close()
