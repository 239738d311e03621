"""The console in headless Chromium, on embedded (SQLite) and PostgreSQL state: every page over a
home with withdrawals, a redaction, consolidation and hostile text; click through a session,
search, forget a session and see verify-forgetting report 0 leaks; refusals without the token,
from another site, and without the CSRF token. One browser and one console per state database."""

from __future__ import annotations

import json
import os
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from canary_support import canary_reply
from console_support import (
    HOSTILE_CWD,
    HOSTILE_ID,
    HOSTILE_TEXT,
    SECRET,
    Home,
    RunningConsole,
    build_home,
    chromium,
    http,
    running_console,
)
from model_server import ModelServer
from pipeline_support import dump
from state_db_support import throwaway_pg_database

pytestmark = pytest.mark.integration  # a real subprocess or server

REPO = Path(__file__).resolve().parents[2]
SHOTS = REPO / "docs" / "console"


@pytest.fixture(
    scope="module", params=["sqlite", pytest.param("postgresql", marks=pytest.mark.integration)]
)
def home(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Home]:
    server = ModelServer(canary_reply).start()
    try:
        if request.param == "sqlite":
            yield build_home(tmp_path_factory.mktemp("console-sqlite"), server, None)
        else:
            with throwaway_pg_database() as url:
                yield build_home(tmp_path_factory.mktemp("console-pg"), server, url)
    finally:
        server.stop()


@pytest.fixture(scope="module")
def console(home: Home) -> Iterator[RunningConsole]:
    with running_console(home.env) as running:
        yield running


@pytest.fixture(scope="module")
def browser(console: RunningConsole) -> Iterator[Any]:
    with chromium() as context:
        page = context.new_page()
        page.on("dialog", lambda dialog: pytest.fail(f"a page ran script: {dialog.message}"))
        page.goto(console.url)  # the token, once: the cookie from here on
        yield page


def shot(page: Any, home: Home, name: str) -> None:
    """A screenshot of the page; with ``CONSOLE_SCREENSHOTS=1`` kept as docs/console/<name>.png
    (from the SQLite run), so a test run leaves the checkout unchanged otherwise."""
    image = page.screenshot()
    assert image.startswith(b"\x89PNG")
    if os.environ.get("CONSOLE_SCREENSHOTS") == "1" and "console-sqlite" in str(home.root):
        SHOTS.mkdir(parents=True, exist_ok=True)
        (SHOTS / f"{name}.png").write_bytes(image)


def no_script_ran(page: Any) -> None:
    assert page.evaluate("typeof window.pwned") == "undefined"
    assert page.locator("main img, main script").count() == 0


def test_sessions_page(browser: Any, console: RunningConsole, home: Home) -> None:
    page = browser
    page.goto(console.base + "/")
    assert page.url == console.base + "/sessions"  # the token left the address bar
    rows = page.locator("#sessions tr").all_inner_texts()
    assert [r.split("\t")[0].strip() for r in rows[1:]].count("s-alpha") == 1
    ids = page.locator("#sessions td.id a").all_inner_texts()
    assert sorted(ids) == sorted(["s-alpha", "s-beta", "s-broken", HOSTILE_ID])
    no_script_ran(page)
    beta = page.locator("#sessions tr", has_text="s-beta").inner_text().split("\t")
    assert beta[2] == "Fixing the flaky deploy" and beta[4:7] == ["0", "0", "to seq 7"]
    broken = page.locator("#sessions tr", has_text="s-broken").inner_text().split("\t")
    assert broken[5].startswith("1 session s-broken: damaged: unparsable line")
    page.select_option("select[name=project]", "canaryproj")
    page.click("button:text-is('filter')")
    assert sorted(page.locator("#sessions td.id a").all_inner_texts()) == [
        "s-alpha",
        "s-beta",
        "s-broken",
    ]
    page.fill("input[name=since]", "2001-01-01")
    page.fill("input[name=until]", "2001-01-02")
    page.click("button:text-is('filter')")
    assert page.locator("#sessions td.id a").count() == 0
    page.goto(console.base + "/sessions")
    shot(page, home, "sessions")


