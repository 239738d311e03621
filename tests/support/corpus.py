"""A realistic corpus of DSH session logs, written as real files, for the forgetting tests.

Users here behave like users: the same request in several sessions, a prompt retyped after a
rewind with small edits, boilerplate assistant replies ("Reading the file now."), the same tool
output again and again, Chinese, Russian and accented French, long sessions and secrets pasted
into prompts. Withdrawn and kept text overlap by construction.

Logs are written in the current format (V4, ``session.v4.jsonl``) and in the forms DSH 0.1.x
wrote: V3 (``session.v3.jsonl``, markers ``{kind: 'plugin', plugin: 'dsh-rewind' | 'rollback'}``,
tool results as ``role: 'user'`` messages wrapping a ``tool-result`` block) and V0
(``session.jsonl``, replace ops spelled ``{op: 'replace', start, end}``, no ``stream``; the early
dsh-rewind marker is an empty ``assistant/message`` whose provider is ``dsh-rewind``) — facts from
the DSH session format reference (§0.2, §7.1, §7.2).

The writer keeps its **own** record of what each marker withdrew (:class:`SessionRecord`): the
surface it folds itself, never the project's withdrawal code, so tests can build an oracle from it.
"""

from __future__ import annotations

import json
import random
import re
import string
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from worker_dshgen import session_dir

#: kinds of withdrawal marker the writer can append
REWIND = "rewind"
ROLLBACK = "rollback"
ROLLBACK_TEXT = (
    "Automated checkpoint: earlier messages removed, files restored to that point. "
    "Continue from what remains; don't mention this checkpoint."
)
PROVIDER = {"kind": "model", "provider": "deepseek-official", "model": "deepseek-v4-flash"}

#: requests users make in many sessions (verbatim)
REQUESTS = (
    "Please run the test suite and tell me which tests fail.",
    "Can you refactor the parser module to use streaming reads?",
    "Add type hints to the config loader and fix what mypy reports.",
    "Why does the build fail on the CI machine but not on my laptop?",
    "Write a short README section about the deployment steps.",
    "请帮我检查一下配置文件里的数据库地址。",
    "Пожалуйста, добавь тесты для модуля разбора логов.",
    "Vérifie la configuration du déploiement et corrige les chemins d'accès.",
)
#: assistant replies every session has
BOILERPLATE = (
    "Reading the file now.",
    "Let me look at the test output first.",
    "Running the tests again to be sure.",
    "I will check the configuration before changing anything.",
    "Done. All tests pass now and nothing else changed.",
    "好的，我先看一下这个文件。",
    "Хорошо, сначала посмотрю на этот файл.",
)
#: tool output that repeats across calls and sessions
TOOL_OUTPUT = (
    "<path>/home/dev/work/notes.txt</path>\n<content>\n1: alpha line one\n</content>\n"
    "(End of file - total 1 lines)",
    "============ 42 passed in 3.21s ============\n[exit code: 0]",
    "error: could not find module 'parser'\n[exit code: 1]",
)
SYLLABLES = ("ka", "zu", "mir", "tol", "ven", "qua", "dro", "sel", "bix", "nor", "pha", "gre")


def pseudo_word(rng: random.Random, parts: int = 3) -> str:
    """A made-up word (``"kazumir"``): what makes one message's text its own."""
    return "".join(rng.choice(SYLLABLES) for _ in range(parts))


def secret(rng: random.Random) -> str:
    """An OpenAI-style key the content policy must redact."""
    alphabet = string.ascii_letters + string.digits
    return "sk-proj-" + "".join(rng.choice(alphabet) for _ in range(48))


@dataclass
class Said:
    """One loggable message: its seq, ordinal (entry ``msg-<sid>-<ordinal>``), role and text."""

    seq: int
    ordinal: int
    role: str
    text: str
    secret: str | None = None


@dataclass
class Withdrawal:
    """One marker the writer appended, and the loggable message seqs it shadowed."""

    marker_seq: int
    kind: str
    spelling: dict[str, Any]
    withdrawn: tuple[int, ...]


