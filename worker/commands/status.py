"""``memory-worker status [--json]`` — per session and in total: durable end, logged and
consolidated watermarks, logging and consolidation lag, retractions pending, lease and the last
failure (the operator's view of the pipeline; :mod:`worker.figures` computes the numbers).

``--session ID`` keeps only that session's row (and, with ``--audit``, its audit trail); ``total``
still covers every session of the shelf. An id the state database knows nothing about (no session
row, failure or audit record) is one line on stderr and exit status 1."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from dsh_memory_worker.worker.commands.options import (
    ConfigOption,
    DshHomeOption,
    ShelfOption,
    WideOption,
    err,
)
from dsh_memory_worker.worker.commands.options import shown as _text
from dsh_memory_worker.worker.commands.tables import print_table, short_ids

if TYPE_CHECKING:
    from dsh_memory_worker.worker.jobs.runtime import Runtime
    from dsh_memory_worker.worker.settings import Settings

# One vocabulary with the console (docs/console.md): consolidation on or off, and each row's state.
from dsh_memory_worker.worker.consolidation_state import annotate_status_rows, consolidating
from dsh_memory_worker.worker.consolidation_state import why_off_of as _why_off


def audit_trail(runtime: Runtime, session_id: str | None = None) -> list[dict[str, Any]]:
    """Retraction records and audit entries (repairs, forgets, runs), in time order."""
    with runtime.state.transaction() as repos:
        trail = [
            {
                "at": r.at.isoformat(),
                "session_id": r.session_id,
                "action": "retract-message",
                "subject": r.entry,
                "cause_marker_seq": r.marker_seq,
                "source_kind": r.source_kind,
                "outcome": r.outcome,
                "detail": r.detail,
            }
            for r in repos.audit.retractions(session_id=session_id)
        ] + [
            {
                "at": e.at.isoformat(),
                "session_id": e.session_id,
                "action": e.action,
                "subject": e.subject,
                "cause_marker_seq": e.cause_marker_seq,
                "source_kind": e.source_kind,
                "outcome": e.outcome,
                "detail": e.detail,
            }
            for e in repos.audit.entries(session_id=session_id)
        ]
    return sorted(trail, key=lambda row: str(row["at"]))


def add_unrecorded(found: dict[str, Any], settings: Settings) -> None:
    """Add a row for every session (and refused entry) in the DSH home listing that the state
    database has no record of: not scanned yet, a scan that failed, or an id it cannot store.
    Every row gets ``recorded`` (the state database holds its scan) and ``problem``. With log
    shipping the home is not listed (it may be on another host; the daemon records what it
    could not read as a failure)."""
    from dsh_memory_worker.memory.dsh.locate import survey_sessions
    from dsh_memory_worker.worker.figures import unrecorded_row
    from dsh_memory_worker.worker.watch.scan_problems import session_id_problem, subject_key

    rows: list[dict[str, Any]] = found["sessions"]
    for row in rows:
        row["recorded"] = row["durable_end_seq"] is not None
        row["problem"] = None
    listed = {row["session_id"] for row in rows}
    if settings.shipping:  # the DSH home is the daemon's, on another host: the state has it all
        found["total"]["not_recorded"] = 0
        return
    survey = survey_sessions(settings.sessions_root)
    missing: dict[str, str] = {}
    for location in survey.sessions:
        refused = session_id_problem(location.session_id)
        missing[subject_key(location.session_id)] = (
            f"the session id {refused}; not read"
            if refused is not None
            else "on disk but not recorded: not scanned yet, or its scan failed "
            "(`memory-worker run --once` says why)"
        )
    for refusal in survey.problems:
        missing[subject_key(refusal.subject)] = str(refusal)
    for key, why in missing.items():
        if key in listed:
            continue
        rows.append({**unrecorded_row(key), "recorded": False, "problem": why})
    found["total"]["sessions"] = len(rows)
    found["total"]["not_recorded"] = sum(1 for row in rows if not row["recorded"])


def _print_audit(trail: list[dict[str, Any]], wide: bool) -> None:
    table = Table(title="audit trail")
    for column in ("at", "session", "action", "entry", "cause", "outcome", "detail"):
        table.add_column(column, no_wrap=column in ("at", "session"))
    ids = _ids([row["session_id"] for row in trail if row["session_id"]], wide)
    for row in trail:
        cause = (
            f"{row['source_kind']} @ {row['cause_marker_seq']}"
            if row["cause_marker_seq"] is not None
            else "-"
        )
        table.add_row(
            row["at"][:19],
            _text(ids.get(row["session_id"], "-")),
            row["action"],
            _text(row["subject"] or "-"),
            _text(cause),
            row["outcome"],
            _text(row["detail"] or ""),
        )
    print_table(table, wide=wide)


#: The status columns of short numbers: kept on one line, so the text columns get the width.
_NUMBERS = frozenset({"end", "logged", "lag", "cons.", "cons. lag", "pending"})


def _ids(ids: list[str], wide: bool) -> dict[str, str]:
    """Session ids as a table shows them: short at the terminal's width, whole with --wide."""
    return {sid: sid for sid in ids} if wide else short_ids(ids)


