"""Every shell block of README.md and docs/running.md runs as written, so docs and behaviour
cannot drift apart.

Blocks are discovered (every ```` ```sh ```` / ```` ```bash ```` fence), never copied here. Each
runs in its own sandbox (:mod:`doc_blocks`): a fresh ``HOME`` whose ``~/.dsh`` holds the shipped
fixtures (``memory-worker demo-home ~/.dsh``), a fresh working directory, none of the caller's
``MEMORY_WORKER_*`` settings. Each line is one ``bash -c`` of its own text, in order; what an
``export`` sets carries to the next lines. The policy, all of it:

- **Commands that follow forever** (``memory-worker run`` without ``--once``, ``daemon``,
  ``worker``) start in the background; the block's other lines run meanwhile; the test waits
  until every shelf the block writes holds exactly what ``run --once`` writes on the same
  fixtures (full dumps), then stops them, all at once — SIGINT (Ctrl-C) for ``run``, SIGTERM for
  ``daemon`` and ``worker`` — and each must exit 0. Every other line must exit 0, with no traceback.
- **Install lines** run against this checkout's venv, which CI made with every extra:
  ``python3 -m venv DIR`` links DIR to it, and ``pip`` / ``pipx`` / ``DIR/bin/pip install`` are
  recorded, then checked: the targets are this project (``.``, ``-e .``, ``.[extra,…]``), after
  ``./hypatia-lite`` (its store, a distribution of this repository), every extra named is
  declared in that one's pyproject.toml and every requirement of it is installed here. The
  base install (no extra) is CI's own stage in ``.ci/run``.
- **The test-suite line** (``python -m pytest …``) is recorded, not run (it would run this
  test); it must be a line of ``.ci/run``, which runs it verbatim.
- **Other hosts' services**: ``postgresql://…@db:5432/NAME`` becomes a throwaway database of the
  local server (one per NAME, so the state database and the shelf that share a URL share it here
  too), ``redis://redis:6379/N`` becomes this module's Redis database (``redis_db``);
  ``/tmp/`` becomes the sandbox's (parallel runs do not collide). No other text changes. A
  relative ``--config FILE`` the block names but does not make is created empty.
- **Celery's own tools** (``celery -A … inspect|events|purge``) need a live cluster and a terminal
  (``events`` is a curses monitor, ``purge`` asks for confirmation): a block made only of them is
  classified ``tool`` and not run; only docs/running.md may have one, README.md none.

The last test asserts that every discovered block was classified and run.
"""

from __future__ import annotations

import fcntl
import os
import re
import signal
import subprocess
import tomllib
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest
import redis
from cli_fork import run_cli
from cluster_support import wait_for
from conftest import REPO
from doc_blocks import (
    Block,
    Sandbox,
    blocks,
    commands,
    kind,
    postgres_names,
    sandboxed,
    shelves_written,
)
from redis_dbs import redis_db
from state_db_support import throwaway_pg_database

from hypatia_lite.store import LiteStore

pytestmark = pytest.mark.integration

REDIS_DB = redis_db("doc_blocks_run")  # tests/support/redis_dbs.py
REDIS_URL = f"redis://127.0.0.1:6379/{REDIS_DB}"
DOCS = ("README.md", "docs/running.md")
ALL = [b for doc in DOCS for b in blocks(REPO, doc)]
#: What each block was classified as, filled by the tests that ran it.
RAN: dict[str, str] = {}


