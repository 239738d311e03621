"""The shell blocks of the docs, found and run as written (``test_doc_blocks_run.py``).

A block is every ```` ```sh ```` / ```` ```bash ```` fence of a document. Its statements are its
lines (comments and blank lines aside); each statement is run by ``bash -c`` with its own text, in
a sandbox: a fresh ``HOME`` whose ``~/.dsh`` holds the shipped fixtures, a fresh working
directory, no ``MEMORY_WORKER_*`` / ``HYPATIA_LITE_HOME`` / ``DSH_HOME`` from the caller, and a
``PATH`` where the project's commands are this checkout's. What the sandbox maps is in
:func:`sandboxed` and :class:`Sandbox`; the test's docstring states the policy.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path

FENCE = re.compile(r"^```(?:sh|bash)[ \t]*\n(.*?)^```[ \t]*$", re.M | re.S)
BIN = Path(sys.executable).parent
#: Commands that run until a signal: started in the background, stopped once the store is full.
FOLLOWERS = ("daemon", "worker", "run")
_SEPARATORS = {"&&", "||", ";", "|", "&"}
_POSTGRES = re.compile(r"postgresql://[^\s@/]+@(?!127\.0\.0\.1|localhost)[\w.-]+(?::\d+)?/(\w+)")
_REDIS = re.compile(r"redis://(?!127\.0\.0\.1|localhost)[\w.-]+(?::\d+)?/\d+")
_TMP = re.compile(r"(?<![\w./~-])/tmp/")


@dataclass(frozen=True)
class Block:
    doc: str
    line: int
    text: str

    @property
    def id(self) -> str:
        return f"{self.doc}:{self.line}"

    def statements(self) -> list[str]:
        """The block's commands, one per line (a trailing ``\\`` joins the next line)."""
        out: list[str] = []
        pending = ""
        for raw in self.text.splitlines():
            line = pending + raw
            if line.rstrip().endswith("\\"):
                pending = line.rstrip()[:-1] + " "
                continue
            pending = ""
            if line.strip() and not line.strip().startswith("#"):
                out.append(line.strip())
        return out


def blocks(repo: Path, doc: str) -> list[Block]:
    text = (repo / doc).read_text(encoding="utf-8")
    return [
        Block(doc, text.count("\n", 0, m.start()) + 1, m.group(1)) for m in FENCE.finditer(text)
    ]


def commands(statement: str) -> list[list[str]]:
    """The simple commands of a statement (``a && b`` is two), as words; comments dropped."""
    lexer = shlex.shlex(statement, posix=True, punctuation_chars=";&|")
    lexer.whitespace_split = True
    lexer.commenters = "#"
    out: list[list[str]] = [[]]
    for word in lexer:
        if word in _SEPARATORS:
            out.append([])
        else:
            out[-1].append(word)
    return [words for words in out if words]


def kind(words: list[str]) -> str:
    """``install`` (a venv or a pip/pipx install), ``suite`` (the test suite), ``follow`` (a
    ``memory-worker`` command that runs until a signal), ``tool`` (Celery's own command line,
    which needs a live cluster and a terminal), ``export`` or ``once``."""
    name = Path(words[0]).name
    if name in ("pip", "pip3", "pipx") or words[:3] == ["python3", "-m", "venv"]:
        return "install"
    if name.startswith("python") and words[1:3] == ["-m", "pytest"]:
        return "suite"
    if name == "celery":
        return "tool"
    if name == "export":
        return "export"
    if name == "memory-worker":
        sub = next((w for w in words[1:] if not w.startswith("-")), "")
        if sub in FOLLOWERS and not (sub == "run" and "--once" in words):
            return "follow"
    return "once"


def shelves_written(words: list[str]) -> set[str]:
    """The shelves a ``memory-worker run|daemon|worker`` command writes (``--shelf``, else
    ``default``); none for any other command."""
    sub = next((w for w in words[1:] if not w.startswith("-")), "")
    if Path(words[0]).name != "memory-worker" or sub not in FOLLOWERS:
        return set()
    if "--shelf" in words:
        return {words[words.index("--shelf") + 1]}
    return {"default"}


