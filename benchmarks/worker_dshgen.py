"""Write valid DSH V4 session logs into a DSH home, for the worker's tests and benchmarks.

A small writer that keeps the invariants a V4 reader checks (dense seqs, integer times, open
turn/step bookkeeping, the surface fold for replacements), so generated logs read exactly like
what DSH persists: ``<home>/sessions/--<projectKey(cwd)>--/<sessionId>/session.v4.jsonl[.zstd]``.

Used by ``tests/e2e/test_e2e_*.py`` / ``tests/watch/test_watch_*.py`` and
``benchmarks/worker_bench.py``.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import zstandard

PROVIDER = {"kind": "model", "provider": "deepseek-official", "model": "deepseek-v4-flash"}


def project_key(cwd: str) -> str:
    """DSH's ``projectKey(cwd)`` for ASCII paths (format doc §4.1)."""
    out: list[str] = []
    for ch in cwd:
        if ch in "/\\:":
            if not out or out[-1] != "-":
                out.append("-")
        elif re.fullmatch(r"[A-Za-z0-9._-]", ch):
            out.append(ch)
        else:
            out.append(f"~{ord(ch):04X}")
    slug = "".join(out).lstrip("-") or "root"
    return f"--{slug[:251]}--"


def session_dir(home: Path, session_id: str, cwd: str) -> Path:
    return home / "sessions" / project_key(cwd) / session_id


@dataclass
class TurnSeqs:
    turn: int
    user_seq: int
    assistant_seq: int
    turn_end_seq: int


@dataclass
class SessionLogWriter:
    """Appends V4 events to one session log; call :meth:`flush` to make a batch durable."""

    home: Path
    session_id: str
    cwd: str
    created_at: int = 0  # 0 = now (event times then read as live; old times make turns "long")
    compressed: bool = False
    step_ms: int = 7
    seq: int = 0
    time: int = 0
    turn_no: int = 0
    surface: list[int] = field(default_factory=list)
    _pending: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.created_at = self.created_at or int(time.time() * 1000) - 60_000
        self.time = self.time or self.created_at + 1000
        directory = session_dir(self.home, self.session_id, self.cwd)
        directory.mkdir(parents=True, exist_ok=True)
        name = "session.v4.jsonl.zstd" if self.compressed else "session.v4.jsonl"
        self.path = directory / name
        if not self.path.exists() or self.path.stat().st_size == 0:
            header = {
                "type": "session",
                "version": 4,
                "id": self.session_id,
                "createdAt": self.created_at,
                "cwd": self.cwd,
                "isSeeded": False,
                "delegationDepth": 0,
            }
            self._pending.append(json.dumps(header, separators=(",", ":")))
            self.flush()

    # ---------------------------------------------------------------------------- primitives

    def event(self, type_: str, data: Any, **extra: Any) -> int:
        self.time += self.step_ms
        row: dict[str, Any] = {"type": type_, "seq": self.seq, "time": self.time, "data": data}
        row.update(extra)
        self._pending.append(json.dumps(row, separators=(",", ":"), ensure_ascii=False))
        self.seq += 1
        return self.seq - 1

    def flush(self) -> None:
        """Append the pending lines as one durable batch (one zstd frame when compressed)."""
        if not self._pending:
            return
        payload = ("\n".join(self._pending) + "\n").encode("utf-8")
        self._pending.clear()
        if self.compressed:
            payload = zstandard.ZstdCompressor(write_checksum=True).compress(payload)
        with self.path.open("ab") as handle:
            handle.write(payload)

    def pause(self, ms: int) -> None:
        self.time += ms

    # ------------------------------------------------------------------------------- content

    def turn(self, user_text: str, assistant_text: str, *, steps: int = 1) -> TurnSeqs:
        """One completed turn: a human prompt and ``steps`` assistant steps (the last one answers
        with ``assistant_text``; earlier ones say ``step <n>``)."""
        self.turn_no += 1
        turn = self.turn_no
        self.event("turn/start", {"turn": turn})
        user_seq = -1
        assistant_seq = -1
        for step in range(1, steps + 1):
            self.event("step/start", {"turn": turn, "step": step})
            if step == 1:
                user_seq = self.user_message(user_text)
            text = assistant_text if step == steps else f"{assistant_text} (step {step})"
            assistant_seq = self.assistant_message(text, turn=turn, step=step)
            self.event("step/end", {"turn": turn, "step": step})
        end = self.event("turn/end", {"turn": turn, "reason": {"kind": "completed"}})
        return TurnSeqs(turn, user_seq, assistant_seq, end)

    def open_turn(self, user_text: str) -> int:
        """Start a turn and append its prompt; returns the prompt's seq (turn left open)."""
        self.turn_no += 1
        self.event("turn/start", {"turn": self.turn_no})
        self.event("step/start", {"turn": self.turn_no, "step": 1})
        return self.user_message(user_text)

    def close_turn(self, assistant_text: str) -> TurnSeqs:
        """Answer and end the turn :meth:`open_turn` started (its first step)."""
        turn = self.turn_no
        prompt = next(s for s in reversed(self.surface) if s < self.seq)
        answer = self.assistant_message(assistant_text, turn=turn, step=1)
        self.event("step/end", {"turn": turn, "step": 1})
        end = self.event("turn/end", {"turn": turn, "reason": {"kind": "completed"}})
        return TurnSeqs(turn, prompt, answer, end)

    def user_message(self, text: str, *, kind: str = "user") -> int:
        seq = self.seq
        data = {
            "id": f"m-u-{seq}",
            "role": "user",
            "content": [{"type": "text", "text": text}],
            "source": {"kind": kind},
        }
        self.event("user/message", data, surfaceOp="append")
        self.surface.append(seq)
        return seq

    def assistant_message(self, text: str, *, turn: int, step: int) -> int:
        seq = self.seq
        start = self.time + 1
        stream = [
            {
                "type": "chunk",
                "time": start,
                "chunk": {"type": "block-start", "index": 0, "blockType": "text"},
            },
            {
                "type": "chunk",
                "time": start,
                "chunk": {"type": "text-delta", "index": 0, "text": text},
            },
            {
                "type": "chunk",
                "time": start,
                "chunk": {"type": "block-end", "index": 0, "block": {"type": "text", "text": text}},
            },
            {
                "type": "chunk",
                "time": start,
                "chunk": {"type": "finish", "reason": {"kind": "stop"}},
            },
        ]
        message = {
            "id": f"m-a-{seq}",
            "role": "assistant",
            "content": [{"type": "text", "text": text}],
            "source": dict(PROVIDER),
        }
        data = {"turn": turn, "step": step, "message": message, "stream": stream}
        self.event("assistant/message", data, surfaceOp="append")
        self.surface.append(seq)
        return seq

    def title(self, text: str, prompt_seq: int) -> int:
        return self.event(
            "session/title",
            {"title": text, "messageSeqs": [prompt_seq], "source": {"kind": "fallback"}},
        )

    def rewind(self, from_seq: int, *, kind: str = "dsh-rewind") -> int:
        """A withdrawal marker shadowing the surface from ``from_seq`` to its end."""
        index = self.surface.index(from_seq)
        shadowed = self.surface[index:]
        seq = self.seq
        data = {
            "id": f"m-rw-{seq}",
            "role": "user",
            "content": [{"type": "text", "text": "(empty message)"}],
            "source": {"kind": kind},
        }
        op = {"op": "replace", "startSeq": shadowed[0], "endSeq": shadowed[-1]}
        self.event("user/message", data, surfaceOp=op, sourceEventSeqs=sorted(shadowed))
        self.surface[index:] = [seq]
        return seq


