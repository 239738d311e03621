"""``memory-worker segments prune [--consolidated] [--closed-for DAYS] [--dry-run]`` — remove
shipped log segments no job can still need (docs/shipping.md, "Retention and pruning"): every
segment of a forgotten session, superseded generations, and with ``--consolidated`` the
segments below the consolidated floor of sessions closed for ``--closed-for`` days. One line
per session and generation, then the total.
"""

from __future__ import annotations

from typing import Annotated

import typer

from dsh_memory_worker.worker.commands.options import ConfigOption, command_group, shown

segments_app = command_group("segments", "Shipped log segments (log shipping).")


@segments_app.command("prune")
def prune(
    consolidated: Annotated[
        bool,
        typer.Option(
            "--consolidated",
            help="Also remove segments below the consolidated "
            "floor of sessions closed for --closed-for days.",
        ),
    ] = False,
    closed_for: Annotated[
        float,
        typer.Option(
            "--closed-for",
            min=0,
            help="Days a session must have been idle-closed before --consolidated prunes it.",
        ),
    ] = 30.0,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Print what would be removed; remove nothing.")
    ] = False,
    config: ConfigOption = None,
) -> None:
    """Remove shipped segments no job can still need."""
    # Imported when the command runs, not at start-up (keeps `memory-worker --help` fast).
    import datetime as dt

    from dsh_memory_worker.worker.commands.common import command_settings, open_runtime_or_exit
    from dsh_memory_worker.worker.commands.fresh import missing_state_file, say_nothing_recorded
    from dsh_memory_worker.worker.shipping.prune import prune_segments

    settings = command_settings(config)
    missing = missing_state_file(settings)
    if missing is not None:  # no state database: no shipped segment to prune
        say_nothing_recorded("segments prune", missing, ": no segments")
        return
    runtime = open_runtime_or_exit(settings, "segments-prune")
    try:
        report = prune_segments(
            runtime.state,
            consolidated=consolidated,
            closed_for=dt.timedelta(days=closed_for),
            dry_run=dry_run,
        )
    finally:
        runtime.close()
    for line in report.lines:
        typer.echo(shown(line))
    verb = "would remove" if dry_run else "removed"
    typer.echo(
        f"{verb} {report.segments} segments, {report.bytes} bytes"
        + (" (dry run: nothing changed)" if dry_run else "")
    )
