"""One world of the convergence fuzzer: a DSH home whose logs become visible a prefix at a time,
the ``memory-worker`` commands a user (or cron, or a crash) runs on it, a model that can go down,
and a clock the test moves (``tests/convergence``).

Every command is a real ``memory-worker`` process forked from the pre-imported server
(:func:`cli_fork.run_cli`) with the hook of ``convergence_site`` on its path: its clock runs
:attr:`World.offset` seconds ahead (a back-off, a lease, the at-rest settle delay pass when the
test says so, never by sleeping), and ``MEMORY_WORKER_TEST_CRASH_AT=N`` kills it before its N-th
store write as ``kill -9`` would (``tests/support/crash_points``).

The model is the suite's local HTTP server (:mod:`model_server`) with a responder that is
deterministic in what it is shown: a summary repeating every transcript line and one work unit
whose **title quotes the transcript** (as real models' titles often do; the entry name is a slug
of it), echo for every other purpose; while :attr:`Model.down` it answers 503.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cli_fork import launcher, run_cli
from cli_support import cli_env
from conftest import REPO
from convergence_logs import Logs
from model_server import ModelServer, Reply, echo_reply, transcript_lines

SITE = REPO / "tests" / "support" / "convergence_site"
KEY_ENV = "CONVERGENCE_TEST_KEY"
#: How long the clock moves at the end so that every back-off (at most an hour) and lease is over.
PAST_EVERY_BACKOFF_S = 4000.0
#: More than the at-rest settle delay (worker.at_rest.SETTLE_NS).
SETTLE_S = 1.5
#: A store that hangs: the ``cli`` transport's binary, whose writes sleep (``hang``: all of them;
#: ``flap``: every other one) and the rest go to hypatia-lite (forked: ``cli_fork.launcher``).
STORE_WRAPPER = """#!/bin/sh
case " $* " in *" --help "*|*" -h "*) exec "$REAL_LITE" "$@" ;; esac
case "$1" in
  knowledge-create|knowledge-update|knowledge-delete|statement-create|statement-delete)
    n=$(cat "$FLAP_COUNTER" 2>/dev/null || echo 0)
    echo $((n + 1)) > "$FLAP_COUNTER"
    if [ "$STORE_FAULT" = hang ] || [ $((n % 2)) = 0 ]; then exec sleep 60; fi ;;
