"""``memory-worker demo-home DIR`` — lay the shipped DSH fixtures out as a DSH home.

The fixtures in ``worker/demo/dsh/<case>/session*.jsonl`` (package data; the tests read them
as ``tests/fixtures/dsh``) are normalised snapshots with
``{{sessionId}}`` / ``{{cwd}}`` placeholders. This command fills the placeholders (a stable id
per case, one demo project directory) and writes each log where DSH keeps it:
``DIR/sessions/--<projectKey(cwd)>--/<sessionId>/session.jsonl`` (V0) or ``session.v4.jsonl``.
``memory-worker run --once --dsh-home DIR`` then processes them.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

DEFAULT_CWD = "/home/dev/dsh-demo"
_FIXTURES = Path(__file__).resolve().parents[1] / "demo" / "dsh"
_NAMESPACE = uuid.UUID("6f1e9a52-3c0d-4b7e-9d1a-2f5c8e4b7a10")


def demo_session_id(case: str) -> str:
    """The id given to a fixture whose header says ``{{sessionId}}``."""
    return str(uuid.uuid5(_NAMESPACE, case))


def _project_key(cwd: str) -> str:
    """DSH's ``projectKey(cwd)`` (format doc §4.1): separators to ``-``, other units escaped."""
    out: list[str] = []
    for unit in _utf16_units(cwd):
        char = chr(unit)
        if char in "/\\:":
            if not out or out[-1] != "-":
                out.append("-")
        elif char.isascii() and (char.isalnum() or char in "._-"):
            out.append(char)
        else:
            out.append(f"~{unit:04X}")
    slug = "".join(out).lstrip("-") or "root"
    return f"--{slug[:251]}--"


def _utf16_units(text: str) -> list[int]:
    data = text.encode("utf-16-le", errors="surrogatepass")
    return [int.from_bytes(data[k : k + 2], "little") for k in range(0, len(data), 2)]


def lay_out_fixtures(fixtures: Path, home: Path, cwd: str = DEFAULT_CWD) -> list[Path]:
    """Copy every fixture log under ``fixtures`` into the DSH home ``home``; return the paths."""
    written: list[Path] = []
    for source in sorted(fixtures.glob("*/session*.jsonl")):
        case = source.parent.name
        text = source.read_text(encoding="utf-8")
        text = text.replace("{{sessionId}}", demo_session_id(case)).replace("{{cwd}}", cwd)
        header = json.loads(text.split("\n", 1)[0])
        version = int(header.get("version", 0))
        name = "session.jsonl" if version == 0 else f"session.v{version}.jsonl"
        project = _project_key(str(header.get("cwd") or cwd))
        target = home / "sessions" / project / str(header["id"]) / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        written.append(target)
    return written


def demo_home(
    directory: Annotated[Path, typer.Argument(help="Where to create the DSH home.")],
    fixtures: Annotated[
        Path, typer.Option("--fixtures", help="Fixture folder to lay out.")
    ] = _FIXTURES,
    cwd: Annotated[str, typer.Option("--cwd", help="Project directory for `{{cwd}}`.")] = (
        DEFAULT_CWD
    ),
) -> None:
    """Lay the shipped DSH fixtures out as a DSH home (for a first `run --once`)."""
    console = Console(stderr=True, soft_wrap=True, markup=False, highlight=False)
    if not fixtures.is_dir():
        console.print(f"error: fixture folder {fixtures} does not exist; pass --fixtures DIR")
        raise typer.Exit(2)
    try:
        paths = lay_out_fixtures(fixtures, directory, cwd)
    except OSError as exc:
        console.print(f"error: cannot write the DSH home under {directory}: {exc.strerror or exc}")
        raise typer.Exit(1) from None
    if not paths:
        console.print(f"error: no session*.jsonl fixtures under {fixtures}")
        raise typer.Exit(2)
    console.print(f"wrote {len(paths)} session logs under {directory / 'sessions'}")
