"""The logs the convergence fuzzer grows: their final bytes, written once into a staging home,
then made visible to the worker a prefix at a time (``tests/convergence``).

Every session is written to its end first, with the writers the forgetting tests use
(:mod:`corpus`: overlapping requests and boilerplate, Chinese, Russian and French, secrets,
rewinds and rollbacks in V4, V3 and V0 spellings) plus:

* a **fork**: a child whose header says ``isSeeded: true`` and ``parentSession``, whose first
  events are a copy of the parent's (same seqs), ended by ``session/end-seed``
  ``{inherited: true}`` — what DSH writes when a session forks — then turns of its own;
* a **late marker**: the parent rewinds one of its turns after the fork (so text the child's
  seed copied is withdrawn), and retypes it;
* **zstd** logs: the final raw bytes cut at line boundaries into several frames
  (``session.v4.jsonl.zstd``), as DSH writes them, so a visible prefix can end inside a frame;
* optionally the shipped DSH 0.2 fixtures of a real fork (a parent and its seeded subagent
  child) and a compaction, zstd as DSH wrote them.

A :class:`LogFile` is one file: its final bytes, its path relative to the DSH home and how many
of its bytes the worker may see so far (:meth:`LogFile.reveal` appends the next ones, as the
writer would). The oracle reads the final bytes (:meth:`Logs.write_final`).
"""

from __future__ import annotations

import json
import random
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path

import zstandard
from conftest import REPO

sys.path.insert(0, str(REPO / "benchmarks"))  # corpus writes with worker_dshgen's layout
from corpus import (
    PROJECTS,
    Corpus,
    CorpusLog,
    Phrasebook,
    SessionRecord,
    late_withdrawal,
    write_session,
)

FIXTURE_SESSIONS = REPO / "tests" / "fixtures" / "dsh-0.2" / "sessions" / "--home-dev-work--"
#: The shipped fixtures a world may add: a real fork (parent, then its seeded child) and a
#: session with a compaction.
FIXTURE_IDS = ("d02-f-fork-parent", "886efd7b-65cc-4648-abdf-ddbfa8c9e999", "d02-g-compact")
FIXTURE_PARENT = {"886efd7b-65cc-4648-abdf-ddbfa8c9e999": "d02-f-fork-parent"}


@dataclass
class LogFile:
    """One session log: final bytes, where it lives under the DSH home, how much is visible."""

    session_id: str
    rel: Path
    data: bytes
    parent: str | None = None
    record: SessionRecord | None = None  # the corpus writer's own account (None: a fixture)
    shown: int = 0

    def reveal(self, home: Path, upto: int) -> int:
        """Make the first ``upto`` bytes visible (never fewer than already are): the writer
        appends what was missing. Returns the visible length."""
        upto = max(self.shown, min(upto, len(self.data)))
        if upto > self.shown:
            path = home / self.rel
            path.parent.mkdir(parents=True, exist_ok=True)
            with path.open("ab") as handle:
                handle.write(self.data[self.shown : upto])
            self.shown = upto
        return self.shown

    @property
    def complete(self) -> bool:
        return self.shown == len(self.data)


@dataclass
class Logs:
    files: list[LogFile] = field(default_factory=list)

    @property
    def records(self) -> list[SessionRecord]:
        return [f.record for f in self.files if f.record is not None]

    def by_id(self, session_id: str) -> LogFile:
        return next(f for f in self.files if f.session_id == session_id)

    def parents(self) -> set[str]:
        return {f.parent for f in self.files if f.parent is not None}

    def write_final(self, home: Path, *, without: frozenset[str] = frozenset()) -> None:
        """The final logs under ``home`` (the oracle's input), minus the sessions ``without``."""
        for f in self.files:
            if f.session_id in without:
                continue
            path = home / f.rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(f.data)


def _seeded_child(home: Path, parent: CorpusLog, child_id: str) -> CorpusLog:
    """A fork of ``parent`` as DSH writes it: a seeded header naming the parent, the parent's
    events so far (same seqs), ``session/end-seed {inherited: true}``; the writer then goes on
    with the child's own turns (its record holds only those)."""
    parent.flush()
    child = CorpusLog(home, child_id, parent.record.cwd, version=parent.version)
    lines = parent.record.path.read_text(encoding="utf-8").splitlines()
    header = json.loads(lines[0])
    header.update(id=child_id, parentSession=parent.record.session_id, isSeeded=True)
    header["createdAt"] = parent.time
    child.record.path.write_text(
        "\n".join([json.dumps(header, separators=(",", ":")), *lines[1:]]) + "\n",
        encoding="utf-8",
    )
    child.seq = parent.seq
    child.time = parent.time
    child._event("session/end-seed", {"inherited": True})
    child.flush()
    return child


def _zstd_frames(raw: bytes, rng: random.Random) -> bytes:
    """``raw`` as several zstd frames, each ending on a line boundary (DSH's flushes; the
    header line is a frame of its own)."""
    lines = raw.splitlines(keepends=True)
    compressor = zstandard.ZstdCompressor(level=3)
    out = bytearray(compressor.compress(lines[0]))
    start = 1
    while start < len(lines):
        end = min(len(lines), start + rng.randint(1, 12))
        out += compressor.compress(b"".join(lines[start:end]))
        start = end
    return bytes(out)


def grow(
    staging: Path,
    seed: int,
    *,
    sessions: int = 2,
    turns: int = 4,
    fork: bool = True,
    late: bool = True,
    zstd: bool = True,
    fixtures: bool = False,
) -> Logs:
    """The final logs of one world, written under ``staging`` (a DSH home) and read back."""
    rng = random.Random(seed)
    corpus = Corpus(staging, Phrasebook(rng))
    versions = (4, 3, 0)
    for n in range(sessions):  # one project: their summaries share archives
        write_session(
            corpus, f"conv-{n}", version=versions[(seed + n) % 3], turns=turns, cwd=PROJECTS[0]
        )
    parents: dict[str, str] = {}
    if fork:
        parent = next(log for log in corpus.logs if log.version >= 3)
        child = _seeded_child(staging, parent, "conv-fork")
        for _ in range(2):
            prompt = corpus.book.detail_prompt()
            child.turn(prompt, [corpus.book.reply(prompt)])
        child.flush()
        corpus.logs.append(child)
        parents[child.record.session_id] = parent.record.session_id
    if late:  # the fork's parent, when there is one: text its child's seed copied
        late_withdrawal(corpus, next(log for log in corpus.logs if log.version >= 3 or not fork))
    logs = Logs()
    for log in corpus.logs:
        path = log.record.path
        data = path.read_bytes()
        rel = path.relative_to(staging)
        if zstd and log.version == 4 and rng.random() < 0.5:
            data = _zstd_frames(data, rng)
            rel = rel.with_name(rel.name + ".zstd")
        sid = log.record.session_id
        logs.files.append(LogFile(sid, rel, data, parents.get(sid), log.record))
    if fixtures:
        for sid in FIXTURE_IDS:
            source = FIXTURE_SESSIONS / sid / "session.v4.jsonl.zstd"
            rel = source.relative_to(FIXTURE_SESSIONS.parent.parent)
            logs.files.append(LogFile(sid, rel, source.read_bytes(), FIXTURE_PARENT.get(sid)))
    shutil.rmtree(staging)
    return logs
