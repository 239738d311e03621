"""``memory-worker config [--json] [--config FILE]`` — the effective configuration.

Prints every setting after env + file + defaults are combined, with secrets masked (URL
passwords, API keys). An invalid configuration prints one line and exits with status 2.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from dsh_memory_worker.worker.commands.options import ConfigOption, DshHomeOption, WideOption
from dsh_memory_worker.worker.commands.tables import print_table


def _show(value: Any) -> str:
    if isinstance(value, list | dict):
        return json.dumps(value)
    return "(unset)" if value is None else str(value)


def config(
    json_: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    wide: WideOption = False,
    dsh_home: DshHomeOption = None,
    config: ConfigOption = None,
) -> None:
    """Print the effective configuration (secrets masked)."""
    from dsh_memory_worker.worker.commands.common import (
        load_or_exit,
    )  # loads the runtime: only when it runs

    settings = load_or_exit(config, dsh_home=dsh_home)
    values = settings.public_dict()
    if json_:
        typer.echo(json.dumps(values, indent=2, sort_keys=True))
        return
    sources = settings.value_sources
    table = Table(title="memory-worker configuration", show_lines=False)
    table.add_column("setting", style="bold")
    table.add_column("value")
    table.add_column("from")
    for key in sorted(values):
        table.add_row(key, escape(_show(values[key])), sources.get(key, "derived"))
    print_table(table, wide=wide)