def test_session_as_memory_sees_it(browser: Any, console: RunningConsole, home: Home) -> None:
    page = browser
    page.goto(console.base + "/sessions")
    page.click("#sessions a:text-is('s-alpha')")
    assert page.locator("#session-id").inner_text() == "s-alpha"
    rows = {int(r.get_attribute("id")[4:]): r for r in page.locator("#messages tr[id]").all()}
    fates = {seq: r.get_attribute("class") for seq, r in rows.items()}
    gone = home.retracted + home.never_written
    kept = [s for s, c in home.alpha.canaries.items() if c not in gone]
    for seq in kept:
        assert fates[seq] == "stored"
    retracted = [s for s, c in home.alpha.canaries.items() if c in home.retracted]
    never = [s for s, c in home.alpha.canaries.items() if c in home.never_written]
    for seq in retracted:
        text = rows[seq].inner_text()
        assert fates[seq] == "withdrawn"
        assert f"dsh-rewind marker at seq {home.written_marker}" in text
        assert "retracted at 20" in text
    for seq in never:
        assert fates[seq] == "withdrawn"
        assert "never written" in rows[seq].inner_text()
    assert fates[home.written_marker] == "marker"
    secret_rows = [r for r in rows.values() if "[REDACTED:secret:aws]" in r.inner_text()]
    assert len(secret_rows) == 1 and "redacted: aws" in secret_rows[0].inner_text()
    assert SECRET not in page.content()
    derived = page.locator("#derived").inner_text()
    assert "sum-s-alpha-" in derived and "summary" in derived and "canary" in derived
    shot(page, home, "session")
    # A stored message links to its entry, which holds its text.
    first = min(kept)
    page.click(f"#seq-{first} a.id")
    assert page.locator("h1 .id").inner_text() == "msg-s-alpha-0"
    assert home.alpha.canaries[first] in page.locator("#entry-text").inner_text()
    shot(page, home, "entry")


def test_search_links_back_to_sessions(browser: Any, console: RunningConsole, home: Home) -> None:
    page = browser
    page.goto(console.base + "/search")
    word = home.beta.canary("1", "ASK")
    page.fill("input[name=q]", f'"{word}"')
    page.click("button:text-is('search')")
    hits = page.locator("#hits tr").all_inner_texts()[1:]
    assert any(h.startswith("msg-s-beta-0") for h in hits), hits
    shot(page, home, "search")
    page.click("#hits a:text-is('s-beta') >> nth=0")
    assert page.locator("#session-id").inner_text() == "s-beta"


def test_audit_and_health(browser: Any, console: RunningConsole, home: Home) -> None:
    page = browser
    page.goto(console.base + "/audit")
    retractions = page.locator("#retractions tr").all_inner_texts()[1:]
    entries = {r.split("\t")[2] for r in retractions if "\tretracted\t" in r}
    assert entries == {"msg-s-alpha-2", "msg-s-alpha-3"}
    shot(page, home, "audit")
    page.goto(console.base + "/health")
    assert page.locator("#plots svg").count() == 4
    assert page.locator("#plots svg rect.bar").count() == 3 * 24
    assert page.locator("#plots svg circle.dot").count() == 4  # one per session
    failures = page.locator("#failures tr").all_inner_texts()[1:]
    assert len(failures) == 1 and failures[0].startswith("scan\ts-broken\t1\tno\t")
    shot(page, home, "health")


def test_hostile_text_renders_as_text(browser: Any, console: RunningConsole) -> None:
    page = browser
    page.goto(console.base + "/sessions")
    page.click(f"#sessions a:text-is('{HOSTILE_ID}')")
    assert page.locator("#session-id").inner_text() == HOSTILE_ID
    assert page.locator("#cwd").inner_text() == HOSTILE_CWD
    texts = page.locator("#messages pre.text").all_inner_texts()
    assert texts[0] == HOSTILE_TEXT
    no_script_ran(page)
    # The id goes through a link and a hidden form field unchanged.
    page.click("text=forget this session…")
    assert page.locator("h1 a.id").inner_text() == HOSTILE_ID
    assert "msg-" + HOSTILE_ID + "-0" in page.locator("#plan").inner_text()
    no_script_ran(page)
    page.click("h1 a.id")
    page.click("button:text-is('retract now')")
    assert page.locator("h1 a.id").inner_text() == HOSTILE_ID
    assert "Nothing to retract" in page.locator("#outcome").inner_text()
    no_script_ran(page)


