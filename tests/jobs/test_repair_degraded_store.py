"""Repair where the store or the configuration cannot do everything: without ``knowledge-update``
a summary is rewritten by delete + create under the same name; without a model route the
affected summaries, archives and units are removed instead of regenerated (one warning);
without ``knowledge-delete`` nothing can be removed — one warning, and each refusal is audited
as ``failed``. In every case that can delete, no withdrawn canary is left."""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path
from typing import Any, ClassVar

import pytest
from canary_support import canary_reply, consolidated_pair, dump, dump_text, process, runtime_for
from model_server import ModelServer, model_server_fixture  # noqa: F401

from dsh_memory_worker.memory.store.base import Features
from dsh_memory_worker.worker.jobs import context
from hypatia_lite.store import LiteStore

pytestmark = pytest.mark.integration


class _Limited(LiteStore):
    limits: ClassVar[dict[str, bool]] = {}

    def features(self) -> Features:
        return dataclasses.replace(super().features(), **self.limits)

    def knowledge_update(self, name: str, **fields: Any) -> bool:
        if not self.features().update:
            raise AssertionError("knowledge_update called on a store without update")
        return super().knowledge_update(name, **fields)


def _limited_runtime(
    root: Path,
    server: ModelServer,
    monkeypatch: pytest.MonkeyPatch,
    limits: dict[str, bool],
    **overrides: Any,
) -> Any:
    runtime = runtime_for(root, server, monkeypatch, **overrides)
    store_class = type("Limited", (_Limited,), {"limits": limits})
    runtime.store_factory = lambda shelf: store_class(shelf, home=root / "lite")
    return runtime


def test_without_update_summaries_are_deleted_and_created_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, model_server: ModelServer
) -> None:
    model_server.responder = canary_reply
    a, b, doomed = consolidated_pair(tmp_path, model_server, monkeypatch, ("s-d1", "s-d2"))
    runtime = _limited_runtime(tmp_path, model_server, monkeypatch, {"update": False})
    _, withdrawn = a.rewind(doomed.user_seq)
    process(runtime)
    text = dump_text(tmp_path)
    assert not [c for c in withdrawn if c in text]
    assert all(c in text for c in a.kept(withdrawn) + list(b.canaries.values()))
    rows = {r["name"]: r["content"] for r in dump(tmp_path)["knowledge"]}
    summary = next(n for n in rows if n.startswith("sum-s-d1-"))
    assert rows[summary]["data"] == "U: question CANARY-s-d1-1-ASK\nA: reply CANARY-s-d1-1-ANSWER"
    assert rows[summary]["tags"] == ["summary", "summary 1"]
    archive = next(n for n in rows if n.startswith("sum2-"))
    assert rows[archive]["tags"] == ["summary", "summary 2"]
    runtime.close()


def test_without_a_model_route_affected_summaries_are_removed(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    model_server: ModelServer,
    caplog: pytest.LogCaptureFixture,
) -> None:
    model_server.responder = canary_reply
    a, _, doomed = consolidated_pair(tmp_path, model_server, monkeypatch, ("s-d1", "s-d2"))
    calls = len(model_server.requests)
    runtime = runtime_for(tmp_path, model_server, monkeypatch, model_routes=[])
    context._warned.clear()
    _, withdrawn = a.rewind(doomed.user_seq)
    with caplog.at_level(logging.WARNING, logger="dsh_memory_worker.worker"):
        process(runtime)
    assert len(model_server.requests) == calls
    text = dump_text(tmp_path)
    assert not [c for c in withdrawn if c in text]
    names = {r["name"] for r in dump(tmp_path)["knowledge"]}
    assert not [n for n in names if n.startswith(("sum-s-d1-", "sum2-"))]
    assert [n for n in names if n.startswith("sum-s-d2-")]  # b's summary is untouched
    assert {"msg-s-d1-0", "msg-s-d1-1", "msg-s-d2-0", "msg-s-d2-1"} <= names
    warnings = [r.getMessage() for r in caplog.records if "carried withdrawn" in r.getMessage()]
    assert len(warnings) == 1 and "removed instead of regenerated" in warnings[0]
    runtime.close()


def test_without_delete_nothing_is_removed_and_the_refusal_is_audited(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    model_server: ModelServer,
    caplog: pytest.LogCaptureFixture,
) -> None:
    model_server.responder = canary_reply
    a, _, doomed = consolidated_pair(tmp_path, model_server, monkeypatch, ("s-d1", "s-d2"))
    before = dump(tmp_path)
    runtime = _limited_runtime(tmp_path, model_server, monkeypatch, {"delete": False})
    context._warned.clear()
    marker, _ = a.rewind(doomed.user_seq)
    with caplog.at_level(logging.WARNING, logger="dsh_memory_worker.worker"):
        process(runtime)
    assert {r["name"] for r in dump(tmp_path)["knowledge"]} == {
        r["name"] for r in before["knowledge"]
    }
    with runtime.state.transaction() as repos:
        audit = [
            (e.action, e.outcome, e.cause_marker_seq)
            for e in repos.audit.entries(session_id="s-d1")
            if e.action.startswith("repair")
        ]
        refused = {r.outcome for r in repos.audit.retractions(session_id="s-d1")}
    assert audit and all(row == ("repair-summary", "failed", marker) for row in audit)
    assert refused == {"failed"}
    repair_warnings = [r for r in caplog.records if "cannot be repaired" in r.getMessage()]
    assert len(repair_warnings) == 1
    runtime.close()