def _cell(value: object) -> str:
    return "-" if value is None else str(value)


def status(
    json_: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    audit: Annotated[
        bool,
        typer.Option(
            "--audit",
            help="Also list the audit trail: every retraction, repair and forget, oldest first.",
        ),
    ] = False,
    session: Annotated[
        str | None,
        typer.Option(
            "--session",
            help="Only this session: its row and, with "
            "--audit, its audit trail (the total still covers all).",
        ),
    ] = None,
    wide: WideOption = False,
    shelf: ShelfOption = None,
    dsh_home: DshHomeOption = None,
    config: ConfigOption = None,
) -> None:
    """Per session and in total: durable end, watermarks, lag, pending retractions, failures,
    and the sessions of the DSH home the state database has no record of."""
    from dsh_memory_worker.worker.at_rest import inputs_key

    overrides = {"store_shelf": shelf, "dsh_home": dsh_home}
    plain = not audit and session is None
    key = inputs_key(config, overrides)
    if plain and answer_at_rest(key, json_, wide):
        return
    # Imported when the command runs, not at start-up (keeps `status --help` fast).
    from dsh_memory_worker.worker.at_rest import Watch
    from dsh_memory_worker.worker.commands.common import load_or_exit
    from dsh_memory_worker.worker.commands.fresh import (
        empty_state,
        missing_state_file,
        say_nothing_recorded,
    )

    settings = load_or_exit(config, **overrides)
    missing = missing_state_file(settings)
    watch = Watch(key, settings, config) if plain and missing is None else None
    if missing is None:
        found, trail, session = _read(settings, audit or session is not None, session)
    else:  # a fresh home: the same figures from an empty state database that is not kept
        say_nothing_recorded("status", missing)
        with empty_state(settings) as empty:
            found, trail, session = _read(empty, audit or session is not None, session)
    found["consolidation"] = "on" if consolidating(settings) else "off"
    why_off = None if consolidating(settings) else _why_off(settings)
    annotate_status_rows(found["sessions"], why_off)
    if watch is not None and all(
        row["lease"] is None and row["last_failure"] is None for row in found["sessions"]
    ):
        watch.keep(_AT_REST_ANSWER, {"found": found, "why_off": why_off})
    if session is not None:
        found["sessions"] = [row for row in found["sessions"] if row["session_id"] == session]
        if not found["sessions"] and not trail:
            err.print(
                f"memory-worker status: {_text(session)}: unknown session (not seen by "
                "the watcher)",
                soft_wrap=True,
            )
            raise typer.Exit(1)
        if not audit:
            trail = None
    _show(found, json_, trail, session, wide=wide, why_off=why_off, recorded=missing is None)


#: The at-rest record's name for the figures of a plain ``status`` (no --audit, no --session).
_AT_REST_ANSWER = "status"


def answer_at_rest(key: str, json_: bool, wide: bool) -> bool:
    """On a home at rest, show the figures the last full ``status`` over the same files showed
    (:mod:`worker.at_rest`; no settings, no state database) and return True; else False."""
    from dsh_memory_worker.worker.at_rest import recorded

    answer = recorded(key, _AT_REST_ANSWER)
    if not isinstance(answer, dict) or not isinstance(answer.get("found"), dict):
        return False
    _show(
        answer["found"], json_, None, None, wide=wide, why_off=answer.get("why_off"), recorded=True
    )
    return True