@dataclass
class SessionRecord:
    """The generator's own account of a session: every loggable message and every withdrawal."""

    session_id: str
    cwd: str
    version: int
    path: Path
    said: list[Said] = field(default_factory=list)
    withdrawals: list[Withdrawal] = field(default_factory=list)
    #: (title text, the prompt seq it cites) of the session's only ``session/title``
    title: tuple[str, int] | None = None

    @property
    def withdrawn_seqs(self) -> set[int]:
        return {seq for w in self.withdrawals for seq in w.withdrawn}

    def kept(self) -> list[Said]:
        gone = self.withdrawn_seqs
        return [m for m in self.said if m.seq not in gone]

    def withdrawn(self) -> list[Said]:
        gone = self.withdrawn_seqs
        return [m for m in self.said if m.seq in gone]

    def names(self, messages: list[Said]) -> set[str]:
        return {f"msg-{self.session_id}-{m.ordinal}" for m in messages}

    def node_text(self) -> str | None:
        """The session node's text: the title, unless the prompt it cites was withdrawn."""
        if self.title is None or self.title[1] in self.withdrawn_seqs:
            return None
        return self.title[0]


class CorpusLog:
    """Writes one session log in DSH format ``version`` (0, 3 or 4) and records what it said."""

    def __init__(
        self, home: Path, session_id: str, cwd: str, *, version: int = 4, created_at: int = 0
    ) -> None:
        assert version in (0, 3, 4)
        import time

        self.version = version
        self.created_at = created_at or int(time.time() * 1000) - 600_000
        self.time = self.created_at + 1000
        self.seq = 0
        self.turn_no = 0
        self.surface: list[int] = []
        self.loggable: set[int] = set()
        self._pending: list[str] = []
        directory = session_dir(home, session_id, cwd)
        directory.mkdir(parents=True, exist_ok=True)
        name = "session.jsonl" if version == 0 else f"session.v{version}.jsonl"
        self.record = SessionRecord(session_id, cwd, version, directory / name)
        header: dict[str, Any] = {
            "type": "session",
            "version": version,
            "id": session_id,
            "createdAt": self.created_at,
            "cwd": cwd,
        }
        if version >= 2:
            header["isSeeded"] = False
        header["delegationDepth"] = 0
        self._pending.append(json.dumps(header, separators=(",", ":")))
        self.flush()

    # ------------------------------------------------------------------------------ plumbing

    def _event(self, type_: str, data: Any, **extra: Any) -> int:
        self.time += 5
        row: dict[str, Any] = {"type": type_, "seq": self.seq, "time": self.time, "data": data}
        row.update(extra)
        self._pending.append(json.dumps(row, separators=(",", ":"), ensure_ascii=False))
        self.seq += 1
        return self.seq - 1

    def _surface_event(self, type_: str, data: Any, *, loggable: bool) -> int:
        seq = self._event(type_, data, surfaceOp="append")
        self.surface.append(seq)
        if loggable:
            self.loggable.add(seq)
        return seq

    def flush(self) -> None:
        """Append what is pending as one durable batch."""
        if self._pending:
            with self.record.path.open("a", encoding="utf-8") as handle:
                handle.write("\n".join(self._pending) + "\n")
            self._pending.clear()

    def _said(self, seq: int, role: str, text: str, secret_: str | None) -> None:
        ordinal = len(self.record.said)
        self.record.said.append(Said(seq, ordinal, role, text, secret_))

    # ------------------------------------------------------------------------------- content

    def _prompt(self, text: str, secret_: str | None) -> int:
        data = {
            "id": f"m-u-{self.seq}",
            "role": "user",
            "content": [{"type": "text", "text": text}],
            "source": {"kind": "user"},
        }
        seq = self._surface_event("user/message", data, loggable=True)
        self._said(seq, "user", text, secret_)
        return seq

    def _reply(self, text: str, step: int) -> int:
        message = {
            "id": f"m-a-{self.seq}",
            "role": "assistant",
            "content": [{"type": "text", "text": text}],
            "source": dict(PROVIDER),
        }
        data: dict[str, Any] = {"turn": self.turn_no, "step": step, "message": message}
        if self.version >= 2:
            data["stream"] = [
                {
                    "type": "chunk",
                    "time": self.time + 1,
                    "chunk": {"type": "text-delta", "index": 0, "text": text},
                },
                {
                    "type": "chunk",
                    "time": self.time + 1,
                    "chunk": {"type": "finish", "reason": {"kind": "stop"}},
                },
            ]
        seq = self._surface_event("assistant/message", data, loggable=True)
        self._said(seq, "assistant", text, None)
        return seq

    def _tool(self, name: str, output: str, step: int) -> None:
        call_id = f"call-{self.seq}"
        self._event(
            "tool/call",
            {
                "turn": self.turn_no,
                "step": step,
                "callId": call_id,
                "name": name,
                "arguments": "{}",
            },
        )
        if self.version >= 4:
            message: dict[str, Any] = {
                "role": "tool",
                "source": {"kind": "tool", "callId": call_id},
                "toolCallId": call_id,
                "content": [{"type": "text", "text": output}],
                "isError": False,
            }
        else:
            message = {
                "role": "user",
                "source": {"kind": "tool", "callId": call_id},
                "content": [
                    {
                        "type": "tool-result",
                        "toolCallId": call_id,
                        "isError": False,
                        "content": [{"type": "text", "text": output}],
                    }
                ],
            }
        self._surface_event(
            "tool/result", {"turn": self.turn_no, "step": step, "message": message}, loggable=False
        )

    def turn(
        self,
        prompt: str,
        replies: list[str],
        tools: Sequence[tuple[str, str]] = (),
        *,
        secret_: str | None = None,
        title: str | None = None,
    ) -> int:
        """A completed turn: the prompt, then one step per reply (a tool call and its output
        between steps, from ``tools``); returns the prompt's seq."""
        self.turn_no += 1
        turn = self.turn_no
        self._event("turn/start", {"turn": turn})
        prompt_seq = -1
        for step, reply in enumerate(replies, start=1):
            self._event("step/start", {"turn": turn, "step": step})
            if step == 1:
                prompt_seq = self._prompt(prompt, secret_)
                if title is not None and self.record.title is None:
                    self._event(
                        "session/title",
                        {
                            "title": title,
                            "messageSeqs": [prompt_seq],
                            "source": {"kind": "fallback"},
                        },
                    )
                    self.record.title = (title, prompt_seq)
            self._reply(reply, step)
            if step <= len(tools):
                self._tool(*tools[step - 1], step)
            self._event("step/end", {"turn": turn, "step": step})
        self._event("turn/end", {"turn": turn, "reason": {"kind": "completed"}})
        return prompt_seq

    # ---------------------------------------------------------------------------- withdrawals

    def withdraw(self, prompt_seq: int, kind: str = REWIND, *, legacy: bool = False) -> int:
        """A rewind (or a rollback) to the turn whose prompt is ``prompt_seq``: every surface node
        from it to the tail is shadowed. ``legacy`` on V0 writes the early dsh-rewind marker (an
        empty ``assistant/message``). Returns the marker's seq."""
        index = self.surface.index(prompt_seq)
        shadowed = self.surface[index:]
        if self.version >= 3:
            op: dict[str, Any] = {"op": "replace", "startSeq": shadowed[0], "endSeq": shadowed[-1]}
        else:
            op = {"op": "replace", "start": shadowed[0], "end": shadowed[-1]}
        plugin = "dsh-rewind" if kind == REWIND else "rollback"
        if self.version >= 4:
            source: dict[str, Any] = {"kind": "dsh-rewind" if kind == REWIND else "plugin:rollback"}
        else:
            source = {"kind": "plugin", "plugin": plugin}
        text = "(empty message)" if kind == REWIND else ROLLBACK_TEXT
        if legacy and self.version == 0 and kind == REWIND:
            source = {"kind": "model", "provider": "dsh-rewind", "model": "rewind-marker"}
            data: dict[str, Any] = {
                "turn": self.turn_no + 1,
                "step": 0,
                "message": {
                    "id": f"m-rw-{self.seq}",
                    "role": "assistant",
                    "content": [],
                    "source": source,
                },
            }
            seq = self._event("assistant/message", data, surfaceOp=op, sourceEventSeqs=shadowed)
        else:
            data = {
                "id": f"m-rw-{self.seq}",
                "role": "user",
                "content": [{"type": "text", "text": text}],
                "source": source,
            }
            seq = self._event("user/message", data, surfaceOp=op, sourceEventSeqs=shadowed)
        self.surface[index:] = [seq]
        self.record.withdrawals.append(
            Withdrawal(seq, kind, source, tuple(s for s in shadowed if s in self.loggable))
        )
        return seq


