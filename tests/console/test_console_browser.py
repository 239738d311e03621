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
from canary_support import canary_reply, runtime_for
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


def go(page: Any, selector: str) -> None:
    """Click a link or button and wait until the page it leads to has loaded (reading the old
    page's rows right after a click is what made the sessions test flaky)."""
    with page.expect_navigation(wait_until="load"):
        page.click(selector)


def listed(page: Any) -> list[str]:
    """The session ids of the sessions table's rows, in order."""
    ids: list[str] = page.locator("#sessions tr[data-id]").evaluate_all(
        "rows => rows.map(r => r.dataset.id)"
    )
    return ids


def session_row(page: Any, sid: str) -> Any:
    return page.locator("#sessions tr[data-id]").filter(has=page.locator("td.sid", has_text=sid))


def test_sessions_page(browser: Any, console: RunningConsole, home: Home) -> None:
    page = browser
    page.goto(console.base + "/")
    assert page.url == console.base + "/sessions"  # the token left the address bar
    assert sorted(listed(page)) == sorted(["s-alpha", "s-beta", "s-broken", HOSTILE_ID])
    no_script_ran(page)
    # By title; the id short on the page, whole in its tooltip and when copied.
    beta = session_row(page, "s-beta")
    cells = beta.inner_text().split("\t")
    assert cells[0] == "Fixing the flaky deploy"
    assert cells[4:6] == ["0", "0"] and cells[6].startswith("done")
    assert beta.locator("td.cons span.cons").get_attribute("title") == (
        "summaries cover every logged message"
    )
    hostile = session_row(page, HOSTILE_ID).locator("td.sid")
    assert hostile.get_attribute("title") == HOSTILE_ID
    assert hostile.inner_text() == HOSTILE_ID  # what a copy takes
    assert hostile.evaluate("td => td.scrollWidth > td.clientWidth")  # shown cut short
    assert hostile.evaluate("td => getComputedStyle(td).userSelect") == "all"
    # A session without a title is named, never blank.
    broken = session_row(page, "s-broken").inner_text().split("\t")
    assert broken[0] == "untitled session in canaryproj"
    assert broken[5].startswith("1 session s-broken: damaged: unparsable line")
    assert page.locator("h1 .note").inner_text() == "4 known, 1 failing task"
    page.select_option("select[name=project]", "canaryproj")
    go(page, "button:text-is('filter')")
    assert sorted(listed(page)) == ["s-alpha", "s-beta", "s-broken"]
    page.fill("input[name=since]", "2001-01-01")
    page.fill("input[name=until]", "2001-01-02")
    go(page, "button:text-is('filter')")
    assert listed(page) == []
    page.goto(console.base + "/sessions")
    shot(page, home, "sessions")


