"""The newest reference client's check: an entry or statement written with ``--no-embed`` (MCP
``embed: false``) shows ``"embed": false`` in its content on ``knowledge-get``, ``query`` and
``search`` — and only then: an embedded write shows no ``embed`` field. Over the CLI and MCP, on
a SQLite and a PostgreSQL shelf; the marker survives ``knowledge-update``.

hypatia-lite runs through the fork server's launcher (``cli_fork``): each command and the MCP
server are separate processes on real pipes, forked from a parent that imported hypatia-lite and
the MCP library once (the installed console script is covered by ``test_lite_cli_contract`` and
``test_lite_mcp_server``)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from lite_cli import lite_json, lite_mcp, run_lite
from lite_pg_support import pg_home

pytestmark = pytest.mark.integration


@pytest.fixture(params=["sqlite", "postgresql"])
def shelf(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Path, str]]:
    home = tmp_path / "home"
    if request.param == "sqlite":
        yield home, "default"
        return
    with pg_home(home, "pg"):
        yield home, "pg"


def _content(row: dict[str, Any]) -> dict[str, Any]:
    content = row["content"]
    return json.loads(content) if isinstance(content, str) else content


def test_cli_shows_the_marker_only_for_no_embed_writes(shelf: tuple[Path, str]) -> None:
    home, name = shelf
    run_lite(home, "knowledge-create", "quiet", "--data=zebra quiet", "--no-embed", "-s", name)
    run_lite(home, "knowledge-create", "loud", "--data=zebra loud", "-s", name)
    run_lite(
        home,
        "statement-create",
        "quiet",
        "belongTo",
        "loud",
        "--data=zebra edge",
        "--no-embed",
        "-s",
        name,
    )
    run_lite(
        home, "statement-create", "loud", "relatesTo", "quiet", "--data=zebra link", "-s", name
    )

    got = lite_json(home, "knowledge-get", "quiet", "-s", name)
    assert _content(got)["embed"] is False
    assert "embed" not in _content(lite_json(home, "knowledge-get", "loud", "-s", name))

    rows = lite_json(home, "query", '["$knowledge", ["$like", "name", "%"]]', "-s", name)
    assert {r["name"]: _content(r).get("embed") for r in rows} == {"quiet": False, "loud": None}
    edges = lite_json(home, "query", '["$statement", ["$like", "head", "%"]]', "-s", name)
    assert {r["relation"]: _content(r).get("embed") for r in edges} == {
        "belongTo": False,
        "relatesTo": None,
    }

    hits = lite_json(home, "search", "zebra", "-s", name)
    assert {r["key"]: _content(r).get("embed") for r in hits} == {
        "quiet": False,
        "loud": None,
        "quiet,belongTo,loud": False,
        "loud,relatesTo,quiet": None,
    }

    run_lite(home, "knowledge-update", "quiet", "--data=zebra quieter", "-s", name)
    after = _content(lite_json(home, "knowledge-get", "quiet", "-s", name))
    assert (after["data"], after["embed"]) == ("zebra quieter", False)


def test_mcp_shows_the_marker_only_for_no_embed_writes(shelf: tuple[Path, str]) -> None:
    home, name = shelf
    seen: dict[str, Any] = {}

    async def main() -> None:
        async with lite_mcp(home) as session:
            with anyio.fail_after(60):
                await session.initialize()

                async def call(tool: str, **args: Any) -> Any:
                    result = await session.call_tool(tool, {"shelf": name, **args})
                    assert not result.is_error, result.content
                    return result.structured_content

                await call("knowledge_create", name="quiet", data="zebra quiet", embed=False)
                await call("knowledge_create", name="loud", data="zebra loud")
                await call(
                    "statement_create",
                    head="quiet",
                    relation="belongTo",
                    tail="loud",
                    data="zebra edge",
                    embed=False,
                )
                seen["get"] = await call("knowledge_get", name="quiet")
                seen["loud"] = await call("knowledge_get", name="loud")
                seen["query"] = await call("query", jse='["$knowledge", ["$like", "name", "%"]]')
                seen["search"] = await call("search", query="zebra")

    anyio.run(main)
    assert _content(seen["get"])["embed"] is False
    assert "embed" not in _content(seen["loud"])
    assert {r["name"]: _content(r).get("embed") for r in seen["query"]["rows"]} == {
        "quiet": False,
        "loud": None,
    }
    assert {r["key"]: _content(r).get("embed") for r in seen["search"]["rows"]} == {
        "quiet": False,
        "loud": None,
        "quiet,belongTo,loud": False,
    }
