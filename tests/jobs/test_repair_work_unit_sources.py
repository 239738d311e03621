"""Work units under repair: a unit derived only from a repaired summary is retracted with every
statement naming it (``is_a``, ``derivedFrom``, relationship edges in both directions) and the
cleaned span yields its own unit; a unit that another, unaffected summary also derived (the same
lesson learned twice) keeps its entry and that link and only loses the repaired one."""

from __future__ import annotations

from pathlib import Path

import pytest
from canary_support import CanarySession, canary_reply, names, process, runtime_for, triples
from model_server import ModelServer, model_server_fixture  # noqa: F401

from dsh_memory_worker.worker.state.entry_ids import stable_id
from hypatia_lite.store import LiteStore

pytestmark = pytest.mark.integration


def test_units_are_retracted_or_unlinked_by_their_other_sources(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, model_server: ModelServer
) -> None:
    model_server.responder = canary_reply
    runtime = runtime_for(tmp_path, model_server, monkeypatch, cascade_enabled=False)
    a = CanarySession.start(tmp_path, "s-u1")
    b = CanarySession.start(tmp_path, "s-u2")
    a.turn("1")
    doomed = a.turn("2")
    b.turn("1")
    process(runtime)
    (summary_a,) = [n for n in names(tmp_path) if n.startswith("sum-s-u1-")]
    (summary_b,) = [n for n in names(tmp_path) if n.startswith("sum-s-u2-")]
    derived = {h: t for h, r, t in triples(tmp_path) if r == "derivedFrom"}
    unit_a = next(h for h, t in derived.items() if t == summary_a)
    unit_b = next(h for h, t in derived.items() if t == summary_b)
    with LiteStore("default", home=tmp_path / "lite") as store:
        # b's unit was also learned from a's span; a's unit refines b's.
        store.statement_create(unit_b, "derivedFrom", summary_a, scopes=["canaryproj"])
        store.statement_create(unit_a, "refines", unit_b, scopes=["canaryproj"])

    marker, _ = a.rewind(doomed.user_seq)
    process(runtime)

    left = names(tmp_path)
    edges = triples(tmp_path)
    assert unit_a not in left
    assert not [t for t in edges if unit_a in (t[0], t[2])]
    assert unit_b in left
    assert (unit_b, "derivedFrom", summary_b) in edges
    assert (unit_b, "derivedFrom", summary_a) not in edges
    assert (unit_b, "is_a", "work-unit") in edges
    fresh = {h for h, r, t in edges if r == "derivedFrom" and t == summary_a}
    assert len(fresh) == 1 and fresh.isdisjoint({unit_a, unit_b})
    with runtime.state.transaction() as repos:
        rows = [
            (e.subject, e.outcome, e.cause_marker_seq)
            for e in repos.audit.entries(session_id="s-u1")
            if e.action == "repair-work-unit"
        ]
    assert sorted(rows) == sorted(  # units by their stable ids (no model-made slug)
        [
            (stable_id(unit_a), "retracted", marker),
            (stable_id(unit_b), "unlinked", marker),
            (stable_id(next(iter(fresh))), "re-extracted", marker),
        ]
    )
    runtime.close()