# ---------------------------------------------------------------------------------- phrasebook


@dataclass
class Phrasebook:
    """Seeded text choices: shared requests and boilerplate, plus one made-up detail per message
    so that every message also has words of its own."""

    rng: random.Random

    def request(self) -> str:
        return self.rng.choice(REQUESTS)

    def detail_prompt(self) -> str:
        word = pseudo_word(self.rng)
        return self.rng.choice(
            (
                f"Please run the test suite for the {word} service and tell me which tests fail.",
                f"Can you refactor the {word} parser to use streaming reads and keep the old API?",
                f"The {word} deployment fails with a timeout, look at the logs in /var/log/{word}.",
                f"请检查 {word} 模块的配置文件，数据库地址好像不对。",
                f"Пожалуйста, проверь сервис {word} и добавь тесты для разбора логов.",
                f"Vérifie le service {word} : le déploiement échoue à cause des chemins d'accès.",
            )
        )

    def retyped(self, prompt: str) -> str:
        """The same prompt typed again with a small edit (what most rewinds are followed by)."""
        edits = (
            lambda p: p.rstrip(".?!。") + ", please.",
            lambda p: p.replace("Please ", "Could you ", 1) if "Please " in p else "Also: " + p,
            lambda p: p.replace("tests", "unit tests", 1) if "tests" in p else p + " Thanks!",
        )
        return self.rng.choice(edits)(prompt)

    def reply(self, prompt: str) -> str:
        word = pseudo_word(self.rng)
        return self.rng.choice(
            (
                f"I changed the {word} handler and the tests pass now.",
                f"The failure comes from the {word} fixture: it reads a stale path.",
                f"Summary: the {word} step was missing a retry, added one with a backoff.",
                f"修改了 {word} 的配置，数据库地址已经更正。",
                f"Готово: в модуле {word} исправлен разбор логов.",
            )
        )

    def boilerplate(self) -> str:
        return self.rng.choice(BOILERPLATE)

    def tool(self) -> tuple[str, str]:
        return self.rng.choice(
            (("read", TOOL_OUTPUT[0]), ("bash", TOOL_OUTPUT[1]), ("bash", TOOL_OUTPUT[2]))
        )

    def with_secret(self) -> tuple[str, str]:
        key = secret(self.rng)
        return (
            f"Use this key for the staging run: OPENAI_API_KEY={key} and rerun the "
            f"{pseudo_word(self.rng)} job."
        ), key


