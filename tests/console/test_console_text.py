"""The console's text helpers: titles cut at a word with an ellipsis, a snippet around the query
with the words marked (and, once rendered, escaped), a message entry's scaffold split into role,
time and content, the plural, and who holds a lease now (liveness) on SQLite and PostgreSQL."""

from __future__ import annotations

import datetime as dt

from state_db_support import pg_state_url, state_db, state_url  # noqa: F401

from dsh_memory_worker.memory.entries import render_message
from dsh_memory_worker.worker.console.base import clip, plural, short_id, untitled
from dsh_memory_worker.worker.console.entry_text import rendered
from dsh_memory_worker.worker.console.search_page import query_words, snippet
from dsh_memory_worker.worker.state import StateDB
from dsh_memory_worker.worker.state.liveness import liveness


def test_titles_are_cut_at_a_word() -> None:
    title = "Use the read tool (NOT the shell) to open config.json and report the port"
    assert clip(title, 24) == "Use the read tool…"
    assert clip(title, 200) == title
    assert clip("a\nb\tc", 80) == "a b c"
    assert clip("x" * 30, 10) == "x" * 9 + "…"
    assert untitled("/home/dev/widget/") == "untitled session in widget"
    assert untitled("") == "untitled session in no project"
    assert (plural(1, "forgotten session"), plural(2, "forgotten session")) == (
        "1 forgotten session",
        "2 forgotten sessions",
    )
    assert short_id("7d3c1f0e-2b6a-4c59-9e1d-5a8f3b2c4d10") == "7d3c1f0e…"


def test_snippet_marks_the_query_around_its_first_hit() -> None:
    text = ("filler words " * 40) + "the service listens on Port 9090 today. " + "tail " * 60
    words = query_words('"port 9090" -deploy')
    assert words == ["9090", "port"]
    pieces = snippet(text, words, width=80)
    assert pieces[0] == ("…", False) and pieces[-1] == ("…", False)
    assert [p for p, marked in pieces if marked] == ["Port", "9090"]
    shown = "".join(p for p, _ in pieces)
    assert "the service listens on Port 9090 today." in shown
    assert len(shown) <= 82 and not shown[1:-1].startswith(" ")
    whole = query_words('"CANARY-s-beta-1-ASK"')
    assert whole[0] == "canary-s-beta-1-ask"
    assert [p for p, m in snippet("question CANARY-s-beta-1-ASK", whole) if m] == [
        "CANARY-s-beta-1-ASK"
    ]
    # No word found: the text's start; nothing marked.
    assert snippet("<b>hello</b> world", ["absent"]) == [("<b>hello</b> world", False)]


def test_snippets_render_escaped(tmp_path: object) -> None:
    from jinja2 import Environment, PackageLoader

    env = Environment(
        loader=PackageLoader("dsh_memory_worker.worker.console", "templates"), autoescape=True
    )
    env.filters.update(shown=str, q=str, short_id=str, block=str)
    hits = env.get_template("_entry.html").module.hits  # type: ignore[attr-defined]
    from dsh_memory_worker.worker.console.search_page import Hit

    hit = Hit("msg-s-0", "knowledge", None, snippet("<script>x</script> port", ["port"]), "")
    page = str(hits("search", "words", [hit], None))
    assert "<script>" not in page
    assert "&lt;script&gt;x&lt;/script&gt; <mark>port</mark>" in page


def test_a_message_entry_is_split_into_its_fields() -> None:
    text = render_message(role="assistant", time_ms=1790000000000, body="## not a heading\nok")
    found = rendered(text)
    assert (found.role, found.time, found.turn) == ("assistant", "2026-09-21T14:13:20.000Z", "0")
    assert found.content == "## not a heading\nok"
    assert rendered("U: a summary\nA: text").content == "U: a summary\nA: text"


def test_liveness_names_the_runner_or_when_one_was_last_seen(state_db: StateDB) -> None:  # noqa: F811
    t0 = dt.datetime.now(dt.UTC)
    with state_db.read() as repos:
        none = liveness(repos.conn, t0, 60)
    assert (none.runners, none.last_seen_at) == ([], None)
    with state_db.transaction() as repos:
        lease = repos.leases.acquire("session:s-1", "daemon:box/7:123:abcd", 60)
    assert lease is not None
    with state_db.read() as repos:
        alive = liveness(repos.conn, dt.datetime.now(dt.UTC), 60)
    (runner,) = alive.runners
    assert (runner.kind, runner.host, runner.pid, runner.key) == (
        "daemon",
        "box/7",
        "123",
        "session:s-1",
    )
    assert (
        dt.timedelta(0) <= dt.datetime.now(dt.UTC) - runner.heartbeat_at < dt.timedelta(seconds=30)
    )
    with state_db.transaction() as repos:
        repos.leases.release(lease)
    with state_db.read() as repos:
        gone = liveness(repos.conn, dt.datetime.now(dt.UTC), 60)
    assert gone.runners == [] and gone.last_seen_at is not None
    assert t0 - dt.timedelta(seconds=1) <= gone.last_seen_at <= dt.datetime.now(dt.UTC)
