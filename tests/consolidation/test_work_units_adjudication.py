"""Work units written by the worker: content-addressed names, ``is_a`` / ``derivedFrom``, candidates
from ``similar`` without operational rows and within the distance ceiling, one adjudication call,
and verdicts mapped to edges (``duplicate`` stores nothing; ``contradicts`` keeps both with
``supersedes``)."""

from __future__ import annotations

import datetime as dt
import json
import re
from pathlib import Path
from typing import Any

import pytest
from model_server import ModelServer, Reply, model_server_fixture  # noqa: F401

from dsh_memory_worker.memory.consolidation.extraction import WorkUnit
from dsh_memory_worker.memory.llm import ModelClient, ModelRoute
from dsh_memory_worker.worker.jobs.work_units import WorkUnitOptions, store_work_unit
from hypatia_lite.store import LiteStore

pytestmark = pytest.mark.integration

DAY = dt.date(2026, 3, 4)
UNIT = WorkUnit(
    title="Use Arc<Mutex<T>> for shared state",
    classification="design-decision",
    content="## Context\nThreads share a cache.\n## Solution\nWrap it in Arc<Mutex<T>>.",
    tags=("Rust", "concurrency"),
)
EXISTING_TEXT = (
    "Use Arc<Mutex<T>> for shared state\n## Context\nThreads share a cache.\n"
    "## Solution\nWrap the cache in Arc<Mutex<T>>."
)


def client(server: ModelServer) -> ModelClient:
    return ModelClient(
        [ModelRoute(server.base_url, "judge", "K")], env={"K": "sk-test"}, retry_wait_s=0
    )


def write(
    store: LiteStore,
    server: ModelServer,
    unit: WorkUnit = UNIT,
    summary: str = "sum-s1-0-10",
    **options: Any,
) -> Any:
    return store_work_unit(
        store,
        client(server),
        unit,
        summary_name=summary,
        project="demo",
        attempt=0,
        recorded=DAY,
        options=WorkUnitOptions(**options),
    )


def edges_of(store: LiteStore, head: str) -> set[tuple[str, str]]:
    return {(r["relation"], r["tail"]) for r in store.dump()["statements"] if r["head"] == head}


@pytest.fixture
def store(tmp_path: Path) -> Any:
    with LiteStore("default", home=tmp_path / "lite") as opened:
        yield opened


def test_nothing_near_stores_an_unrelated_unit(store: LiteStore, model_server: ModelServer) -> None:
    outcome = write(store, model_server)
    assert re.fullmatch(r"wu-use-arc-mutex-t-for-shared-state-[0-9a-f]{8}", outcome.name)
    assert (outcome.verdict, outcome.stored) == ("unrelated", True)
    entry = store.knowledge_get(outcome.name)
    assert entry is not None
    assert entry.content.data == (
        f"{UNIT.content}\n\n_Classification: design-decision_\n\n_Recorded: 2026-03-04_"
    )
    assert list(entry.content.tags or ()) == ["memory", "work-unit", "rust", "concurrency"]
    assert list(entry.content.scopes or ()) == ["demo"]
    assert edges_of(store, outcome.name) == {("is_a", "work-unit"), ("derivedFrom", "sum-s1-0-10")}
    assert model_server.requests == []  # no candidate, no judge


def test_operational_rows_are_never_candidates(store: LiteStore, model_server: ModelServer) -> None:
    store.knowledge_create(
        "sum-s0-0-5", EXISTING_TEXT, tags=["summary", "summary 1"], scopes=["demo"]
    )
    store.knowledge_create("msg-s0-0", EXISTING_TEXT, tags=["message"], scopes=["demo"])
    outcome = write(store, model_server)
    assert outcome.verdict == "unrelated"
    assert model_server.requests == []