# ------------------------------------------------------------------------------------- corpus

PROJECTS = ("/home/dev/widget", "/home/dev/ledger")


@dataclass
class Corpus:
    """Sessions written into a DSH home, each with its log writer and its own record."""

    home: Path
    book: Phrasebook
    logs: list[CorpusLog] = field(default_factory=list)

    @property
    def records(self) -> list[SessionRecord]:
        return [log.record for log in self.logs]

    def flush(self) -> None:
        for log in self.logs:
            log.flush()


def _turn(
    log: CorpusLog,
    book: Phrasebook,
    prompt: str,
    *,
    title: str | None = None,
    secret_: str | None = None,
) -> int:
    """A turn as users see them: a boilerplate step running a tool, then the real answer (or,
    one time in three, a single boilerplate step)."""
    if book.rng.random() < 1 / 3:
        return log.turn(prompt, [book.boilerplate()], secret_=secret_, title=title)
    return log.turn(
        prompt,
        [book.boilerplate(), book.reply(prompt)],
        [book.tool()],
        secret_=secret_,
        title=title,
    )


def session_prompts(book: Phrasebook, turns: int) -> list[tuple[str, str | None]]:
    """``turns`` prompts with their secret: shared requests verbatim, prompts with details of
    their own, and now and then a secret pasted in."""
    prompts: list[tuple[str, str | None]] = []
    for _ in range(turns):
        roll = book.rng.random()
        if roll < 0.35:
            prompts.append((book.request(), None))
        elif roll < 0.9:
            prompts.append((book.detail_prompt(), None))
        else:
            prompts.append(book.with_secret())
    return prompts


