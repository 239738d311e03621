"""The console over the other store transports: the same home read through the hypatia-lite CLI
(`cli`) and its MCP server (`mcp`) as subprocesses shows the same session, derived memory, entry
text and search hits as in process, and verify-forgetting runs from the page (HTTP only: the
browser tests cover the pages themselves).

The console and its store adapter's hypatia-lite run through the fork servers' launchers
(``cli_fork``): the console, every store call and the MCP server are separate processes on real
pipes (the console is stopped with SIGTERM, which its launcher forwards), forked from parents
that imported the runtime, hypatia-lite and the MCP library once (``test_console_command`` runs
the installed console script)."""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

import pytest
from canary_support import canary_reply
from cli_fork import launcher
from console_support import Home, build_home, http, running_console
from model_server import ModelServer

pytestmark = pytest.mark.integration  # a real subprocess or server


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Home]:
    server = ModelServer(canary_reply).start()
    try:
        yield build_home(tmp_path_factory.mktemp("console-transports"), server, None)
    finally:
        server.stop()


def _pages(home: Home, transport: str) -> dict[str, str]:
    env = dict(home.env)
    if transport != "lite":
        env.update(
            {
                "MEMORY_WORKER_STORE_TRANSPORT": transport,
                "MEMORY_WORKER_STORE_BINARY": launcher("hypatia-lite"),
                "HYPATIA_LITE_HOME": str(Path(env["MEMORY_WORKER_LITE_HOME"])),
            }
        )
    word = home.beta.canary("1", "ASK")
    with running_console(env, command=launcher("memory-worker")) as console:
        port = console.base.rsplit(":", 1)[1]
        cookie = {
            "Cookie": f"memory_console_{port}={console.token}; memory_console_csrf_{port}=c5rf"
        }
        found = {}
        for name, path in (
            ("session", "/session?id=s-alpha"),
            ("entry", "/entry?name=msg-s-alpha-0"),
            ("search", "/search?q=" + urllib.parse.quote(f'"{word}"')),
        ):
            status, body = http(console.base + path, headers=cookie)
            assert status == 200, (transport, name, body)
            found[name] = body
        status, body = http(
            console.base + "/verify",
            method="POST",
            data=b"csrf=c5rf",
            headers={**cookie, "Origin": console.base},
        )
        assert status == 200, body
        found["verify"] = body
    return found


@pytest.fixture(scope="module")
def lite(home: Home) -> dict[str, str]:
    return _pages(home, "lite")


def _derived(page: str) -> list[str]:
    section = page.split('<div id="derived">')[1].split("<h2>Bookkeeping</h2>")[0]
    return re.findall(r'href="/entry\?name=([^"]+)"', section)


def _texts(page: str) -> list[str]:
    """The text of each summary, archive and work unit on a session page."""
    section = page.split('<div id="derived">')[1].split("<h2>Bookkeeping</h2>")[0]
    return re.findall(r'<div class="memtext">(.*?)</div>', section, re.S)


@pytest.mark.parametrize("transport", ["cli", pytest.param("mcp", marks=pytest.mark.integration)])
def test_other_transports_show_the_same_memory(
    home: Home, lite: dict[str, str], transport: str
) -> None:
    other = _pages(home, transport)
    assert _derived(other["session"]) == _derived(lite["session"])
    assert len(_derived(lite["session"])) >= 3  # summaries, an archive, work units
    assert _texts(other["session"]) == _texts(lite["session"])
    assert home.alpha.canary("1", "ASK") in _texts(lite["session"])[0]
    text = other["entry"].split('id="entry-text">')[1].split("</div>")[0]
    assert text == lite["entry"].split('id="entry-text">')[1].split("</div>")[0]
    assert home.alpha.canary("1", "ASK") in text
    assert "msg-s-beta-0" in other["search"] and 'href="/session?id=s-beta"' in other["search"]
    assert re.search(r'id="verdict" class="good">0 leaks in 4 withdrawn messages', other["verify"])
