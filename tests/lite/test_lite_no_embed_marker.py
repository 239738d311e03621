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
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from cli_fork import launcher
from lite_pg_support import pg_home
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

pytestmark = pytest.mark.integration


@pytest.fixture(params=["sqlite", "postgresql"])
def shelf(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Path, str]]:
    home = tmp_path / "home"
    if request.param == "sqlite":
        yield home, "default"
        return
    with pg_home(home, "pg"):
        yield home, "pg"


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HYPATIA_LITE_")}
    return {**env, "HYPATIA_LITE_HOME": str(home)}


def _run(home: Path, *argv: str) -> str:
    done = subprocess.run(
        [launcher("hypatia-lite"), *argv],
        capture_output=True,
        text=True,
        env=_env(home),
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def _cli(home: Path, *argv: str) -> Any:
    return json.loads(_run(home, *argv))


def _content(row: dict[str, Any]) -> dict[str, Any]:
    content = row["content"]
    return json.loads(content) if isinstance(content, str) else content


def test_cli_shows_the_marker_only_for_no_embed_writes(shelf: tuple[Path, str]) -> None:
    home, name = shelf
    _run(home, "knowledge-create", "quiet", "--data=zebra quiet", "--no-embed", "-s", name)
    _run(home, "knowledge-create", "loud", "--data=zebra loud", "-s", name)
    _run(
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
    _run(home, "statement-create", "loud", "relatesTo", "quiet", "--data=zebra link", "-s", name)

    got = _cli(home, "knowledge-get", "quiet", "-s", name)
    assert _content(got)["embed"] is False
    assert "embed" not in _content(_cli(home, "knowledge-get", "loud", "-s", name))

    rows = _cli(home, "query", '["$knowledge", ["$like", "name", "%"]]', "-s", name)
    assert {r["name"]: _content(r).get("embed") for r in rows} == {"quiet": False, "loud": None}
    edges = _cli(home, "query", '["$statement", ["$like", "head", "%"]]', "-s", name)
    assert {r["relation"]: _content(r).get("embed") for r in edges} == {
        "belongTo": False,
        "relatesTo": None,
    }

    hits = _cli(home, "search", "zebra", "-s", name)
    assert {r["key"]: _content(r).get("embed") for r in hits} == {
        "quiet": False,
        "loud": None,
        "quiet,belongTo,loud": False,
        "loud,relatesTo,quiet": None,
    }

    _run(home, "knowledge-update", "quiet", "--data=zebra quieter", "-s", name)
    after = _content(_cli(home, "knowledge-get", "quiet", "-s", name))
    assert (after["data"], after["embed"]) == ("zebra quieter", False)


def test_mcp_shows_the_marker_only_for_no_embed_writes(shelf: tuple[Path, str]) -> None:
    home, name = shelf
    seen: dict[str, Any] = {}

    async def main() -> None:
        params = StdioServerParameters(
            command=launcher("hypatia-lite"), args=["mcp"], env=_env(home), cwd=str(home.parent)
        )
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
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