def write_session(
    corpus: Corpus,
    session_id: str,
    *,
    version: int,
    turns: int,
    cwd: str | None = None,
    early_rewind: bool = True,
) -> CorpusLog:
    """One session of ``turns`` turns; with ``early_rewind`` a rewind (or rollback) in the middle,
    followed by the withdrawn prompt retyped with a small edit — all in the first batch."""
    book = corpus.book
    log = CorpusLog(corpus.home, session_id, cwd or book.rng.choice(PROJECTS), version=version)
    prompts = session_prompts(book, turns)
    seqs: list[int] = []
    for n, (prompt, key) in enumerate(prompts):
        title = " ".join(prompt.split()[:4]) if n == 0 else None
        seqs.append(_turn(log, book, prompt, title=title, secret_=key))
        if early_rewind and n == turns // 2 and n > 0:
            back = book.rng.randrange(1, n + 1)
            kind = book.rng.choice((REWIND, ROLLBACK))
            log.withdraw(seqs[back], kind, legacy=book.rng.random() < 0.5)
            del seqs[back:]
            _retype(log, book, prompts[back][0], seqs, prompts[back][1])
    log.flush()
    corpus.logs.append(log)
    return log


def _retype(
    log: CorpusLog, book: Phrasebook, prompt: str, seqs: list[int], secret_: str | None = None
) -> None:
    seqs.append(_turn(log, book, book.retyped(prompt), secret_=secret_))


def late_withdrawal(corpus: Corpus, log: CorpusLog) -> None:
    """After the worker wrote the session: rewind to one of its turns (never the first, so the
    title usually stays), retype that prompt with a small edit, and flush."""
    book = corpus.book
    record = log.record
    prompts = [m for m in record.said if m.role == "user" and m.seq in log.surface]
    if len(prompts) < 2:
        return
    target = book.rng.choice(prompts[1:])
    log.withdraw(target.seq, book.rng.choice((REWIND, ROLLBACK)), legacy=book.rng.random() < 0.5)
    _retype(log, book, target.text, [], target.secret)
    log.flush()


def realistic_corpus(home: Path, *, seed: int = 21, sessions: int = 6, turns: int = 8) -> Corpus:
    """``sessions`` sessions (V4, V3 and V0 in turn, two projects), each with an early rewind;
    one long session of ``4 × turns`` turns among them."""
    corpus = Corpus(home, Phrasebook(random.Random(seed)))
    versions = (4, 3, 0)
    for n in range(sessions):
        write_session(
            corpus, f"corpus-{n:02d}", version=versions[n % 3], turns=turns * 4 if n == 1 else turns
        )
    return corpus


# ----------------------------------------------------------------------------------- checking


def withdrawn_only_words(records: list[SessionRecord]) -> set[str]:
    """Made-up words only withdrawn messages hold (by the generator's own record), whose first
    six letters are in no kept text (the full-text index keeps stems, so a byte check looks for
    those six)."""
    kept = " ".join(m.text for r in records for m in r.kept()).lower()
    return {
        w.lower()
        for r in records
        for m in r.withdrawn()
        for w in re.findall(r"\w+", m.text)
        if w.isascii()
        and w.isalpha()
        and len(w) >= 6
        and any(w.startswith(s) for s in SYLLABLES)
        and w[:6].lower() not in kept
    }


def files_holding(root: Path, found: set[str]) -> dict[str, list[str]]:
    """Each file under ``root`` (recursively) whose bytes hold the first six letters of one of
    ``found``, with those words."""
    held: dict[str, list[str]] = {}
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        data = path.read_bytes().lower()
        hits = [w for w in sorted(found) if w[:6].encode() in data]
        if hits:
            held[str(path)] = hits
    return held
