"""``memory-worker inspect PATH [--json]`` — what the reader sees in DSH session logs.

PATH is a session log file, a session directory, a sessions root, or a DSH home (its
``sessions/`` directory is used). A bad file is reported and the others still print. The
withdrawal decisions use the configured ``withdrawal_kinds``, so an invalid configuration is one
line and exit status 2, as for every other command (never a silent fall-back to the defaults).
"""

from __future__ import annotations

import json
import zoneinfo
from collections.abc import Iterable
from datetime import tzinfo
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape

from dsh_memory_worker.memory.printable import printable
from dsh_memory_worker.worker.commands.options import ConfigOption

if TYPE_CHECKING:
    from dsh_memory_worker.memory.dsh.events import Event
    from dsh_memory_worker.memory.dsh.reader import SessionLog
    from dsh_memory_worker.memory.titles import TitleChoice

_SNIPPET = 120


def find_logs(path: Path) -> list[Path]:
    """The log files PATH stands for (see the module docstring)."""
    # The readers load when the command runs, not at start-up (keeps `--help` fast).
    from dsh_memory_worker.memory.dsh.locate import choose_log, discover_sessions

    if path.is_file():
        return [path]
    if not path.is_dir():
        return []
    chosen = choose_log(path)
    if chosen is not None:
        return [chosen[0]]
    root = path / "sessions" if (path / "sessions").is_dir() else path
    found = [location.path for location in discover_sessions(root)]
    if not found:  # a directory of session directories (no project level)
        subdirs = sorted(p for p in path.iterdir() if p.is_dir())
        found = [chosen[0] for d in subdirs if (chosen := choose_log(d)) is not None]
    return found


def message_text(event: Event) -> str:
    """The text blocks of an event's message, joined."""
    if event.message is None:
        return ""
    parts = [
        str(block.get("text", ""))
        for block in event.message.content
        if isinstance(block, dict) and block.get("type") == "text"
    ]
    return "\n".join(parts)


def delegated_prompt_seq(log: SessionLog) -> int | None:
    """A subagent child's first own ``source.kind == 'user'`` message is the parent model's
    delegated prompt (DSH 0.1.0 stores it that way), not a human turn."""
    if log.header is None or log.header.origin != "subagent":
        return None
    for event in log.events:
        if event.seq >= log.inherited and _is_human(event):
            return event.seq
    return None


def _is_human(event: Event) -> bool:
    return (
        event.type == "user/message"
        and event.message is not None
        and event.message.source_kind == "user"
    )


def session_report(
    log: SessionLog, whitelist: Iterable[str] | None = None, tz: tzinfo | None = None
) -> dict[str, Any]:
    """The stable per-session JSON object of ``inspect --json`` (extend, never rename keys).

    ``messages`` / ``withdrawals``: what the worker would write and why (``memory.span``);
    ``session_node``: which host summary the node shows and which ones it skipped, and why;
    ``whitelist`` defaults to the withdrawal kinds of ``memory.withdrawal``.
    """
    from dsh_memory_worker.memory.dsh.surface import fold_surface
    from dsh_memory_worker.memory.span import session_decisions
    from dsh_memory_worker.memory.titles import survey_titles
    from dsh_memory_worker.memory.withdrawal import DEFAULT_WHITELIST

    if whitelist is None:
        whitelist = DEFAULT_WHITELIST
    header = log.header
    surface = fold_surface(log.events)
    delegated = delegated_prompt_seq(log)
    humans = [
        {"seq": e.seq, "inherited": e.seq < log.inherited, "text": message_text(e)}
        for e in log.events
        if _is_human(e) and e.seq != delegated
    ]
    replacements = [
        {
            "seq": r.seq,
            "kind": r.kind,
            "op_start": r.start_seq,
            "op_end": r.end_seq,
            "shadowed": list(r.cited),
        }
        for r in surface.replacements
    ]
    checkpoints = [
        {
            "seq": r.seq,
            "compaction_id": _compaction_id(log, r.seq),
            "surface_shadowed": list(r.shadowed),
        }
        for r in surface.replacements
        if r.kind == "compact-checkpoint"
    ]
    return {
        "id": header.id if header else None,
        "path": str(log.path),
        "version": header.version if header else None,
        "cwd": header.cwd if header else None,
        "parent": header.parent if header else None,
        "inherited": log.inherited,
        "events": len(log.events),
        "open_turn": log.open_turn,
        "human_messages": humans,
        "delegated_prompt": delegated,
        "replacements": replacements,
        "compaction_checkpoints": checkpoints,
        "surface": list(surface.nodes),
        "session_node": node_report(
            survey_titles(
                log.events,
                whitelist,
                cut=log.inherited,
                tz=tz,
                now_ms=(header.created_at or 0) if header else 0,
            )
        ),
        "ok": log.ok,
        "problems": [str(p) for p in [*log.problems, *surface.problems]],
        **session_decisions(
            log.events,
            session_id=header.id if header else "",
            inherited_cut=log.inherited,
            whitelist=whitelist,
        ),
    }