@pytest.mark.parametrize(
    ("verdict", "relation"),
    [
        ("refines", "refines"),
        ("extends", "extends"),
        ("supersedes", "supersedes"),
        ("contradicts", "supersedes"),
        ("unrelated", None),
    ],
)
def test_verdicts_map_to_edges(
    store: LiteStore, model_server: ModelServer, verdict: str, relation: str | None
) -> None:
    store.knowledge_create(
        "wu-old-lesson-00000000", EXISTING_TEXT, tags=["memory", "work-unit"], scopes=["demo"]
    )
    model_server.push(
        Reply(content=json.dumps({"verdict": verdict, "target": "wu-old-lesson-00000000"}))
    )
    outcome = write(store, model_server)
    (request,) = model_server.requests
    assert "1. wu-old-lesson-00000000" in request.user_text
    assert request.json["max_tokens"] == 1024 + 4000
    expected = {("is_a", "work-unit"), ("derivedFrom", "sum-s1-0-10")}
    if relation is not None:
        expected.add((relation, "wu-old-lesson-00000000"))
    assert (outcome.verdict, outcome.stored) == (verdict, True)
    assert edges_of(store, outcome.name) == expected
    assert store.knowledge_get("wu-old-lesson-00000000") is not None  # both kept


def test_duplicate_stores_nothing(store: LiteStore, model_server: ModelServer) -> None:
    store.knowledge_create(
        "wu-old-lesson-00000000", EXISTING_TEXT, tags=["memory", "work-unit"], scopes=["demo"]
    )
    model_server.push(Reply(content='{"verdict": "duplicate", "target": ""}'))
    outcome = write(store, model_server)
    assert (outcome.verdict, outcome.stored) == ("duplicate", False)
    assert store.knowledge_get(outcome.name) is None
    assert edges_of(store, outcome.name) == set()


def test_candidates_beyond_the_distance_ceiling_are_not_judged(
    store: LiteStore, model_server: ModelServer
) -> None:
    store.knowledge_create(
        "wu-far-00000000",
        "Bake sourdough bread at 230 degrees",
        tags=["memory", "work-unit"],
        scopes=["demo"],
    )
    rows = store.similar(f"{UNIT.title}\n{UNIT.content}", limit=5)
    assert [(r.key, r.distance > 0.45) for r in rows] == [("wu-far-00000000", True)]
    outcome = write(store, model_server)
    assert outcome.verdict == "unrelated"
    assert model_server.requests == []


def test_a_failed_judgement_stores_the_unit_as_unrelated(
    store: LiteStore, model_server: ModelServer
) -> None:
    store.knowledge_create(
        "wu-old-lesson-00000000", EXISTING_TEXT, tags=["memory", "work-unit"], scopes=["demo"]
    )
    model_server.push(Reply(content="not json at all"))
    outcome = write(store, model_server)
    assert (outcome.verdict, outcome.stored) == ("unrelated", True)
    assert edges_of(store, outcome.name) == {("is_a", "work-unit"), ("derivedFrom", "sum-s1-0-10")}


def test_the_same_lesson_again_only_gains_a_derived_from_edge(
    store: LiteStore, model_server: ModelServer
) -> None:
    first = write(store, model_server)
    again = write(store, model_server, summary="sum-s2-0-8")
    assert again.name == first.name
    assert (again.verdict, again.stored) == ("existing", False)
    assert model_server.requests == []
    assert edges_of(store, first.name) == {
        ("is_a", "work-unit"),
        ("derivedFrom", "sum-s1-0-10"),
        ("derivedFrom", "sum-s2-0-8"),
    }


def test_adjudication_off_stores_without_lookup_or_call(
    store: LiteStore, model_server: ModelServer
) -> None:
    store.knowledge_create(
        "wu-old-lesson-00000000", EXISTING_TEXT, tags=["memory", "work-unit"], scopes=["demo"]
    )
    outcome = write(store, model_server, adjudicate=False)
    assert (outcome.verdict, outcome.stored) == ("unrelated", True)
    assert model_server.requests == []
    assert edges_of(store, outcome.name) == {("is_a", "work-unit"), ("derivedFrom", "sum-s1-0-10")}
