"""The log₁₆ cascade against hypatia-lite and a local chat-completions server: 9 tier-1 summaries
at batch size 3 give three tier-2 archives over three runs and then one tier-3 archive (the climb
happens within a run); an existing archive only gets its edges; a short tier archives nothing;
an unusable reply stops the run without writing; the ``cascade`` job runs per project."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from model_server import ModelServer, Reply, model_server_fixture  # noqa: F401

from dsh_memory_worker.memory.entries import archive_name
from dsh_memory_worker.memory.llm import ModelClient, ModelRoute
from dsh_memory_worker.worker.jobs.cascade import run_cascade
from hypatia_lite.store import LiteStore

pytestmark = pytest.mark.integration


def client(server: ModelServer) -> ModelClient:
    return ModelClient(
        [ModelRoute(server.base_url, "archivist", "K")], env={"K": "sk-test"}, retry_wait_s=0
    )


def archive_reply(request: Any) -> Reply:
    text = request["messages"][-1]["content"]
    tier = re.search(r"building tier (\d+)", text)
    assert tier is not None
    return Reply(
        content=json.dumps({"title": f"Tier {tier.group(1)} digest", "summary": "- merged"})
    )


@pytest.fixture
def store(tmp_path: Path) -> Any:
    with LiteStore("default", home=tmp_path / "lite") as opened:
        yield opened


def seed_tier_one(store: LiteStore, count: int, project: str = "demo") -> list[str]:
    names = [f"sum-s{i}-0-10" for i in range(count)]
    for i, name in enumerate(names):
        store.knowledge_create(
            name, f"- summary {i}", tags=["summary", "summary 1"], scopes=[project]
        )
    return names


def tier(store: LiteStore, level: int) -> dict[str, dict[str, Any]]:
    return {
        row["name"]: row["content"]
        for row in store.dump()["knowledge"]
        if f"summary {level}" in row["content"].get("tags", [])
    }


def summary_edges(store: LiteStore) -> set[tuple[str, str]]:
    return {
        (r["head"], r["tail"]) for r in store.dump()["statements"] if r["relation"] == "summary"
    }


def test_nine_summaries_at_batch_three_climb_to_tier_three_over_three_runs(
    store: LiteStore, model_server: ModelServer
) -> None:
    model_server.responder = archive_reply
    members = seed_tier_one(store, 9)
    reports = [run_cascade(store, client(model_server), "demo", batch_size=3) for _ in range(3)]

    tier_two = tier(store, 2)
    expected_two = [archive_name(2, members[i : i + 3]) for i in (0, 3, 6)]
    assert sorted(tier_two) == sorted(expected_two)
    assert all(re.fullmatch(r"sum2-[0-9a-f]{12}", name) for name in tier_two)
    first = tier_two[expected_two[0]]
    assert first["data"] == "# Tier 2 digest\n\n- merged"
    assert first["tags"] == ["summary", "summary 2"]
    assert first["scopes"] == ["demo"]
    expected_three = archive_name(3, expected_two)
    assert list(tier(store, 3)) == [expected_three]
    assert [r.created for r in reports] == [
        [expected_two[0]],
        [expected_two[1]],
        [expected_two[2], expected_three],
    ]
    assert summary_edges(store) == {
        *((expected_two[i // 3], members[i]) for i in range(9)),
        *((expected_three, name) for name in expected_two),
    }
    # Four archives, four model calls: tier 3 was built in the same run as the third tier 2.
    assert len(model_server.requests) == 4
    assert all(r.json["max_tokens"] == 2000 + 4000 for r in model_server.requests)
    # A fourth run finds nothing full to archive.
    assert run_cascade(store, client(model_server), "demo", batch_size=3).created == []
    assert len(model_server.requests) == 4


def test_an_existing_archive_only_gets_its_edges(
    store: LiteStore, model_server: ModelServer
) -> None:
    members = seed_tier_one(store, 3)
    name = archive_name(2, members)
    store.knowledge_create(
        name, "# Earlier\n\n- kept", tags=["summary", "summary 2"], scopes=["demo"]
    )
    report = run_cascade(store, client(model_server), "demo", batch_size=3)
    assert (report.created, report.linked) == ([], [name])
    assert model_server.requests == []
    assert store.knowledge_get(name).content.data == "# Earlier\n\n- kept"  # type: ignore[union-attr]
    assert summary_edges(store) == {(name, m) for m in members}


def test_short_tiers_and_other_projects_archive_nothing(
    store: LiteStore, model_server: ModelServer
) -> None:
    seed_tier_one(store, 2)
    seed_tier_one(store, 3, project="other")
    report = run_cascade(store, client(model_server), "demo", batch_size=3)
    assert report.created == [] and report.stopped == "tier 2 not full"
    assert model_server.requests == []


def test_an_unusable_reply_writes_nothing_and_stops(
    store: LiteStore, model_server: ModelServer
) -> None:
    seed_tier_one(store, 3)
    model_server.push(Reply(content="I cannot do that"))
    report = run_cascade(store, client(model_server), "demo", batch_size=3)
    assert report.created == [] and report.stopped == "nothing usable at tier 2"
    assert tier(store, 2) == {}
    assert summary_edges(store) == set()
