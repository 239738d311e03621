"""Startup housekeeping: make the watermarks agree with the store.

If the store lost what the watermarks say was written (a wiped or re-created shelf, a restored
backup), the reference plugin resets those sessions so they are logged again. For every progress
row of the shelf with ``last_logged_seq > 0`` this asks the store for one ``msg-<session>-%``
entry; when there is none the row is reset (watermarks to 0, audited as ``reset-progress``) and
the next scan or reconcile logs the session again, idempotently. A failed lookup leaves the row.
"""

from __future__ import annotations

import logging

from memory import constants as C
from memory.store.base import StoreError
from worker.jobs.runtime import Runtime

log = logging.getLogger(__name__)


def reconcile_with_store(runtime: Runtime, shelf: str) -> list[str]:
    """Reset the progress of every session whose entries are all missing from the store;
    returns the session ids reset."""
    with runtime.state.transaction() as repos:
        rows = [p for p in repos.progress.list(shelf) if p.last_logged_seq > 0]
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
        query = {"$knowledge": [["$like", "name", f"{prefix}%"]], "limit": 1, "offset": 0}
        try:
            found = store.query(query)
        except StoreError as exc:
            log.warning("store reconcile of %s skipped: %s", row.session_id, exc)
            continue
        if found:
            continue
        with runtime.state.transaction() as repos:
            repos.progress.reset(shelf, row.session_id)
            repos.audit.record(
                "reset-progress", "reset", shelf=shelf, session_id=row.session_id,
                detail=f"no {prefix}* entry on the shelf; the session is logged again",
            )
        reset.append(row.session_id)
    if reset:
        log.warning(
            "the store has none of the entries of %d session(s) the watermarks say were "
            "written; they are logged again", len(reset),
        )
    return reset
