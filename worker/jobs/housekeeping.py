"""Startup housekeeping: make the watermarks agree with the store.

If the store lost what the watermarks say was written (a wiped or re-created shelf, a restored
backup), the reference plugin resets those sessions so they are logged again. For every progress
row of the shelf with ``last_logged_seq > 0`` this asks the store for one entry named exactly
``msg-<session>-<digits>``; when there is none the row is reset (watermarks to 0, audited as
``reset-progress``) and the next scan or reconcile logs the session again, idempotently. A failed
lookup leaves the row.

Exact names, not a name prefix: ``msg-ab-%`` would also find session ``ab-1``'s entries
(``msg-ab-1-0``) and keep a wiped ``ab`` lost. Hypatia's ``$like`` has no escape character (a
``%`` or ``_`` in a session id stays a wildcard) and folds ASCII case, so the store is asked for
a superset — names in ``[msg-<sid>-0, msg-<sid>-:)`` (byte order: the prefix then a digit) that do
not match ``msg-<sid>-%-%`` (one more ``-`` than an own name can have) — and every row returned is
checked exactly here, paging on until one matches or the rows run out.
"""

from __future__ import annotations

import logging

from dsh_memory_worker.memory import constants as C
from dsh_memory_worker.memory.store.base import KnowledgeEntry, MemoryStore, StoreError
from dsh_memory_worker.worker.jobs.runtime import Runtime

log = logging.getLogger(__name__)

_PAGE = 50


def is_message_of(name: str, session_id: str) -> bool:
    """True when ``name`` is exactly ``msg-<session_id>-<ordinal>``."""
    prefix = C.MESSAGE_NAME.format(session_id=session_id, ordinal="")
    ordinal = name[len(prefix) :]
    return name.startswith(prefix) and ordinal.isascii() and ordinal.isdigit()


def has_message_entry(store: MemoryStore, session_id: str) -> bool:
    """Whether the store holds at least one ``msg-<session_id>-<N>`` entry (exact names; see the
    module docstring for the query)."""
    prefix = C.MESSAGE_NAME.format(session_id=session_id, ordinal="")
    conditions = [
        ["$gte", "name", f"{prefix}0"],
        ["$lt", "name", f"{prefix}:"],
        ["$not", ["$like", "name", f"{prefix}%-%"]],
    ]
    offset = 0
    while True:
        rows = store.query({"$knowledge": conditions, "limit": _PAGE, "offset": offset})
        if any(isinstance(r, KnowledgeEntry) and is_message_of(r.name, session_id) for r in rows):
            return True
        if len(rows) < _PAGE:
            return False
        offset += _PAGE


def reconcile_with_store(runtime: Runtime, shelf: str) -> list[str]:
    """Reset the progress of every session (not forgotten) whose entries are all missing from
    the store; returns the session ids reset."""
    with runtime.state.transaction() as repos:
        # A forgotten session's entries were removed on purpose (and it is never logged again).
        live = {s.session_id for s in repos.sessions.list()}
        rows = [
            p for p in repos.progress.list(shelf) if p.last_logged_seq > 0 and p.session_id in live
        ]
    if not rows:
        return []
    try:
        store = runtime.store(shelf)
    except StoreError as exc:
        log.warning("store reconcile skipped: %s", exc)
        return []
    reset: list[str] = []
    for row in rows:
        prefix = C.MESSAGE_NAME.format(session_id=row.session_id, ordinal="")
        try:
            found = has_message_entry(store, row.session_id)
        except StoreError as exc:
            log.warning("store reconcile of %s skipped: %s", row.session_id, exc)
            continue
        if found:
            continue
        with runtime.state.transaction() as repos:
            repos.progress.reset(shelf, row.session_id)
            repos.audit.record(
                "reset-progress",
                "reset",
                shelf=shelf,
                session_id=row.session_id,
                detail=f"no {prefix}* entry on the shelf; the session is logged again",
            )
        reset.append(row.session_id)
    if reset:
        log.warning(
            "the store has none of the entries of %d session(s) the watermarks say were "
            "written; they are logged again",
            len(reset),
        )
    return reset