def test_forget_then_verify_reports_no_leak(
    browser: Any, console: RunningConsole, home: Home
) -> None:
    page = browser
    page.goto(console.base + "/session?id=s-beta")
    page.click("text=forget this session…")
    plan = page.locator("#plan").inner_text()
    assert "msg-s-beta-0" in plan and "msg-s-beta-1" in plan and "sum-s-beta-0-" in plan
    assert "session-s-beta\tretract\tthe session node" in plan
    assert "msg-s-beta-0" in {row["name"] for row in dump(home.root)["knowledge"]}  # unchanged
    shot(page, home, "forget")
    page.check("input[name=confirm]")
    page.click("#confirm-forget")
    assert page.locator("#outcome").inner_text().startswith("Removed ")
    page.click("h1 a.id")  # the session page now: every message removed, no text shown
    fates = page.locator("#messages tr[id]").evaluate_all("rows => rows.map(r => r.className)")
    assert fates == ["forgotten", "forgotten"]
    assert home.beta.canary("1", "ASK") not in page.content()
    assert "Fixing the flaky deploy" not in page.content()
    page.goto(console.base + "/verify")
    page.click("#run-verify")
    verdict = page.locator("#verdict").inner_text()
    assert verdict.startswith("0 leaks in ") and "1 forgotten sessions" in verdict, verdict
    shot(page, home, "verify")
    text = json.dumps(dump(home.root), ensure_ascii=False)
    assert home.beta.canary("1", "ASK") not in text and home.beta.canary("1", "ANSWER") not in text


def test_retract_now(browser: Any, console: RunningConsole, home: Home) -> None:
    page = browser
    before = dump(home.root)
    page.goto(console.base + "/session?id=s-alpha")
    page.click("button:text-is('retract now')")
    assert "Nothing to retract" in page.locator("#outcome").inner_text()
    assert dump(home.root) == before  # the withdrawals were already carried out


def test_refusals(console: RunningConsole) -> None:
    base, port = console.base, console.base.rsplit(":", 1)[1]
    cookie = {"Cookie": f"memory_console_{port}={console.token}; memory_console_csrf_{port}=c5rf"}
    assert http(base + "/sessions")[0] == 401
    assert http(base + "/sessions?token=wrong")[0] == 401
    assert (
        http(base + "/session?id=s-alpha", headers={"Cookie": f"memory_console_{port}=wrong"})[0]
        == 401
    )
    assert http(base + "/sessions", headers=cookie)[0] == 200
    # Bad input: one line, never a crash.
    for query, status, line in (
        ("/session?id=s-alpha&page=x", 400, "page: not a number"),
        ("/session?id=s-alpha&page=99", 404, "the session has 1 page(s)"),
        ("/session?id=s%00x", 400, "the session id contains a NUL character"),
        ("/session?id=nobody", 404, "no such session in the state database"),
        ("/sessions?since=yesterday", 400, "since: not a date (YYYY-MM-DD)"),
    ):
        got, body = http(base + query, headers=cookie)
        assert got == status and f'<p class="bad">{line}' in body, (query, got, body)
    # DNS rebinding: another name for this address.
    assert http(base + "/sessions", headers={**cookie, "Host": f"evil.example:{port}"})[0] == 403
    form = urllib.parse.urlencode({"id": "s-alpha", "csrf": "c5rf"}).encode()
    for origin in ("http://evil.example", "null"):
        status, _ = http(
            base + "/retract", method="POST", data=form, headers={**cookie, "Origin": origin}
        )
        assert status == 403
    status, _ = http(base + "/retract", method="POST", data=form, headers=cookie)
    assert status == 403  # neither Origin nor Referer
    bad = urllib.parse.urlencode({"id": "s-alpha", "csrf": "other"}).encode()
    status, _ = http(base + "/retract", method="POST", data=bad, headers={**cookie, "Origin": base})
    assert status == 403
    status, body = http(
        base + "/retract", method="POST", data=form, headers={**cookie, "Origin": base}
    )
    assert status == 200 and "Nothing to retract" in body


def test_cross_site_form_is_refused(browser: Any, console: RunningConsole, home: Home) -> None:
    """A page of another origin (same host, another port: the browser sends the SameSite cookie)
    that posts a form to the console, with a guessed CSRF field: refused, nothing changes."""
    import http.server
    import threading

    form = (
        f'<form method="post" action="{console.base}/forget">'
        '<input type="hidden" name="id" value="s-alpha">'
        '<input type="hidden" name="confirm" value="yes">'
        '<input type="hidden" name="csrf" value="guess">'
        '<button id="go" type="submit">go</button></form>'
    ).encode()

    class Page(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.end_headers()
            self.wfile.write(form)

        def log_message(self, *args: Any) -> None:
            pass

    other = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Page)
    threading.Thread(target=other.serve_forever, daemon=True).start()
    try:
        before = dump(home.root)
        page = browser
        page.goto(f"http://127.0.0.1:{other.server_address[1]}/")
        with page.expect_response(lambda r: r.url.endswith("/forget")) as answer:
            page.click("#go")
        assert answer.value.status == 403
        assert "cross-site request refused" in page.content()
        assert dump(home.root) == before
    finally:
        other.shutdown()