def conversation(
    home: Path,
    session_id: str,
    cwd: str,
    turns: int,
    *,
    compressed: bool = False,
    title: str | None = None,
    batch_turns: int = 1,
    created_at: int = 0,
    answer_bytes: int = 0,
) -> SessionLogWriter:
    """A finished session of ``turns`` turns (``user <i>`` / ``answer <i>``), flushed in batches.

    ``answer_bytes`` pads each answer with words to about that many bytes (big logs, few turns)."""
    log = SessionLogWriter(home, session_id, cwd, created_at=created_at, compressed=compressed)
    for i in range(turns):
        answer = f"answer {i} of {session_id}"
        if len(answer) < answer_bytes:
            words = " ".join(f"w{i}x{n}" for n in range(answer_bytes // 6))
            answer = f"{answer}: {words}"[:answer_bytes]
        seqs = log.turn(f"user {i} of {session_id}", answer)
        if i == 0 and title is not None:
            log.title(title, seqs.user_seq)
        if (i + 1) % batch_turns == 0:
            log.flush()
    log.flush()
    return log


def embedded_runtime(root: Path, *, force_idle: bool = False, **overrides: Any) -> Any:
    """A runtime on ``root``: DSH home ``root/dsh``, SQLite state and hypatia-lite under ``root``
    (settings overrides by field name)."""
    from dsh_memory_worker.worker.jobs.runtime import build_runtime
    from dsh_memory_worker.worker.settings import load_settings

    values: dict[str, Any] = {
        "dsh_home": root / "dsh",
        "data_dir": root / "data",
        "lite_home": root / "lite",
    }
    values.update(overrides)
    settings = load_settings(None, **values)
    return build_runtime(settings, owner=f"test:{root.name}", force_idle=force_idle)
