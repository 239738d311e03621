"""Withdrawal end to end, property-based: random sessions (V4, V3 and V0 logs) with random rewinds
and rollbacks, some written before the first ``run --once`` (never stored) and some after it (their
messages, summaries, archives and units were stored and must be taken back), each run through the
real command (``memory-worker run --once``, in process, embedded hypatia-lite, a model server that
echoes every transcript line into summaries and units).

The store must equal an oracle computed from the generator's own record of what each marker
withdrew (:class:`corpus.SessionRecord`, never the worker's withdrawal code): exactly the kept
messages' entries with their text, the session node when its title's prompt is kept, span
summaries made only of kept lines, no withdrawn-only word in any byte; ``verify-forgetting`` must
report 0 leaks and exit 0, and name a planted leak with exit 1."""

from __future__ import annotations

import random
import tempfile
from pathlib import Path
from typing import Any

import pytest
from canary_support import canary_reply, cli_env
from corpus import (
    REWIND,
    ROLLBACK,
    Corpus,
    CorpusLog,
    Phrasebook,
    SessionRecord,
    files_holding,
    session_prompts,
    withdrawn_only_words,
)
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st
from model_server import ModelServer
from pipeline_support import dump
from typer.testing import CliRunner

from dsh_memory_worker.worker.cli import _register as _register_commands
from dsh_memory_worker.worker.cli import app
from dsh_memory_worker.worker.verify.fragments import words

pytestmark = pytest.mark.integration

#: one session's script: (version, turns before the first run, withdrawals before it (each a
#: fraction picking the prompt, and whether a rollback), turns after it, withdrawals after it)
Withdrawals = list[tuple[float, bool]]
SESSION = st.tuples(
    st.sampled_from((4, 3, 0)),
    st.integers(2, 4),
    st.lists(st.tuples(st.floats(0, 1), st.booleans()), max_size=1),
    st.integers(0, 2),
    st.lists(st.tuples(st.floats(0, 1), st.booleans()), min_size=1, max_size=2),
)


def _withdraw(log: CorpusLog, book: Phrasebook, pick: float, rollback: bool) -> None:
    """Rewind (or roll back) to a prompt on the surface, then retype it with a small edit."""
    prompts = [m for m in log.record.said if m.role == "user" and m.seq in log.surface]
    if not prompts:
        return
    target = prompts[min(int(pick * len(prompts)), len(prompts) - 1)]
    log.withdraw(target.seq, ROLLBACK if rollback else REWIND, legacy=pick < 0.5)
    log.turn(
        book.retyped(target.text),
        [book.boilerplate(), book.reply(target.text)],
        [book.tool()],
        secret_=target.secret,
    )


def _turns(log: CorpusLog, book: Phrasebook, count: int) -> None:
    for prompt, key in session_prompts(book, count):
        title = " ".join(prompt.split()[:4]) if log.record.title is None else None
        log.turn(
            prompt,
            [book.boilerplate(), book.reply(prompt)],
            [book.tool()],
            secret_=key,
            title=title,
        )


def _register() -> None:
    """The commands on ``app``, once per process: each registration adds them again, and Typer
    builds every copy into the command on each ``invoke`` (the sixth example's invocations each
    built six copies of every command). (The test's body, whose text seeds the derandomized
    examples, still calls ``_register()``.)"""
    if not _registered:
        _register_commands()
        _registered.append(True)


_registered: list[bool] = []


def _run_once(env: dict[str, str]) -> None:
    result = CliRunner().invoke(app, ["run", "--once"], env=env)
    assert result.exit_code == 0, (result.stdout, result.stderr)


def _verify(env: dict[str, str]) -> Any:
    return CliRunner().invoke(app, ["verify-forgetting"], env=env)


def rendered(text: str, secret: str | None) -> str:
    """A message's text as its entry holds it (the one secret form the corpus pastes)."""
    return text.replace(secret, "[REDACTED:secret:key]") if secret else text


