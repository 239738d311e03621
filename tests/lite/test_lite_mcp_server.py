"""``hypatia-lite mcp`` over stdio with the real MCP client SDK, plus raw JSON-RPC lines.

The SDK sessions and the CLI cross-checks start hypatia-lite through the fork server's launcher
(``cli_fork``: a separate process on the client's stdio pipes, forked from a parent that imported
the MCP library once); the raw-lines test runs the installed console script as a fresh process,
so the ``hypatia-lite mcp`` entry point stays covered."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from lite_cli import lite_env, lite_json, lite_mcp
from mcp.client.session import ClientSession
from mcp.shared.exceptions import MCPError

BIN = Path(sys.executable).parent / "hypatia-lite"
REQUIRED = {"knowledge_get", "knowledge_create", "statement_create", "search", "similar", "query"}
pytestmark = pytest.mark.integration


def _with_session(home: Path, body: Callable[[ClientSession], Awaitable[None]]) -> None:
    async def main() -> None:
        async with lite_mcp(home) as session:
            with anyio.fail_after(30):
                await session.initialize()
                await body(session)

    anyio.run(main)


async def _ok(session: ClientSession, tool: str, **args: Any) -> Any:
    result = await session.call_tool(tool, args)
    assert not result.is_error, result.content
    assert json.loads(result.content[0].text) == result.structured_content  # type: ignore[union-attr]
    return result.structured_content


async def _err(session: ClientSession, tool: str, **args: Any) -> str:
    result = await session.call_tool(tool, args)
    assert result.is_error
    assert result.structured_content is None
    assert len(result.content) == 1
    return result.content[0].text  # type: ignore[union-attr]


def test_tool_list_and_schemas(tmp_path: Path) -> None:
    async def body(session: ClientSession) -> None:
        tools = {t.name: t.input_schema for t in (await session.list_tools()).tools}
        assert set(tools) >= REQUIRED
        assert {"knowledge_update", "knowledge_delete", "statement_delete", "list_shelves"} <= set(
            tools
        )
        for name, schema in tools.items():
            assert schema["type"] == "object"
            assert schema["additionalProperties"] is False
            assert ("shelf" in schema["properties"]) is (name != "list_shelves")
        assert "embed" in tools["knowledge_create"]["properties"]
        assert "embed" in tools["statement_create"]["properties"]
        assert "exclude_tags" in tools["similar"]["properties"]
        assert tools["knowledge_get"]["required"] == ["name"]
        assert tools["statement_create"]["required"] == ["head", "relation", "tail"]
        assert tools["query"]["required"] == ["jse"]

    _with_session(tmp_path / "home", body)


def test_tool_results_and_error_texts(tmp_path: Path) -> None:
    home = tmp_path / "home"
    big = "memory line é\n" * 13_000  # ~180 kB

    async def body(s: ClientSession) -> None:
        made = await _ok(
            s,
            "knowledge_create",
            name="msg-m-1",
            shelf="default",
            data=big,
            tags=["message", "summary 1"],
            scopes=["proj", ""],
        )
        assert made["name"] == "msg-m-1"
        assert made["created"] is True
        assert made["embedding"]["pending_knowledge"] == 0
        assert await _err(s, "knowledge_create", name="msg-m-1", data="x") == (
            "knowledge 'msg-m-1' already exists; use knowledge_update to change it"
        )
        got = await _ok(s, "knowledge_get", name="msg-m-1", shelf="default")
        assert set(got) == {"name", "content", "created_at"}
        assert got["content"] == {
            "format": "markdown",
            "data": big,
            "tags": ["message", "summary 1"],
            "synonyms": None,
            "figures": None,
            "scopes": ["proj", ""],
        }
        assert await _err(s, "knowledge_get", name="nope") == "not found: knowledge 'nope'"
        await _ok(
            s,
            "knowledge_create",
            name="quiet",
            data="zebra stripes",
            embed=False,
            tags=[" work ", ""],
        )
        assert (await _ok(s, "knowledge_get", name="quiet"))["content"]["tags"] == ["work"]

        first = await _ok(
            s,
            "statement_create",
            head="sum-1",
            relation="summary",
            tail="msg-m-1",
            shelf="default",
            data="edge",
            scopes=["proj"],
        )
        assert {k: first[k] for k in ("head", "relation", "tail", "created")} == {
            "head": "sum-1",
            "relation": "summary",
            "tail": "msg-m-1",
            "created": True,
        }
        again = await _ok(s, "statement_create", head="sum-1", relation="summary", tail="msg-m-1")
        assert again["created"] is False

        assert await _err(s, "query", jse='["$knowledge"]', shelf="nope") == (
            "shelf error: shelf 'nope' is not connected"
        )
        assert (await _err(s, "query", jse="{oops")).startswith("invalid JSE JSON: ")
        assert (await _err(s, "query", jse=["$not-summaried", "message", {"limit": 1}])).startswith(
            "JSE evaluation error: unexpected node in condition context"
        )
        assert (await _err(s, "knowledge_get", name="x", bogus=1)).startswith(
            "invalid arguments: unknown field `bogus`"
        )
        assert (
            await _err(
                s,
                "statement_create",
                head="a",
                relation="b",
                tail="c",
                synonyms={"head": "not a list"},
            )
        ).startswith("invalid arguments: invalid type for `synonyms`")
        assert await _err(s, "search", query="x", limit=0) == "limit must be at least 1, got 0"
        assert await _err(s, "search", query="x", offset=-1) == (
            "offset must not be negative, got -1"
        )
        assert await _err(s, "knowledge_update", name="quiet") == (
            "nothing to update: pass at least one of data, tags, synonyms, figures, scopes"
        )
        updated = await _ok(s, "knowledge_update", name="quiet", data="zebra herd")
        assert (updated["name"], updated["changed"]) == ("quiet", True)
        assert (await _ok(s, "knowledge_update", name="quiet", data="zebra herd"))[
            "changed"
        ] is False
        assert await _err(s, "knowledge_update", name="nope", data="x") == (
            "not found: knowledge 'nope'"
        )
        assert await _err(s, "statement_delete", head="a, b", relation="r", tail="c") == (
            "not found: statement '\"a, b\",r,c'"
        )
        with pytest.raises(MCPError, match="unknown tool: nope"):
            await s.call_tool("nope", {})

        query = {"$knowledge": [["$like", "name", "%"]], "limit": 5}
        rows = await _ok(s, "query", jse=json.dumps(query), shelf="default")
        assert rows["total_count"] == 2
        assert rows["rows"] == lite_json(home, "query", json.dumps(query), "--shelf", "default")
        assert (await _ok(s, "query", jse=query))["rows"] == rows["rows"]
        nsum = await _ok(s, "query", jse='["$not-summaried", "message"]')
        assert nsum == {"rows": [], "total_count": 0}
        found = await _ok(s, "search", query="zebra", catalog="knowledge", limit=5, shelf="default")
        assert found["rows"] == lite_json(
            home, "search", "zebra", "-c", "knowledge", "--limit", "5"
        )
        assert [r["key"] for r in found["rows"]] == ["quiet"]
        assert (await _ok(s, "search", query="unicorn"))["rows"] == []
        similar = await _ok(
            s,
            "similar",
            query="memory line",
            target="knowledge",
            limit=5,
            exclude_tags=["summary 1"],
        )
        assert similar["rows"] == []  # msg-m-1 excluded, "quiet" has no vector
        similar = await _ok(s, "similar", query="memory line", target="knowledge", limit=5)
        assert [r["name"] for r in similar["rows"]] == ["msg-m-1"]
        assert similar["total_count"] == 1
        assert set(similar["embedding"]) == {
            "pending_knowledge",
            "pending_statement",
            "passed_over",
            "pending_since",
            "blocked",
            "paused",
        }
        deleted = await _ok(s, "statement_delete", head="sum-1", relation="summary", tail="msg-m-1")
        assert deleted == {
            "head": "sum-1",
            "relation": "summary",
            "tail": "msg-m-1",
            "deleted": True,
        }
        assert await _ok(s, "knowledge_delete", name="quiet") == {"name": "quiet", "deleted": True}
        assert await _err(s, "knowledge_delete", name="quiet") == "not found: knowledge 'quiet'"
        shelves = await _ok(s, "list_shelves")
        assert shelves == {
            "shelves": [{"name": "default", "path": str(home / "default"), "connected": True}]
        }

    _with_session(home, body)


def test_raw_lines_parse_errors_surrogates_and_no_model(tmp_path: Path) -> None:
    home = tmp_path / "home"
    lines = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "dsh-hypatia-auto-memory", "version": "0"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        "this is not json",
        "",
        [{"jsonrpc": "2.0", "id": 9, "method": "ping"}],
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "knowledge_create", "arguments": {"name": "s\\ud800", "data": "x"}},
        },
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {"name": "similar", "arguments": {"query": "x"}},
        },
        {"jsonrpc": "2.0", "id": 4, "method": "ping"},
    ]
    text = "\n".join(line if isinstance(line, str) else json.dumps(line) for line in lines)
    text = text.replace("\\\\ud800", "\\ud800") + "\n"
    done = subprocess.run(
        [str(BIN), "mcp"],  # the installed console script, a fresh process
        input=text,
        capture_output=True,
        text=True,
        env=lite_env(home, HYPATIA_LITE_EMBEDDER="none"),
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    replies = [json.loads(line) for line in done.stdout.splitlines()]
    by_id = {r.get("id"): r for r in replies if r.get("id") is not None}
    errors = [r["error"] for r in replies if r.get("id") is None]
    assert by_id[1]["result"]["protocolVersion"] == "2025-06-18"
    assert [e["code"] for e in errors] == [-32700, -32600]
    assert errors[0]["message"].startswith("parse error: ")
    assert errors[1]["message"] == "batched requests are not supported"
    assert by_id[2]["result"]["structuredContent"]["name"] == "s\ufffd"
    assert by_id[3]["result"]["isError"] is True
    assert by_id[3]["result"]["content"][0]["text"] == (
        "model unavailable: no embedding provider configured"
    )
    assert by_id[4]["result"] == {}
    got = lite_json(home, "knowledge-get", "s\ufffd")
    assert got["name"] == "s\ufffd"
