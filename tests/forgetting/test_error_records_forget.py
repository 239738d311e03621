"""Provider errors that quote the prompt leave no withdrawn or forgotten text in the state
database (issue 22, item 1).

The model server answers every call with an HTTP 400 whose message repeats the transcript it was
sent (a content filter's echo). Error records never hold the provider's message: the model call's
``detail``, the job's ``last_error`` and an audit ``detail`` keep the status and the error's type
only. The session title (text the worker must keep) takes the other path: it is overwritten and
purged from the files by ``forget``. After a rewind of one session and a ``forget`` of another,
no withdrawn or forgotten canary is in any byte of the state database (SQLite files; PostgreSQL
tables' files) or the shelf, the kept ones are, and ``verify-forgetting`` exits 0."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from bytes_support import TokenSession, leaks, pg_table_file, present, shelf_files, state_files
from canary_support import cli, cli_env, process, runtime_for
from model_server import ModelServer, model_server_fixture, prompt_quoting_error  # noqa: F401
from state_db_support import throwaway_pg_database

pytestmark = pytest.mark.integration

STATE_TABLES = ("sessions", "model_calls", "failures", "audit", "retractions")


class WordySession(TokenSession):
    """Messages long enough for ``verify-forgetting``'s phrases; within a session every turn
    shares most of its words with the others (only the canary token differs). ``s-a`` speaks
    German, ``s-b`` English: ``verify-forgetting`` drops a fragment a kept message of the *same*
    session holds, but not one of another session, so a forgotten session must not share whole
    phrases with a kept one (that would be a leak report of text that is legitimately kept)."""

    def turn(self, label: str) -> Any:
        ask, answer = self.canary(label, "ASK"), self.canary(label, "ANSWER")
        if self.log.session_id == "s-a":
            user = f"bitte überprüfe den parser {ask} und die tests danach"
            reply = f"der parser ist repariert {answer} und alle tests sind grün"
        else:
            user = f"please review the tokenizer {ask} then rerun its benchmarks"
            reply = f"the tokenizer review is done {answer} and benchmarks look stable"
        seqs = self.log.turn(user, reply)
        self.canaries[seqs.user_seq] = ask
        self.canaries[seqs.assistant_seq] = answer
        self.turns.append(seqs)
        self.log.flush()
        return seqs


def _scenario(
    root: Path, server: ModelServer, monkeypatch: pytest.MonkeyPatch, **overrides: Any
) -> tuple[list[str], list[str], list[str]]:
    """Two sessions logged, their consolidation refused by errors quoting the transcript; one
    rewound, the other forgotten. Returns (withdrawn, forgotten, kept) canaries."""
    server.responder = prompt_quoting_error
    runtime = runtime_for(root, server, monkeypatch, **overrides)
    a = WordySession.start(root, "s-a")
    b = WordySession.start(root, "s-b")
    a.turn("1")
    second = a.turn("2")
    first_b = b.turn("1")
    b.log.title(f"Fixing {b.canary('1', 'ASK')} again", first_b.user_seq)
    b.log.flush()
    process(runtime)
    with runtime.state.read() as repos:
        calls = repos.model_calls.recent()
        failures = repos.failures.list()
    # The control: the errors were recorded, and what the server sent back quoted the canaries.
    assert calls and all(c.outcome == "error" for c in calls)
    assert {f.task for f in failures} >= {"consolidate"}
    quoted = " ".join(r.user_text for r in server.requests)
    assert a.canary("2", "ASK") in quoted and b.canary("1", "ANSWER") in quoted
    _, withdrawn = a.rewind(second.user_seq)
    process(runtime)
    runtime.close()
    forgotten = list(b.canaries.values())
    return withdrawn, forgotten, a.kept(withdrawn)


def _forget_and_verify(root: Path, server: ModelServer, **extra: str) -> None:
    env = cli_env(root, server, **extra)
    done = cli(["forget", "s-b"], env)
    assert done.returncode == 0, done.stderr
    verify = cli(["verify-forgetting", "--json"], env, timeout=120)
    assert verify.returncode == 0, verify.stdout + verify.stderr
    report = json.loads(verify.stdout)
    assert report["leaks"] == [] and report["withdrawn_messages"] == 2, report


def test_sqlite_state_keeps_no_quoted_prompt_after_rewind_and_forget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, model_server: ModelServer
) -> None:
    withdrawn, forgotten, kept = _scenario(tmp_path, model_server, monkeypatch)
    _forget_and_verify(tmp_path, model_server)
    gone = withdrawn + forgotten
    assert leaks(state_files(tmp_path), gone) == []
    assert leaks(shelf_files(tmp_path / "lite"), gone) == []
    assert present(shelf_files(tmp_path / "lite"), kept) == set(kept)


def test_postgresql_state_keeps_no_quoted_prompt_after_rewind_and_forget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, model_server: ModelServer
) -> None:
    with throwaway_pg_database() as url:
        withdrawn, forgotten, kept = _scenario(tmp_path, model_server, monkeypatch, state_url=url)
        _forget_and_verify(tmp_path, model_server, MEMORY_WORKER_STATE_URL=url)
        gone = withdrawn + forgotten
        files = [pg_table_file(url, table) for table in STATE_TABLES]
        assert leaks(files, gone) == []
        assert leaks(shelf_files(tmp_path / "lite"), gone) == []
        assert present(shelf_files(tmp_path / "lite"), kept) == set(kept)
