"""``verify-forgetting`` on a realistic corpus (:mod:`corpus`): users who repeat themselves,
boilerplate replies, shared tool output, three languages besides English, a long session,
secrets; V4, V3 and V0 logs; rewinds and rollbacks both before the first run and after it (late:
their messages were written and must be retracted, their summaries, archives and units repaired).

A clean store must verify with 0 leaks although withdrawn and kept text share phrases by
construction; a withdrawn message's own words planted under any name must still be named, with
exit status 1."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
from canary_support import BIN, canary_reply, cli, cli_env, runtime_for
from corpus import Corpus, files_holding, late_withdrawal, realistic_corpus, withdrawn_only_words
from model_server import ModelServer, model_server_fixture  # noqa: F401
from pipeline_support import names, process

from dsh_memory_worker.worker.verify.fragments import words
from dsh_memory_worker.worker.verify.run import verify

pytestmark = pytest.mark.integration


def _consolidated(root: Path, server: ModelServer, monkeypatch: pytest.MonkeyPatch) -> Corpus:
    """The corpus logged and consolidated, then a late withdrawal in every session, logged and
    repaired."""
    server.responder = canary_reply
    corpus = realistic_corpus(root / "dsh")
    runtime = runtime_for(root, server, monkeypatch)
    try:
        process(runtime)
        for log in corpus.logs:
            late_withdrawal(corpus, log)
        process(runtime)
    finally:
        runtime.close()
    return corpus


def _planted(corpus: Corpus) -> Any:
    """A withdrawn message with words of its own (a made-up detail) and no secret."""
    for record in corpus.records:
        for said in record.withdrawn():
            if said.secret is None and withdrawn_only_words(corpus.records) & set(words(said.text)):
                return record, said
    raise AssertionError("the corpus withdrew no message with words of its own")


def test_a_clean_store_after_late_withdrawals_verifies_clean_and_a_plant_is_named(
    tmp_path: Path,
    model_server: ModelServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    corpus = _consolidated(tmp_path, model_server, monkeypatch)
    withdrawn = sum(len(r.withdrawn()) for r in corpus.records)
    runtime = runtime_for(tmp_path, model_server, monkeypatch)
    try:
        clean = verify(runtime, "default")
    finally:
        runtime.close()
    assert [leak.line() for leak in clean.leaks] == []
    assert clean.sources.withdrawn_count == withdrawn
    assert clean.entries > sum(len(r.kept()) for r in corpus.records)
    # The generator's own record agrees: no withdrawn-only word is in any byte of the store or
    # the state database, and every session has summaries, archives or units beside messages.
    gone = withdrawn_only_words(corpus.records)
    assert len(gone) >= 10
    assert files_holding(tmp_path / "lite", gone) == files_holding(tmp_path / "data", gone) == {}
    kinds = {row.split("-")[0] for row in names(tmp_path)}
    assert {"msg", "session", "sum", "sum2", "wu"} <= kinds

    env = cli_env(tmp_path, model_server)
    assert cli(["verify-forgetting"], env, timeout=300).returncode == 0
    record, said = _planted(corpus)
    created = subprocess.run(
        [
            str(BIN / "hypatia-lite"),
            "knowledge-create",
            "notes-from-yesterday",
            "-d",
            f"Recap: {said.text}",
        ],
        env={**env, "HYPATIA_LITE_HOME": str(tmp_path / "lite")},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert created.returncode == 0, created.stderr
    found = cli(["verify-forgetting"], env, timeout=300)
    assert found.returncode == 1, found.stderr
    name = f"msg-{record.session_id}-{said.ordinal}"
    planted = [
        line
        for line in found.stdout.splitlines()
        if line.startswith("leak: entry notes-from-yesterday (query): ")
    ]
    assert planted and all(f", {name} (seq {said.seq}, withdrawn): " in line for line in planted)
    assert all(
        line.endswith(
            " — not explained: no legitimate source: not an entry the worker "
            "derives from a kept message"
        )
        for line in planted
    )
    in_bytes = [line for line in found.stdout.splitlines() if "(bytes)" in line]
    assert in_bytes and all(name in line and "hypatia.sqlite" in line for line in in_bytes)
    assert len(found.stdout.splitlines()) == len(planted) + len(in_bytes)