def test_session_as_memory_sees_it(browser: Any, console: RunningConsole, home: Home) -> None:
    page = browser
    page.goto(console.base + "/sessions")
    go(page, "#sessions tr[data-id='s-alpha'] td.title a")
    assert page.locator("#session-id").inner_text() == "s-alpha"
    # Memory first: the summaries, with their text and what they came from, above the log.
    first = page.locator("#derived article.memory").first
    assert first.locator(".head .kind").inner_text() == "span summary"
    kept_ask = home.alpha.canary("1", "ASK")
    assert kept_ask in first.locator(".memtext").inner_text()
    assert "msg-s-alpha-0" in first.locator("p.from").inner_text()
    kinds = page.locator("#derived article .head .kind").all_inner_texts()
    assert "work unit" in kinds
    above = page.locator("#derived").bounding_box()["y"]
    assert above < page.locator("#messages").bounding_box()["y"]
    assert page.locator("#consolidation").inner_text().startswith("done")
    rows = {int(r.get_attribute("id")[4:]): r for r in page.locator("#messages tr[id]").all()}
    fates = {seq: r.get_attribute("class") for seq, r in rows.items()}
    gone = home.retracted + home.never_written
    kept = [s for s, c in home.alpha.canaries.items() if c not in gone]
    for seq in kept:
        assert fates[seq] == "stored"
        assert rows[seq].locator(".memtext").is_visible()
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
    # Withdrawn text is folded away: not visible until its row is opened.
    for seq in retracted + never:
        assert home.alpha.canaries[seq] not in rows[seq].inner_text()
        assert not rows[seq].locator(".memtext").is_visible()
    assert fates[home.written_marker] == "marker"
    secret_rows = [r for r in rows.values() if "[REDACTED:secret:aws]" in r.inner_text()]
    assert len(secret_rows) == 1 and "redacted: aws" in secret_rows[0].inner_text()
    assert SECRET not in page.content()
    shot(page, home, "session")
    opened = rows[retracted[0]]
    opened.scroll_into_view_if_needed()
    shot(page, home, "session-withdrawn")
    opened.locator("details.withdrawn-text summary").click()
    assert opened.locator(".memtext").is_visible()
    assert home.alpha.canaries[retracted[0]] in opened.locator(".memtext").inner_text()
    # A stored message links to its entry: rendered (role, time, content), the raw form folded.
    go(page, f"#seq-{min(kept)} a.id")
    assert page.locator("h1 .id").inner_text() == "msg-s-alpha-0"
    assert page.locator("#entry .said .role").inner_text() == "user"
    assert page.locator("#entry-text").inner_text() == f"question {kept_ask}"
    assert not page.locator("#entry-raw").is_visible()
    assert page.locator("#entry-raw").text_content().startswith("## Role\nuser\n")
    shot(page, home, "entry")


def test_search_links_back_to_sessions(browser: Any, console: RunningConsole, home: Home) -> None:
    page = browser
    page.goto(console.base + "/search")
    word = home.beta.canary("1", "ASK")
    page.fill("input[name=q]", f'"{word}"')
    go(page, "button:text-is('search')")
    hits = page.locator("#search-hits li.hit")
    names = hits.locator("a.entry-link").all_inner_texts()
    assert "msg-s-beta-0" in names, names
    first = hits.nth(names.index("msg-s-beta-0"))
    assert first.locator("mark").first.inner_text() == word
    assert first.locator(".snippet").inner_text() == f"question {word}"
    assert page.locator("h2").all_inner_texts() == [
        "By the words (the store's full-text search)",
        "By the meaning (the store's similar)",
    ]
    assert page.locator("#similar-hits").count() == 1
    no_script_ran(page)
    shot(page, home, "search")
    with page.expect_navigation():
        first.locator("a.session-link").click()
    assert page.locator("#session-id").inner_text() == "s-beta"
    # Markup in a query is text, in the box and in the marked snippets.
    page.goto(console.base + "/search?q=" + urllib.parse.quote(f"{word} <b>x</b>"))
    assert page.locator("input[name=q]").input_value() == f"{word} <b>x</b>"
    assert page.locator("main b, main img, main script").count() == 0
    no_script_ran(page)


def test_audit_and_health(browser: Any, console: RunningConsole, home: Home) -> None:
    page = browser
    page.goto(console.base + "/audit")
    retractions = page.locator("#retractions tr").all_inner_texts()[1:]
    entries = {r.split("\t")[2] for r in retractions if "\tretracted\t" in r}
    assert entries == {"msg-s-alpha-2", "msg-s-alpha-3"}
    shot(page, home, "audit")
    page.goto(console.base + "/health")
    assert page.locator("#liveness").inner_text().startswith("No runner seen since 20")
    assert page.locator("#consolidation-off").count() == 0
    assert page.locator("#plots svg").count() == 4
    assert page.locator("#plots svg rect.bar").count() == 3 * 24
    assert page.locator("#plots svg circle.dot").count() == 4  # one per session
    failures = page.locator("#failures tr").all_inner_texts()[1:]
    assert len(failures) == 1 and failures[0].startswith("scan\ts-broken\t1\tno\t")
    shot(page, home, "health")
    # A runner holding a lease: named, with its host and heartbeat age.
    runtime = home_runtime(home)
    try:
        with runtime.state.transaction() as repos:
            lease = repos.leases.acquire("session:s-beta", "daemon:box/42:4242:abcd1234", 600)
        assert lease is not None
        page.goto(console.base + "/health")
        row = page.locator("#runners tr").all_inner_texts()[1].split("\t")
        assert row[:4] == ["daemon", "box/42", "4242", "session:s-beta"]
        assert row[4].endswith(" s ago")
        assert page.locator("#liveness").count() == 0
    finally:
        with runtime.state.transaction() as repos:
            repos.leases.release(lease)
        runtime.close()