def _show(
    found: dict[str, Any],
    json_: bool,
    trail: list[dict[str, Any]] | None,
    session: str | None,
    *,
    wide: bool,
    why_off: str | None,
    recorded: bool,
) -> None:
    if json_:
        if trail is not None:
            found["audit"] = trail
        typer.echo(json.dumps(found, indent=2))
        return
    if trail is not None:
        _print_audit(trail, wide)
    rows, total = found["sessions"], found["total"]
    if not rows and session is None:  # nothing here: one line (or the fresh home's, said)
        if recorded:
            err.print(
                "memory-worker status: no sessions seen yet (run `memory-worker run` or `daemon`)",
                soft_wrap=True,
                markup=False,
                highlight=False,
            )
        return
    off = why_off is not None
    table = Table(
        title=f"memory-worker status (shelf {found['shelf']}"
        + (f", session {_text(session)})" if session is not None else ")")
    )
    for column in (
        "session",
        "project",
        "end",
        "logged",
        "lag",
        "cons.",
        "cons. lag",
        "pending",
        "node",
        "lease",
        "last failure",
    ):
        table.add_column(column, no_wrap=column in _NUMBERS or column == "session")
    ids = _ids([row["session_id"] for row in rows], wide)
    for row in rows:
        failure = row["last_failure"]
        problem = (
            f"{failure['task']}: {failure['error']}"
            if failure
            else f"not recorded: {row['problem']}"
            if row["problem"]
            else "-"
        )
        table.add_row(
            _text(ids[row["session_id"]]) + (" (forgotten)" if row["forgotten"] else ""),
            _text(row["project"]),
            _cell(row["durable_end_seq"]),
            _cell(row["last_logged_seq"]),
            _cell(row["lag"]),
            _cell(row["last_consolidated_seq"]),
            "off" if off else _cell(row["consolidation_lag"]),
            _cell(row["retractions_pending"]),
            "yes" if row["has_session_node"] else "no",
            _text(row["lease"]["owner"]) if row["lease"] else "-",
            _text(problem),
        )
    if rows:
        table.add_section()
        table.add_row(
            f"total, all sessions ({total['sessions']})"
            if session is not None
            else f"total ({total['sessions']})",
            "",
            str(total["durable_end_seq"]),
            "",
            str(total["lag"]),
            "",
            "off" if off else str(total["consolidation_lag"]),
            str(total["retractions_pending"]),
            "",
            "",
            f"{total['failing']} failing" if total["failing"] else "-",
        )
    print_table(table, wide=wide, optional=("project", "node", "lease"))
    if off:
        err.print(
            f"consolidation off ({why_off}): messages are logged, no "
            "summaries are written, so there is no consolidation lag to drain",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )


def _read(
    settings: Settings, with_trail: bool, session: str | None
) -> tuple[dict[str, Any], list[dict[str, Any]] | None, str | None]:
    """The figures (with the sessions on disk not recorded), if asked the audit trail, and
    ``session`` as a whole id when it was the unique prefix of one (a table's short id)."""
    from dsh_memory_worker.worker.commands.common import open_runtime_or_exit
    from dsh_memory_worker.worker.figures import figures

    runtime = open_runtime_or_exit(settings, "status")
    try:
        found = figures(runtime.state, settings.store_shelf)
        add_unrecorded(found, settings)
        if session is not None:
            session = _whole_id(session, [row["session_id"] for row in found["sessions"]])
        trail = audit_trail(runtime, session) if with_trail else None
    finally:
        runtime.close()
    return found, trail, session


def _whole_id(given: str, ids: list[str]) -> str:
    """``given``, or the one id it is a prefix of; a prefix of several is one line, exit 1."""
    if given in ids:
        return given
    matches = sorted(sid for sid in ids if sid.startswith(given))
    if len(matches) > 1:
        shown = ", ".join(_text(sid) for sid in matches[:5]) + (", …" if len(matches) > 5 else "")
        err.print(
            f"memory-worker status: {_text(given)}: ambiguous, the prefix of {len(matches)} "
            f"sessions ({shown}); give more of the id",
            soft_wrap=True,
            markup=False,
            highlight=False,
        )
        raise typer.Exit(1)
    return matches[0] if matches else given