def node_report(choice: TitleChoice) -> dict[str, Any]:
    """``session_node`` of ``inspect --json``: ``source`` (``null``: no node) and ``skipped``
    (withdrawn sources, empty texts, later ones); no withdrawn text is shown."""
    chosen = choice.chosen
    return {
        "source": None
        if chosen is None
        else {
            "seq": chosen.seq,
            "type": chosen.type,
            "source": chosen.source,
            "cites": sorted(chosen.cites),
            "checkpoint": chosen.checkpoint,
            "text": chosen.text,
        },
        "skipped": [
            {
                "seq": s.summary.seq,
                "type": s.summary.type,
                "source": s.summary.source,
                "reason": s.reason,
                "withdrawn_seq": s.seq,
                "marker_seq": s.marker_seq,
                "marker_kind": s.marker_kind,
                "detail": s.describe(),
            }
            for s in choice.skipped
        ],
    }


def _compaction_id(log: SessionLog, seq: int) -> str | None:
    for event in log.events:
        if event.seq == seq and event.message is not None:
            value = event.message.source.get("compactionId")
            return value if isinstance(value, str) else None
    return None


def _print_report(console: Console, report: dict[str, Any]) -> None:
    sid = report["id"] if report["id"] is not None else "(header unreadable)"
    console.print(f"[bold]{escape(str(sid))}[/bold]  {escape(report['path'])}")
    parent = report["parent"] or "-"
    version = report["version"] if report["version"] is not None else "-"
    cwd = report["cwd"] if report["cwd"] is not None else "-"
    console.print(
        f"  version {version}  cwd {escape(str(cwd))}  parent "
        f"{escape(parent)}  inherited {report['inherited']}  events {report['events']}  "
        f"open turn {'yes' if report['open_turn'] else 'no'}"
    )
    for human in report["human_messages"]:
        text = " ".join(human["text"].split())
        if len(text) > _SNIPPET:
            text = text[: _SNIPPET - 1] + "…"
        mark = " (inherited)" if human["inherited"] else ""
        console.print(f"  human {human['seq']}{mark}: {escape(text)}")
    if report["delegated_prompt"] is not None:
        console.print(f"  delegated prompt: seq {report['delegated_prompt']}")
    for r in report["replacements"]:
        console.print(
            f"  replace {r['seq']} ({escape(r['kind'] or 'no kind')}) "
            f"{r['op_start']}…{r['op_end']} shadows {r['shadowed']}"
        )
    for c in report["compaction_checkpoints"]:
        console.print(f"  checkpoint {c['seq']} ({c['compaction_id']}): {c['surface_shadowed']}")
    node = report["session_node"]
    if node["source"] is not None:
        chosen = node["source"]
        console.print(
            f"  session node: {chosen['type']} seq {chosen['seq']} ({escape(chosen['source'])})"
        )
    for skip in node["skipped"]:
        console.print(f"  node skips {skip['type']} seq {skip['seq']}: {escape(skip['detail'])}")
    for problem in report["problems"]:
        console.print(f"  [red]problem[/red] {escape(printable(problem))}")


def inspect(
    path: Annotated[
        Path, typer.Argument(help="A session log, session directory, sessions root, or DSH home.")
    ],
    json_: Annotated[bool, typer.Option("--json", help="Print the stable JSON form.")] = False,
    config: ConfigOption = None,
) -> None:
    """Print what the worker reads from DSH session logs."""
    # Imported when the command runs, not at start-up (keeps `memory-worker --help` fast).
    from dsh_memory_worker.memory.dsh.frames import set_max_frame_bytes
    from dsh_memory_worker.memory.dsh.reader import read_log
    from dsh_memory_worker.worker.commands.common import load_or_exit

    # The decisions shown must be the ones the worker makes: no defaults behind a bad setting.
    settings = load_or_exit(config)
    whitelist = settings.withdrawal_kinds
    tz = zoneinfo.ZoneInfo(settings.timezone) if settings.timezone else None
    set_max_frame_bytes(settings.log_max_frame_bytes)
    console = Console(highlight=False, soft_wrap=True)
    logs = find_logs(path)
    if not logs:
        typer.echo(f"error: no DSH session log found at {path}", err=True)
        raise typer.Exit(1)
    reports = [session_report(read_log(log), whitelist, tz) for log in logs]
    if json_:
        typer.echo(json.dumps({"sessions": reports}, ensure_ascii=False, indent=2))
    else:
        for report in reports:
            _print_report(console, report)
    if all(r["version"] is None for r in reports):
        raise typer.Exit(1)