esac
exec "$REAL_LITE" "$@"
"""
#: The store timeout of a faulty-store run: short, so three timeouts open the breaker at once.
STORE_TIMEOUT_S = "0.5"


@dataclass
class Model:
    """The responder (see the module docstring)."""

    down: bool = False

    def __call__(self, request: Any) -> Reply:
        if self.down:
            return Reply(status=503, error="the model endpoint is down", error_type="overloaded")
        users = [m for m in request.get("messages", []) if m.get("role") == "user"]
        if not users or "<transcript>" not in str(users[-1].get("content", "")):
            return echo_reply(request)
        lines = transcript_lines(request)
        quoted = " ".join(" ".join(lines[:1]).split()[:9]) or "an empty transcript"
        payload = {
            "summary": "\n".join(lines) or "(empty)",
            "workUnits": [
                {
                    "title": f"About {quoted}",
                    "classification": "one-shot",
                    "content": "## Context\n" + "\n".join(lines),
                    "tags": ["convergence"],
                }
            ],
        }
        return Reply(content=json.dumps(payload, ensure_ascii=False))


def world_env(root: Path, server: ModelServer, **extra: str) -> dict[str, str]:
    """The environment of every command on the home under ``root`` (the same for all of them,
    so the at-rest record of one run can answer the next)."""
    return cli_env(
        root,
        XDG_CACHE_HOME=str(root / "cache"),
        MEMORY_WORKER_MODEL_ROUTES=json.dumps(
            [{"base_url": server.base_url, "model": "convergence", "api_key_env": KEY_ENV}]
        ),
        MEMORY_WORKER_ADJUDICATE="false",
        MEMORY_WORKER_CASCADE_BATCH_SIZE="2",
        MEMORY_WORKER_TASK_MAX_RETRIES="0",
        MEMORY_WORKER_RETRY_BACKOFF_S="0.1",
        MEMORY_WORKER_LEASE_WAIT_S="5",
        MW_CONVERGENCE_CLOCK=str(root / "clock"),
        **{KEY_ENV: "sk-convergence-test-key-0000000000"},
        **extra,
    )


@dataclass
class World:
    root: Path
    logs: Logs
    model: Model
    server: ModelServer
    offset: float = 0.0
    forgotten: set[str] = field(default_factory=set)
    journal: list[str] = field(default_factory=list)
    #: what a command got wrong on the way (a ``forget`` that did not forget)
    failures: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        for name in ("home", "dsh/sessions"):
            (self.root / name).mkdir(parents=True, exist_ok=True)
        (self.root / "clock").write_text("0", encoding="utf-8")

    @property
    def dsh(self) -> Path:
        return self.root / "dsh"

    def note(self, text: str) -> None:
        self.journal.append(text)

    # ------------------------------------------------------------------------------ the world

    def reveal(self, index: int, fraction: float) -> None:
        log = self.logs.files[index % len(self.logs.files)]
        shown = log.reveal(self.dsh, round(fraction * len(log.data)))
        self.note(f"reveal {log.session_id} {shown}/{len(log.data)}")

    def reveal_all(self) -> None:
        for log in self.logs.files:
            log.reveal(self.dsh, len(log.data))
        self.note("reveal all")

    def advance(self, seconds: float) -> None:
        self.offset += seconds
        (self.root / "clock").write_text(repr(self.offset), encoding="utf-8")
        self.note(f"clock +{seconds:g}s")

    def outage(self, down: bool) -> None:
        self.model.down = down
        self.note("model down" if down else "model up")

    # ------------------------------------------------------------------------------ commands

    def command(self, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
        done = run_cli(
            list(args),
            env=world_env(self.root, self.server, **extra),
            cwd=self.root,
            site_dir=SITE,
            timeout=180,
        )
        last = (done.stderr.strip().splitlines() or [""])[-1]
        self.note(f"{' '.join(args)} -> {done.returncode}: {last[:200]}")
        return done

    def run(self, how: str = "plain", crash_at: int = 0) -> subprocess.CompletedProcess[str]:
        """``run --once``: ``plain`` (the at-rest answer when a record vouches for the home),
        ``full`` (the at-rest records removed first), ``jobs2`` (``--jobs 2``); ``crash_at``
        kills it (each process of it) before its N-th store write."""
        if how == "full":
            shutil.rmtree(self.root / "cache" / "dsh-memory-worker" / "at-rest", True)
        args = ["run", "--once", *(["--jobs", "2"] if how == "jobs2" else [])]
        extra = {"MEMORY_WORKER_TEST_CRASH_AT": str(crash_at)} if crash_at else {}
        return self.command(*args, **extra)

    def store_fault(self, fault: str) -> None:
        """``run --once`` on a store that hangs or flaps (:data:`STORE_WRAPPER`): the same shelf
        through the ``cli`` transport."""
        wrapper = self.root / "faulty-hypatia"
        if not wrapper.exists():
            wrapper.write_text(STORE_WRAPPER, encoding="utf-8")
            wrapper.chmod(0o755)
        self.command(
            "run",
            "--once",
            MEMORY_WORKER_STORE_TRANSPORT="cli",
            MEMORY_WORKER_STORE_BINARY=str(wrapper),
            MEMORY_WORKER_STORE_TIMEOUT_S=STORE_TIMEOUT_S,
            STORE_FAULT=fault,
            FLAP_COUNTER=str(self.root / "flap-counter"),
            REAL_LITE=launcher("hypatia-lite"),
        )

    def forget(self, session_id: str) -> None:
        """``forget``: whatever it answers, the user asked, so the session counts as forgotten
        (the oracle never reads it); it must succeed whatever the model does."""
        self.forgotten.add(session_id)
        done = self.command("forget", session_id)
        if done.returncode != 0:
            self.failures.append(f"forget {session_id} exited {done.returncode}: {done.stderr}")

    def forgettable(self, index: int) -> str | None:
        """The ``index``-th session the generator wrote (a fixture has no record of its own)
        that no fork copied (a fork's seed is its parent's text)."""
        parents = self.logs.parents()
        ids = [r.session_id for r in self.logs.records if r.session_id not in parents]
        return ids[index % len(ids)] if ids else None

    def apply(self, step: tuple[Any, ...]) -> None:
        """One step of a plan (``tests/convergence``'s strategy spells them)."""
        kind, *args = step
        if kind == "reveal":
            self.reveal(args[0], args[1])
        elif kind == "reveal_all":
            self.reveal_all()
        elif kind == "run":
            self.run(args[0])
        elif kind == "kill":
            self.run("jobs2" if args[1] else "plain", crash_at=args[0])
        elif kind == "store":
            self.store_fault(args[0])
        elif kind == "outage":
            self.outage(args[0])
        elif kind == "clock":
            self.advance(args[0])
        elif kind == "forget":
            session_id = self.forgettable(args[0])
            if session_id is not None:
                self.forget(session_id)
        elif kind == "retract":
            self.command("retract", "--all")
        elif kind == "reconsolidate":
            self.command(
                "reconsolidate", self.logs.files[args[0] % len(self.logs.files)].session_id
            )
        else:
            raise ValueError(f"no step {kind!r}")

    def settle(self) -> None:
        """What time and cron do at the end: every log complete, the model back, a run now, one
        once the home has settled, one after every back-off is over."""
        self.reveal_all()
        self.outage(False)
        self.run("plain")
        self.advance(SETTLE_S)
        self.run("plain")
        self.advance(PAST_EVERY_BACKOFF_S)
        self.run("plain")
