"""``memory-worker inspect`` — placeholder until the reader lands."""

from __future__ import annotations

from pathlib import Path

import typer

from worker.cli import app


@app.command()
def inspect(path: Path, json_: bool = typer.Option(False, "--json")) -> None:
    """Print what the worker reads from DSH session logs."""
    raise typer.Exit(2)