def home_runtime(home: Home) -> Any:
    """A runtime over the home's state database (SQLite or PostgreSQL)."""
    with pytest.MonkeyPatch.context() as patch:
        extra = {}
        if "MEMORY_WORKER_STATE_URL" in home.env:
            extra["state_url"] = home.env["MEMORY_WORKER_STATE_URL"]
        return runtime_for(home.root, home.server, patch, **extra)


def test_hostile_text_renders_as_text(browser: Any, console: RunningConsole) -> None:
    page = browser
    page.goto(console.base + "/sessions")
    with page.expect_navigation():
        session_row(page, HOSTILE_ID).locator("td.title a").click()
    assert page.locator("#session-id").inner_text() == HOSTILE_ID
    assert page.locator("#cwd").inner_text() == HOSTILE_CWD
    texts = page.locator("#messages .memtext").all_inner_texts()
    assert texts[0] == HOSTILE_TEXT
    actions = page.locator("div.actions").inner_text()
    assert actions.startswith("forget this session…\nretract now") and "·" not in actions
    no_script_ran(page)
    # The id goes through a link and a hidden form field unchanged.
    go(page, "text=forget this session…")
    assert page.locator("h1 a.id").inner_text() == HOSTILE_ID
    assert "msg-" + HOSTILE_ID + "-0" in page.locator("#plan").inner_text()
    no_script_ran(page)
    go(page, "h1 a.id")
    go(page, "button:text-is('retract now')")
    assert page.locator("h1 a.id").inner_text() == HOSTILE_ID
    assert "Nothing to retract" in page.locator("#outcome").inner_text()
    no_script_ran(page)


def test_forget_then_verify_reports_no_leak(
    browser: Any, console: RunningConsole, home: Home
) -> None:
    page = browser
    page.goto(console.base + "/session?id=s-beta")
    go(page, "text=forget this session…")
    plan = page.locator("#plan").inner_text()
    assert "msg-s-beta-0" in plan and "msg-s-beta-1" in plan and "sum-s-beta-0-" in plan
    assert "session-s-beta\tretract\tthe session node" in plan
    assert "msg-s-beta-0" in {row["name"] for row in dump(home.root)["knowledge"]}  # unchanged
    shot(page, home, "forget")
    page.check("input[name=confirm]")
    go(page, "#confirm-forget")
    assert page.locator("#outcome").inner_text().startswith("Removed ")
    go(page, "h1 a.id")  # the session page now: every message removed, no text shown
    fates = page.locator("#messages tr[id]").evaluate_all("rows => rows.map(r => r.className)")
    assert fates == ["forgotten", "forgotten"]
    assert home.beta.canary("1", "ASK") not in page.content()
    assert "Fixing the flaky deploy" not in page.content()
    page.goto(console.base + "/verify")
    go(page, "#run-verify")
    verdict = page.locator("#verdict").inner_text()
    assert verdict.startswith("0 leaks in ") and "and 1 forgotten session (" in verdict, verdict
    shot(page, home, "verify")
    text = json.dumps(dump(home.root), ensure_ascii=False)
    assert home.beta.canary("1", "ASK") not in text and home.beta.canary("1", "ANSWER") not in text


def test_retract_now(browser: Any, console: RunningConsole, home: Home) -> None:
    page = browser
    before = dump(home.root)
    page.goto(console.base + "/session?id=s-alpha")
    go(page, "button:text-is('retract now')")
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
