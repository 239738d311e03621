"""A work unit's name is a slug of the model's title, and a model may quote the transcript in
it. When the unit is retracted, no column of the state database may keep those words: the audit
names units by a stable id (``wu-*-<digest>-<hash>``, no slug), and so does provenance. Checked
with a model whose titles quote the last transcript line: after a rewind (and its repair) and a
``forget``, no withdrawn or forgotten word in any byte of the state database or the shelf, and
``verify-forgetting`` exits 0. A home whose audit and provenance already hold such names is
cleaned by the migration (:func:`test_the_migration_cleans_a_home_written_before`)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from bytes_support import TokenSession, leaks, present, shelf_files, state_files
from canary_support import cli, cli_env, dump_text, process, runtime_for
from model_server import (  # noqa: F401
    ModelServer,
    Reply,
    echo_reply,
    model_server_fixture,
    transcript_lines,
)

pytestmark = pytest.mark.integration


def quoting_reply(request: Any) -> Reply:
    """Extraction: the summary is every transcript line; one work unit titled with the last
    line (the model quotes the transcript in its title). Anything else: echo."""
    users = [m for m in request.get("messages", []) if m.get("role") == "user"]
    if not users or "<transcript>" not in str(users[-1].get("content", "")):
        return echo_reply(request)
    lines = transcript_lines(request)
    payload = {
        "summary": "\n".join(lines) or "(empty)",
        "workUnits": [
            {
                "title": f"lesson {lines[-1] if lines else 'none'}",
                "classification": "one-shot",
                "content": "## Context\n" + "\n".join(lines),
                "tags": ["canary"],
            }
        ],
    }
    return Reply(content=json.dumps(payload, ensure_ascii=False))


def _files(root: Path) -> list[Path]:
    return shelf_files(root / "lite") + state_files(root)


def _units(root: Path) -> list[str]:
    text = json.loads(dump_text(root))
    return sorted(row["name"] for row in text["knowledge"] if row["name"].startswith("wu-"))


def test_a_retracted_unit_named_after_withdrawn_words_leaves_no_trace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, model_server: ModelServer
) -> None:
    model_server.responder = quoting_reply
    runtime = runtime_for(tmp_path, model_server, monkeypatch)
    s = TokenSession.start(tmp_path, "s-t")
    gone = TokenSession.start(tmp_path, "s-g")
    for label in ("1", "2", "3"):
        s.turn(label)
    gone.turn("1")
    second = s.turns[1]
    process(runtime)
    units = _units(tmp_path)
    last = s.canary("3", "ANSWER").lower()
    assert [u for u in units if last[:12] in u]  # the slug quotes the withdrawn line

    _, withdrawn = s.rewind(second.user_seq)
    process(runtime)
    runtime.close()
    assert not [u for u in _units(tmp_path) if last[:12] in u]
    assert leaks(_files(tmp_path), withdrawn) == []
    kept = s.kept(withdrawn)
    assert present(shelf_files(tmp_path / "lite"), kept) == set(kept)

    env = cli_env(tmp_path, model_server)
    done = cli(["forget", "s-g"], env)
    assert done.returncode == 0, done.stderr
    assert cli(["run", "--once"], env).returncode == 0
    doomed = [*withdrawn, *gone.canaries.values()]
    assert leaks(_files(tmp_path), doomed) == []
    verified = cli(["verify-forgetting"], env)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    retracted = cli(["retract", "--all"], env)
    assert retracted.returncode == 0, retracted.stderr
    # The audit still names each retracted unit, by its stable id.
    db = sqlite3.connect(tmp_path / "data" / "state.db")
    subjects = [
        subject
        for (subject,) in db.execute(
            "SELECT subject FROM audit WHERE action = 'repair-work-unit' ORDER BY id"
        )
    ]
    names = [n for (n,) in db.execute("SELECT name FROM provenance WHERE kind = 'work-unit'")]
    db.close()
    assert subjects and all(sub.startswith("wu-*-") for sub in subjects), subjects
    assert names and all(n.startswith("wu-*-") for n in names), names


def test_the_migration_cleans_a_home_written_before(tmp_path: Path) -> None:
    """Rows an older worker wrote (a unit's slug quoting a message) are rewritten to stable ids
    when the database is opened, and the old text leaves the files."""
    from bytes_support import token

    from dsh_memory_worker.worker.state.database import StateDB
    from dsh_memory_worker.worker.state.migrate import upgrade

    secret = token("old-unit-title")
    name = f"wu-lesson-reply-{secret.lower()}-0a1b2c3d"
    (tmp_path / "data").mkdir()
    path = tmp_path / "data" / "state.db"
    url = f"sqlite:///{path}"
    upgrade(url, "shipping_1")  # the schema an older worker left
    db = sqlite3.connect(path)
    db.execute(
        "INSERT INTO audit (action, outcome, shelf, session_id, subject, at) "
        "VALUES ('repair-work-unit', 'retracted', 'default', 's-1', ?, '2026-12-01 00:00:00')",
        (name,),
    )
    db.execute(
        "INSERT INTO audit (action, outcome, shelf, session_id, subject, at) "
        "VALUES ('repair-summary', 'regenerated', 'default', 's-1', 'sum-s-1-0-6', "
        "'2026-12-01 00:00:00')"
    )
    db.execute(
        "INSERT INTO provenance (shelf, name, kind, session_id, route, model, prompt_version, "
        "written_at) VALUES ('default', ?, 'work-unit', 's-1', 'r', 'm', 'p', "
        "'2026-12-01 00:00:00')",
        (name,),
    )
    db.commit()
    db.close()
    files = state_files(tmp_path)
    assert leaks(files, [secret])  # the control: the old name is in the bytes

    state = StateDB.open(url)
    with state.read() as repos:
        subjects = [e.subject for e in repos.audit.entries()]
        kept = repos.provenance.get_many("default", [name])
    state.dispose()
    assert subjects == ["wu-*-0a1b2c3d-" + _name_hash(name), "sum-s-1-0-6"]
    assert list(kept) == [name] and kept[name].kind == "work-unit"  # still found by its name
    assert leaks(state_files(tmp_path), [secret]) == []


def _name_hash(name: str) -> str:
    import hashlib

    return hashlib.sha256(name.encode()).hexdigest()[:8]
