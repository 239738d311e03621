"""The operator verbs the reference plugin's README tells users to run: ``backfill --status``,
``scope list --count``, a shelf's registered embedding model and ``embedding.skip_tags``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hypatia_lite import cli
from hypatia_lite.store import LiteStore


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for var in ("HYPATIA_LITE_EMBED_URL", "HYPATIA_LITE_EMBED_MODEL", "HYPATIA_LITE_EMBED_KEY_ENV"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HYPATIA_LITE_HOME", str(tmp_path))
    monkeypatch.setenv("HYPATIA_LITE_EMBEDDER", "hash")
    return tmp_path


def lite(capsys: pytest.CaptureFixture[str], *argv: str, code: int = 0) -> str:
    assert cli.run(list(argv)) == code
    captured = capsys.readouterr()
    return captured.out if code == 0 else captured.err


def vectors(home: Path) -> dict[str, tuple[int, str | None]]:
    with LiteStore(home=home, embedder=None) as store:
        rows = store.conn.execute(
            "SELECT name, embed_wanted, embedding_model FROM knowledge ORDER BY name"
        ).fetchall()
    return {name: (wanted, model) for name, wanted, model in rows}


def test_backfill_status_reports_the_debt_without_paying_it(
    home: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HYPATIA_LITE_EMBEDDER", "none")
    lite(capsys, "knowledge-create", "a", "--data=alpha")
    lite(capsys, "knowledge-create", "b", "--data=beta")
    lite(capsys, "knowledge-create", "msg-1", "--data=log", "--no-embed")
    monkeypatch.setenv("HYPATIA_LITE_EMBEDDER", "hash")
    status = "Embedding model: hypatia-lite/hash-ngram-384\n  knowledge: {} pending\n"
    status += "  statement: 0 pending\n  ({} pending)\n"
    assert lite(capsys, "backfill", "--status") == status.format(2, 2)
    assert vectors(home)["a"] == (1, None)
    assert cli.run(["backfill"]) == 0
    done = capsys.readouterr()
    assert done.out == "Backfill complete: 2 vectors created, 0 skipped, 0 errors\n"
    assert done.err == "Backfill: 2/2 vectors created\n"
    assert lite(capsys, "backfill", "--status") == status.format(0, 0)


def test_scope_list_counts_entries_and_statements(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lite(capsys, "knowledge-create", "a", "--data=x", "--scopes", "proj")
    lite(capsys, "knowledge-create", "b", "--data=y", "--scopes", "proj,")
    lite(capsys, "knowledge-create", "c", "--data=z")
    lite(capsys, "statement-create", "a", "rel", "b", "--scopes", "other")
    assert lite(capsys, "scope", "list", "--count") == (
        '  "" (global)  1\n  other  1\n  proj  2\n  (3 scopes)\n'
    )
    assert lite(capsys, "scope", "list") == '  "" (global)\n  other\n  proj\n  (3 scopes)\n'


def test_skip_tags_retract_existing_vectors_and_skip_new_ones(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lite(capsys, "knowledge-create", "old-log", "--data=zebra log", "-t", "message")
    lite(capsys, "knowledge-create", "note", "--data=zebra note", "-t", "note")
    before = lite(capsys, "knowledge-get", "old-log")
    assert vectors(home)["old-log"] == (1, "hypatia-lite/hash-ngram-384")
    assert lite(capsys, "shelf-config", "set", "embedding.skip_tags", "message, tool").startswith(
        'embedding.skip_tags = ["message", "tool"]\n'
    )
    assert lite(capsys, "shelf-config", "get", "embedding.skip_tags") == '["message", "tool"]\n'
    assert lite(capsys, "backfill") == "Backfill complete: 0 vectors created, 1 skipped, 0 errors\n"
    lite(capsys, "knowledge-create", "new-log", "--data=zebra again", "-t", "tool")
    assert vectors(home) == {
        "new-log": (0, None),
        "note": (1, "hypatia-lite/hash-ngram-384"),
        "old-log": (0, None),
    }
    assert lite(capsys, "knowledge-get", "old-log") == before  # content as written
    found = json.loads(lite(capsys, "similar", "zebra"))
    assert [r["name"] for r in found] == ["note"]
    # the tag goes: the vector comes back; the setting goes: new writes are embedded again
    lite(capsys, "knowledge-update", "new-log", "-t", "note")
    assert vectors(home)["new-log"] == (1, "hypatia-lite/hash-ngram-384")
    lite(capsys, "shelf-config", "unset", "embedding.skip_tags")
    assert lite(capsys, "shelf-config", "get", "embedding.skip_tags") == "[]\n"
    lite(capsys, "knowledge-create", "later", "--data=zebra", "-t", "message")
    assert vectors(home)["later"] == (1, "hypatia-lite/hash-ngram-384")


def test_skip_tags_hold_for_batched_writes(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from hypatia_lite.protocol import EntryWrite

    lite(capsys, "shelf-config", "set", "embedding.skip_tags", "message")
    with LiteStore() as store:
        store.write_batch([EntryWrite("m", "x", ("message",)), EntryWrite("n", "y", ("note",))])
    assert vectors(home) == {"m": (0, None), "n": (1, "hypatia-lite/hash-ngram-384")}


def test_a_registered_model_serves_processes_that_name_none(
    home: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("HYPATIA_LITE_EMBEDDER")
    lite(capsys, "model", "register", "hash")
    assert lite(capsys, "model", "show") == (
        'Registered: {"HYPATIA_LITE_EMBEDDER": "hash"}\nIn use here: hypatia-lite/hash-ngram-384\n'
    )
    url = "http://127.0.0.1:9/v1"
    lite(capsys, "model", "register", "BAAI/bge-m3", "--url", url, "--key-env", "MY_KEY")
    monkeypatch.setenv("MY_KEY", "k-123")
    with LiteStore() as store:
        assert store.embedder is not None
        assert store.embedder.identity == f"openai:{url}:BAAI/bge-m3"
        assert getattr(store.embedder, "api_key", None) == "k-123"
    monkeypatch.setenv("HYPATIA_LITE_EMBEDDER", "hash")  # the environment still wins
    with LiteStore() as store:
        assert store.embedder is not None
        assert store.embedder.identity == "hypatia-lite/hash-ngram-384"
    assert "not built in" in lite(capsys, "model", "register", "BAAI/bge-m3", code=1)
    assert "takes no --url" in lite(capsys, "model", "register", "hash", "--url", url, code=1)
    lite(capsys, "model", "unregister")
    assert lite(capsys, "model", "show").startswith("Registered: none\n")
