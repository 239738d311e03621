"""Deleted means gone from the bytes, through the worker: after (a) the retraction of a late
withdrawal, (b) the summary and archive repair it causes and (c) ``memory-worker forget``, a raw
scan of every shelf file (``hypatia.sqlite``, ``-wal``, ``-shm``) and of every state database
file finds no form of the removed text, while the kept text is still there (the control that
the scan reads real data). Before the withdrawal the doomed text was in those bytes too."""

from __future__ import annotations

from pathlib import Path

import pytest
from bytes_support import (
    TokenSession,
    leaks,
    pg_table_file,
    present,
    shelf_files,
    state_files,
    token,
)
from canary_support import canary_reply, cli, cli_env, dump_text, names, process, runtime_for
from model_server import ModelServer, model_server_fixture  # noqa: F401
from state_db_support import throwaway_pg_database

pytestmark = pytest.mark.integration


def _files(root: Path) -> list[Path]:
    return shelf_files(root / "lite") + state_files(root)


def test_a_late_withdrawal_retracts_messages_out_of_the_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, model_server: ModelServer
) -> None:
    model_server.responder = canary_reply
    runtime = runtime_for(tmp_path, model_server, monkeypatch)
    s = TokenSession.start(tmp_path, "s-r")
    for label in ("1", "2", "3"):
        s.turn(label)
    second = s.turns[1]
    process(runtime, consolidation=False)
    assert names(tmp_path) >= {f"msg-s-r-{n}" for n in range(6)}
    doomed = [c for q, c in s.canaries.items() if q >= second.user_seq]
    assert len(doomed) == 4 and present(shelf_files(tmp_path / "lite"), doomed) == set(doomed)

    marker, withdrawn = s.rewind(second.user_seq)
    assert sorted(withdrawn) == sorted(doomed)
    process(runtime, consolidation=False)
    assert {n for n in names(tmp_path) if n.startswith("msg-")} == {"msg-s-r-0", "msg-s-r-1"}
    with runtime.state.transaction() as repos:
        retracted = sorted((r.entry, r.marker_seq, r.outcome) for r in repos.audit.retractions())
    assert retracted == [(f"msg-s-r-{n}", marker, "retracted") for n in (2, 3, 4, 5)]
    text = dump_text(tmp_path)
    assert not [c for c in withdrawn if c in text]
    assert leaks(_files(tmp_path), withdrawn) == []  # while the worker still holds it open
    kept = s.kept(withdrawn)
    assert len(kept) == 2 and present(shelf_files(tmp_path / "lite"), kept) == set(kept)
    runtime.close()
    assert leaks(_files(tmp_path), withdrawn) == []


def test_the_summary_and_archive_repair_leaves_no_withdrawn_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, model_server: ModelServer
) -> None:
    model_server.responder = canary_reply  # summaries, archives and units repeat every line
    runtime = runtime_for(tmp_path, model_server, monkeypatch)
    a = TokenSession.start(tmp_path, "s-a")
    b = TokenSession.start(tmp_path, "s-b")
    a.turn("1")
    b.turn("1")
    b_second = b.turn("2")
    process(runtime)
    a.turn("3")
    b.turn("3")
    process(runtime)
    built = names(tmp_path)
    assert len([n for n in built if n.startswith("sum2-")]) == 2
    assert len([n for n in built if n.startswith("sum3-")]) == 1
    doomed = [c for q, c in b.canaries.items() if q >= b_second.user_seq]
    # Each withdrawn line was repeated into a summary, an archive and a work unit.
    assert present(shelf_files(tmp_path / "lite"), doomed) == set(doomed)

    _, withdrawn = b.rewind(b_second.user_seq)
    process(runtime)
    with runtime.state.transaction() as repos:
        repaired = {(e.action, e.outcome) for e in repos.audit.entries()}
    assert ("repair-summary", "regenerated") in repaired
    assert ("repair-archive", "regenerated") in repaired
    text = dump_text(tmp_path)
    assert not [c for c in withdrawn if c in text]
    assert leaks(_files(tmp_path), withdrawn) == []
    kept = a.kept([]) + b.kept(withdrawn)
    assert len(kept) == 6 and present(shelf_files(tmp_path / "lite"), kept) == set(kept)
    runtime.close()
    assert leaks(_files(tmp_path), withdrawn) == []


def test_forget_removes_the_session_and_its_title_from_every_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, model_server: ModelServer
) -> None:
    model_server.responder = canary_reply
    runtime = runtime_for(tmp_path, model_server, monkeypatch)
    gone = TokenSession.start(tmp_path, "s-gone")
    kept = TokenSession.start(tmp_path, "s-kept")
    title = token("s-gone-title")
    gone.log.title(f"about {title}", gone.turn("1").user_seq)
    kept.log.title(f"about {token('s-kept-title')}", kept.turn("1").user_seq)
    gone.turn("2")
    kept.turn("2")
    process(runtime)
    runtime.close()
    doomed = [*gone.canaries.values(), title]
    assert present(state_files(tmp_path), [title]) == {title}  # sessions.title_text
    assert present(shelf_files(tmp_path / "lite"), doomed) == set(doomed)

    done = cli(["forget", "s-gone"], cli_env(tmp_path, model_server))
    assert done.returncode == 0, done.stderr
    assert not [n for n in names(tmp_path) if "s-gone" in n]
    assert leaks(_files(tmp_path), doomed) == []
    still = [*kept.canaries.values(), token("s-kept-title")]
    assert present(_files(tmp_path), still) == set(still)


def test_forget_with_a_postgresql_state_database_leaves_no_dead_title(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, model_server: ModelServer
) -> None:
    model_server.responder = canary_reply
    title, kept_title = token("pg-gone-title"), token("pg-kept-title")
    with throwaway_pg_database() as url:
        runtime = runtime_for(tmp_path, model_server, monkeypatch, state_url=url)
        gone = TokenSession.start(tmp_path, "s-gone")
        kept = TokenSession.start(tmp_path, "s-kept")
        gone.log.title(f"about {title}", gone.turn("1").user_seq)
        kept.log.title(f"about {kept_title}", kept.turn("1").user_seq)
        gone.turn("2")  # (a title logged after the last turn was not recorded in this set-up)
        kept.turn("2")
        process(runtime)
        runtime.close()
        assert present([pg_table_file(url)], [title, kept_title]) == {title, kept_title}

        env = cli_env(tmp_path, model_server, MEMORY_WORKER_STATE_URL=url)
        done = cli(["forget", "s-gone"], env)
        assert done.returncode == 0, done.stderr
        assert not [n for n in names(tmp_path) if "s-gone" in n]
        assert leaks([pg_table_file(url)], [title]) == []  # VACUUM FULL: no dead tuple left
        assert present([pg_table_file(url)], [kept_title]) == {kept_title}
        doomed = list(gone.canaries.values())
        assert leaks(shelf_files(tmp_path / "lite"), [*doomed, title]) == []