@pytest.fixture(scope="module")
def expected_dump(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """What ``run --once`` writes on the shipped fixtures, from a sandbox of its own."""
    box = Sandbox(tmp_path_factory.mktemp("reference"))
    box.make()
    for args in (["demo-home", str(box.home / ".dsh")], ["run", "--once"]):
        done = run_cli(args, env=box.env, cwd=box.work, timeout=300)
        assert done.returncode == 0, done.stderr
    with LiteStore(home=box.home / ".hypatia-lite") as store:
        dump: dict[str, Any] = store.dump()
    assert len(dump["knowledge"]) == 28, dump  # the README's count for the fixtures
    return dump


@contextmanager
def _redis_db_to_ourselves() -> Iterator[None]:
    """Another run of this module on this machine waits: the daemon and worker of two runs must
    not share the Redis database's default queue."""
    with open(f"/tmp/dsh-memory-worker-redis-db-{REDIS_DB}.lock", "a+") as lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
        redis.Redis(db=REDIS_DB).flushdb()
        try:
            yield
        finally:
            redis.Redis(db=REDIS_DB).flushdb()
            fcntl.flock(lock.fileno(), fcntl.LOCK_UN)


def _check_installs(box: Sandbox) -> list[str]:
    """The recorded install and suite lines, each checked against the policy."""
    declared = {
        target: tomllib.loads((REPO / target / "pyproject.toml").read_text())["project"][
            "optional-dependencies"
        ]
        for target in (".", "./hypatia-lite")
    }
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    seen = []
    for call in box.shim_calls():
        name, args = call[0], call[1:]
        seen.append(" ".join(call))
        if name == "python3":
            assert args[:2] == ["-m", "venv"] and len(args) == 3, call
        elif name == "python":
            assert any(
                line.strip().endswith(" ".join(["-m", *args[1:]])) and "pytest" in line
                for line in ci
            ), f"the suite line {call} is not run by .ci/run"
        else:
            assert args[0] == "install", call
            targets = _install_targets(args[1:])
            # the worker needs hypatia-lite, a distribution of this repository, not of an index
            assert targets[-1][0] != "." or [t for t, _ in targets] == ["./hypatia-lite", "."], call
            for target, extras in targets:
                assert target in declared, f"{call}: not this project"
                for extra in extras:
                    assert extra in declared[target], f"{call}: no extra {extra!r} of {target}"
                    for requirement in declared[target][extra]:
                        dist = re.split(r"[\s\[<>=!~;]", requirement, maxsplit=1)[0]
                        assert metadata.distribution(dist), f"{call}: {dist} is not installed"
    return seen


def _install_targets(args: list[str]) -> list[tuple[str, list[str]]]:
    """The projects (``.`` or ``./hypatia-lite``) and extras of ``pip|pipx install ARGS``;
    ``-q``, ``-e`` and ``-c FILE`` aside, ``--preinstall X`` (pipx) a target too."""
    targets, skip = [], False
    for arg in args:
        if skip or arg in ("-q", "-e", "--preinstall"):
            skip = False
            continue
        if arg == "-c":
            skip = True
            continue
        found = re.fullmatch(r"(\.|\./hypatia-lite)(?:\[([\w,-]+)\])?", arg)
        assert found is not None, f"{args}: {arg} is not this project"
        targets.append((found.group(1), [e for e in (found.group(2) or "").split(",") if e]))
    assert targets, args
    return targets


def _dumps_match(home: Path, shelves: set[str], expected: dict[str, Any]) -> bool:
    try:
        for shelf in shelves:
            with LiteStore(shelf, home=home / ".hypatia-lite") as store:
                if store.dump() != expected:
                    return False
    except Exception:  # not registered or not created yet
        return False
    return True


def _signal(proc: subprocess.Popen[bytes], words: list[str]) -> None:
    sub = next(w for w in words[1:] if not w.startswith("-"))
    if sub == "run":
        os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C: the terminal signals the whole group
    else:
        proc.send_signal(signal.SIGTERM)  # what a supervisor sends


def _stopped(proc: subprocess.Popen[bytes], words: list[str], log: Path) -> None:
    try:
        code = proc.wait(timeout=90)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        raise AssertionError(
            f"{' '.join(words)} did not stop; log: " + log.read_text(errors="replace")[-2000:]
        ) from None
    text = log.read_text(errors="replace")
    assert code == 0 and "Traceback" not in text, f"{' '.join(words)} exit {code}: {text[-2000:]}"


def run_block(block: Block, box: Sandbox, expected: dict[str, Any]) -> str:
    """Run ``block`` in ``box``; returns its classification."""
    statements = block.statements()
    kinds = [kind(words) for line in statements for words in commands(line)]
    if kinds and all(k == "tool" for k in kinds):
        assert block.doc != "README.md", f"{block.id}: README blocks must run"
        return "tool"
    assert "tool" not in kinds, f"{block.id}: a block mixing Celery's tools with other lines"
    box.make()
    laid = run_cli(["demo-home", str(box.home / ".dsh")], env=box.env, cwd=box.work, timeout=120)
    assert laid.returncode == 0, laid.stderr
    followers: list[tuple[subprocess.Popen[bytes], list[str], Path]] = []
    written: set[str] = set()
    envfile = box.root / "env"
    with ExitStack() as stack:
        databases = {
            name: stack.enter_context(throwaway_pg_database())
            for line in statements
            for name in sorted(postgres_names(line))
        }
        stack.enter_context(_redis_db_to_ourselves())
        try:
            for n, line in enumerate(statements):
                text = sandboxed(line, box, databases, REDIS_URL)
                words_of = commands(text)
                for words in words_of:
                    written |= shelves_written(words)
                    if "--config" in words:
                        config = box.work / words[words.index("--config") + 1]
                        if not config.exists():
                            config.write_text("")
                if any(kind(words) == "follow" for words in words_of):
                    assert len(words_of) == 1, f"{block.id}: {line!r} must stand alone"
                    log = box.root / f"follow-{n}.log"
                    proc = subprocess.Popen(
                        ["bash", "-c", text],
                        env=box.env,
                        cwd=box.work,
                        stdout=log.open("wb"),
                        stderr=subprocess.STDOUT,
                        start_new_session=True,
                    )
                    followers.append((proc, words_of[0], log))
                    continue
                done = subprocess.run(
                    ["bash", "-c", f"{text}\n__rc=$?; env -0 > {envfile}; exit $__rc"],
                    env=box.env,
                    cwd=box.work,
                    capture_output=True,
                    text=True,
                    timeout=600,
                )
                assert done.returncode == 0 and "Traceback" not in done.stderr, (
                    f"{block.id}: {line!r} exit {done.returncode}\n{done.stdout[-1500:]}\n"
                    f"{done.stderr[-1500:]}"
                )
                pairs = envfile.read_bytes().split(b"\0")
                box.env = dict(p.decode().split("=", 1) for p in pairs if b"=" in p)
            if written:

                def full() -> bool:
                    for proc, words, log in followers:  # one that stopped by itself is a failure
                        assert proc.poll() is None, (
                            f"{block.id}: {' '.join(words)} exited {proc.returncode}: "
                            + log.read_text(errors="replace")[-2000:]
                        )
                    return _dumps_match(box.home, written, expected)

                wait_for(
                    full,
                    240,
                    f"{block.id}: shelves {sorted(written)} to equal run --once's",
                    every=0.25,
                )
            for proc, words, _log in followers:  # all at once: each shuts down meanwhile
                _signal(proc, words)
            for proc, words, log in followers:
                _stopped(proc, words, log)
        finally:
            for proc, _, _ in followers:
                if proc.poll() is None:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
    recorded = _check_installs(box)  # each install and suite line went through the policy
    assert len(recorded) == kinds.count("install") + kinds.count("suite"), recorded
    return "run"


@pytest.mark.parametrize("block", ALL, ids=[b.id for b in ALL])
def test_block_runs_as_written(block: Block, tmp_path: Path, expected_dump: dict[str, Any]) -> None:
    RAN[block.id] = run_block(block, Sandbox(tmp_path), expected_dump)


def test_every_block_was_classified_and_run() -> None:
    """Runs last in this module: no block was left out, README's all ran, and the distributed
    recipe (a daemon and a worker with the store URL) is among them in both documents."""
    assert set(RAN) == {b.id for b in ALL}
    readme = [b for b in ALL if b.doc == "README.md"]
    assert readme and all(RAN[b.id] == "run" for b in readme)
    for doc in DOCS:
        recipe = [
            b
            for b in ALL
            if b.doc == doc
            and "memory-worker daemon" in b.text
            and "MEMORY_WORKER_STORE_SHELF_URL" in b.text
        ]
        assert len(recipe) == 1 and RAN[recipe[0].id] == "run", doc
    assert {b.id for b in ALL if RAN[b.id] == "tool"} <= {
        b.id for b in ALL if b.doc == "docs/running.md"
    }
