"""The console redirects only to its own paths (issue 32, defect 10 / build item 11).

``GET <path>?token=<valid>`` sets the cookie and redirects to the same path without the token.
A request target whose path begins with ``//`` (or ``/%2F``, decoded to the same) was answered
``303 Location: //evil.com/``: a network-path reference, an open redirect to another site
carrying the console's good name. A backslash, which browsers read as a slash, arrives quoted
(``%5C``), a literal character of the path. The real console as a subprocess, the request
targets sent byte for byte (``http.client``, which sends the target as given)."""

from __future__ import annotations

import http.client
from collections.abc import Iterator
from urllib.parse import urljoin, urlsplit

import pytest
from console_support import RunningConsole, running_console
from pipeline_support import cli_env

pytestmark = pytest.mark.integration  # a real subprocess


def _location(base: str, target: str) -> tuple[int, str]:
    parts = urlsplit(base)
    conn = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=60)
    try:
        conn.request("GET", target)
        response = conn.getresponse()
        response.read()
        return response.status, response.getheader("Location") or ""
    finally:
        conn.close()


@pytest.fixture(scope="module")
def console(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningConsole]:
    with running_console(cli_env(tmp_path_factory.mktemp("console"))) as running:
        yield running


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("//evil.com/", "/evil.com/"),
        ("///evil.com/", "/evil.com/"),
        ("/%2F%2Fevil.com/", "/evil.com/"),
        ("/\\evil.com/", "/%5Cevil.com/"),
        ("//\\evil.com", "/%5Cevil.com"),
        ("/sessions", "/sessions"),
    ],
)
def test_the_token_redirect_stays_on_the_console(
    console: RunningConsole, path: str, expected: str
) -> None:
    status, location = _location(console.base, f"{path}?token={console.token}&page=2")
    assert status == 303
    assert location == f"{expected}?page=2"
    assert urlsplit(urljoin(console.base + "/", location)).netloc == urlsplit(console.base).netloc