def check_oracle(root: Path, records: list[SessionRecord]) -> None:
    """The store against the generator's record (see the module docstring)."""
    shelf = dump(root)
    entries = {row["name"]: row["content"]["data"] for row in shelf["knowledge"]}
    for record in records:
        sid = record.session_id
        mine = {n for n in entries if n.startswith(f"msg-{sid}-")}
        assert mine == record.names(record.kept()), sid
        for said in record.kept():
            data = entries[f"msg-{sid}-{said.ordinal}"]
            assert f"## Content\n{rendered(said.text, said.secret)}" in data
        node = record.node_text()
        assert (f"session-{sid}" in entries) == (node is not None), sid
        if node is not None:
            assert node in entries[f"session-{sid}"]
        kept_lines = {
            f"{'U' if m.role == 'user' else 'A'}: {rendered(m.text, m.secret)}"
            for m in record.kept()
        }
        for name in (n for n in entries if n.startswith(f"sum-{sid}-")):
            said_lines = {
                line for line in entries[name].splitlines() if line.startswith(("U: ", "A: "))
            }
            assert said_lines and said_lines <= kept_lines, name
    gone = withdrawn_only_words(records)
    assert files_holding(root / "lite", gone) == files_holding(root / "data", gone) == {}
    secrets = [m.secret for r in records for m in r.said if m.secret]
    assert not any(s in str(shelf) for s in secrets)


@settings(
    max_examples=4,
    deadline=None,
    derandomize=True,
    print_blob=True,
    phases=[Phase.explicit, Phase.generate],  # a failing example costs minutes to shrink
    suppress_health_check=[HealthCheck.too_slow],
)
@given(scripts=st.lists(SESSION, min_size=1, max_size=2), seed=st.integers(0, 2**16))
# DSH 0.1.x forms every run: V0 (its user-message marker early, the empty assistant-message
# marker late) beside V4, and V3 (plugin-spelled rollback and rewind)
@example(
    scripts=[(0, 3, [(0.6, False)], 1, [(0.2, False), (0.9, True)]), (4, 2, [], 1, [(0.0, False)])],
    seed=7,
)
@example(scripts=[(3, 3, [(0.5, True)], 1, [(0.4, False)])], seed=11)
def test_random_withdrawals_leave_exactly_the_kept_conversation(
    scripts: list[tuple[int, int, Withdrawals, int, Withdrawals]],
    seed: int,
) -> None:
    _register()
    server = ModelServer(canary_reply).start()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            env = cli_env(root, server)
            book = Phrasebook(random.Random(seed))
            corpus = Corpus(root / "dsh", book)
            for n, (version, before, early, _, _) in enumerate(scripts):
                log = CorpusLog(corpus.home, f"prop-{n}", "/home/dev/widget", version=version)
                corpus.logs.append(log)
                _turns(log, book, before)
                for pick, rollback in early:
                    _withdraw(log, book, pick, rollback)
                log.flush()
            _run_once(env)
            for log, (_, _, _, after, late) in zip(corpus.logs, scripts, strict=True):
                _turns(log, book, after)
                for pick, rollback in late:
                    _withdraw(log, book, pick, rollback)
                log.flush()
            _run_once(env)

            check_oracle(root, corpus.records)
            clean = _verify(env)
            assert clean.exit_code == 0, clean.stdout
            assert clean.stdout.startswith("0 leaks in ")

            planted = next(
                (
                    (r, m)
                    for r in corpus.records
                    for m in r.withdrawn()
                    if set(words(m.text)) & withdrawn_only_words(corpus.records)
                ),
                None,
            )
            if planted is not None:
                record, said = planted
                from hypatia_lite.store import LiteStore

                with LiteStore("default", home=root / "lite") as store:
                    store.knowledge_create("planted-by-hand", f"From memory: {said.text}")
                found = _verify(env)
                assert found.exit_code == 1, found.stdout
                assert (
                    f"leak: entry planted-by-hand (query): session {record.session_id}, "
                    f"msg-{record.session_id}-{said.ordinal} (seq {said.seq}, withdrawn): "
                    in found.stdout
                )
    finally:
        server.stop()
