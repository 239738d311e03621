"""Shared by the console tests: a home with withdrawals (before and after they were written), a
redacted secret, consolidation by the scripted model and hostile text; the console as a real
subprocess on a free port; headless Chromium through Playwright (the system's browser)."""

from __future__ import annotations

import queue
import string
import subprocess
import tempfile
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from canary_support import BIN, CanarySession, cli_env, runtime_for
from model_server import ModelServer
from pipeline_support import process
from redaction_cases import tok

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
HOSTILE_ID = 's-"><img src=x onerror=window.pwned=1>'
HOSTILE_CWD = '/home/dev/"><img src=x onerror=window.pwned=2>'
HOSTILE_TEXT = '<script>window.pwned=3</script> and "><img src=x onerror=window.pwned=4>'
SECRET = "AKIA" + tok(16, "console", string.ascii_uppercase + "234567")


@dataclass
class Home:
    root: Path
    server: ModelServer
    env: dict[str, str]
    alpha: CanarySession
    beta: CanarySession
    #: alpha's canaries withdrawn after they were written / before
    retracted: list[str] = field(default_factory=list)
    never_written: list[str] = field(default_factory=list)
    written_marker: int = 0


def build_home(root: Path, server: ModelServer, state_url: str | None) -> Home:
    """Three sessions: ``s-alpha`` (two turns written and consolidated, then the second one
    withdrawn; a third turn withdrawn before it was written; a secret in a kept message),
    ``s-beta`` (one consolidated turn) and a session with a hostile id, cwd and message."""
    extra = {"state_url": state_url} if state_url else {}
    with pytest.MonkeyPatch.context() as patch:
        alpha = CanarySession.start(root, "s-alpha")
        beta = CanarySession.start(root, "s-beta")
        alpha.turn("1")
        second = alpha.turn("2")
        seqs = beta.turn("1")
        beta.log.title("Fixing the flaky deploy", seqs.user_seq)
        beta.log.flush()
        broken = CanarySession.start(root, "s-broken")
        with broken.log.path.open("ab") as log:  # a corrupt line where an event should be
            log.write(b'{"type":"user/message","seq":0,"data":\xff\xfe{{{\n')
        hostile = CanarySession.start(root, HOSTILE_ID, cwd=HOSTILE_CWD)
        hostile.log.turn(HOSTILE_TEXT, "a reply about " + HOSTILE_TEXT)
        hostile.log.flush()
        runtime = runtime_for(root, server, patch, **extra)
        process(runtime)
        runtime.close()
        # Withdrawn after it was written (a retraction with a time) ...
        marker, retracted = alpha.rewind(second.user_seq)
        alpha.log.turn(f"my aws key id is {SECRET} keep it", "noted, never repeat it")
        alpha.log.flush()
        runtime = runtime_for(root, server, patch, **extra)
        process(runtime)
        runtime.close()
        # ... and withdrawn before it was ever written.
        third = alpha.turn("3")
        _, never = alpha.rewind(third.user_seq)
        runtime = runtime_for(root, server, patch, **extra)
        process(runtime)
        runtime.close()
    env = cli_env(root, server, **({"MEMORY_WORKER_STATE_URL": state_url} if state_url else {}))
    return Home(root, server, env, alpha, beta, retracted, never, marker)


@dataclass
class RunningConsole:
    process: subprocess.Popen[str]
    url: str

    @property
    def base(self) -> str:
        return self.url.split("/?token=")[0]

    @property
    def token(self) -> str:
        return self.url.split("token=")[1]


@contextmanager
def running_console(
    env: dict[str, str], *args: str, command: str | None = None
) -> Iterator[RunningConsole]:
    """``memory-worker console --port 0`` as a subprocess; yields once it printed its URL.
    ``command``: what to run as ``memory-worker`` (``cli_fork.launcher("memory-worker")``)."""
    proc = subprocess.Popen(
        [command or str(BIN / "memory-worker"), "console", "--port", "0", *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: queue.Queue[str] = queue.Queue()

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line)

    threading.Thread(target=pump, daemon=True).start()
    try:
        try:
            first = lines.get(timeout=60)
        except queue.Empty:
            proc.kill()
            raise AssertionError("the console printed no URL: " + proc.communicate()[1]) from None
        url = first.split(": ", 1)[1].strip()
        yield RunningConsole(proc, url)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def http(
    url: str,
    *,
    method: str = "GET",
    data: bytes | None = None,
    headers: dict[str, str] | None = None,
) -> tuple[int, str]:
    """Status and body of one request (no redirect followed)."""

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: Any, **kwargs: Any) -> None:
            return None

    opener = urllib.request.build_opener(NoRedirect)
    request = urllib.request.Request(url, data=data, method=method, headers=headers or {})
    try:
        with opener.open(request, timeout=60) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


@contextmanager
def chromium() -> Iterator[Any]:
    """A Playwright browser context on Debian's Chromium, with a fresh user-data directory."""
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as profile, sync_playwright() as driver:
        context = driver.chromium.launch_persistent_context(
            profile,
            executable_path=CHROMIUM,
            headless=True,
            args=CHROMIUM_ARGS,
            viewport={"width": 1200, "height": 800},
        )
        try:
            yield context
        finally:
            context.close()