_APPEND = 'import json, sys; open(sys.argv[1], "a").write(json.dumps(sys.argv[2:]) + "\\n")'
_RECORD = f"""#!/bin/bash
"{BIN / "python"}" -c '{_APPEND}' "$SHIM_LOG" "$(basename "$0")" "$@"
"""
_RECORD_BODY = _RECORD.split("\n", 1)[1]  # without its #! line


@dataclass
class Sandbox:
    """One block's world: ``home`` (``HOME``), ``work`` (the working directory), ``tmp`` (what
    ``/tmp/`` in a statement means), shims for the install commands, and the environment that
    ``export`` statements grow."""

    root: Path
    env: dict[str, str] = field(default_factory=dict)

    @property
    def home(self) -> Path:
        return self.root / "home"

    @property
    def work(self) -> Path:
        return self.root / "work"

    @property
    def tmp(self) -> Path:
        return self.root / "tmp"

    @property
    def shim_log(self) -> Path:
        return self.root / "shims.jsonl"

    def make(self) -> None:
        for directory in (self.home, self.work, self.tmp):
            directory.mkdir(parents=True)
        shims, venv = self.root / "shims", self.root / "venv" / "bin"
        shims.mkdir()
        venv.mkdir(parents=True)
        # `python3 -m venv DIR`: DIR becomes this checkout's venv (with the pip and python shims
        # below); anything else python3 is asked runs in this venv.
        self._script(
            shims / "python3",
            f"""#!/bin/bash
if [ "$1" = -m ] && [ "$2" = venv ]; then
{_RECORD_BODY}  [ -e "$3" ] || ln -s "{venv.parent}" "$3"
  exit 0
fi
exec "{BIN / "python"}" "$@"
""",
        )
        for name in ("pip", "pip3", "pipx"):
            self._script(shims / name, _RECORD)
            self._script(venv / name, _RECORD)
        self._script(
            venv / "python",
            f"""#!/bin/bash
if [ "$1" = -m ] && [ "$2" = pytest ]; then
{_RECORD_BODY}  exit 0
fi
exec "{BIN / "python"}" "$@"
""",
        )
        for entry in BIN.iterdir():
            if not (venv / entry.name).exists() and not entry.name.startswith("python"):
                (venv / entry.name).symlink_to(entry)
        # The working directory is the checkout after the README's first line: `.venv/bin/…`.
        (self.work / ".venv").symlink_to(venv.parent)
        keep = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("MEMORY_WORKER_", "XDG_", "PYTEST", "COV_"))
            and k not in ("HYPATIA_LITE_HOME", "DSH_HOME", "VIRTUAL_ENV", "PYTHONPATH")
        }
        self.env = {
            **keep,
            "HOME": str(self.home),
            "SHIM_LOG": str(self.shim_log),
            "PATH": f"{shims}:{BIN}:/usr/local/bin:/usr/bin:/bin",
            "COLUMNS": "200",
        }

    @staticmethod
    def _script(path: Path, text: str) -> None:
        path.write_text(text, encoding="utf-8")
        path.chmod(0o755)

    def shim_calls(self) -> list[list[str]]:
        if not self.shim_log.exists():
            return []
        return [json.loads(line) for line in self.shim_log.read_text().splitlines()]


def sandboxed(statement: str, sandbox: Sandbox, databases: dict[str, str], redis_url: str) -> str:
    """The statement as it runs: service URLs naming other hosts (``db``, ``redis``) become this
    machine's services — a throwaway PostgreSQL database per database name, the test's own Redis
    database — and ``/tmp/`` becomes the sandbox's; nothing else changes."""

    def postgres(m: re.Match[str]) -> str:
        return databases[m.group(1)]

    text = _POSTGRES.sub(postgres, statement)
    text = _REDIS.sub(redis_url, text)
    return _TMP.sub(str(sandbox.tmp) + "/", text)


def postgres_names(statement: str) -> set[str]:
    return {m.group(1) for m in _POSTGRES.finditer(statement)}
