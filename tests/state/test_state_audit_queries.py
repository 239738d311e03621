"""The audit reads the reconcile makes every interval are one SQL query each, on SQLite and
PostgreSQL, and give what the rules written over the whole history in Python give.

* :meth:`AuditRepo.newest_with_outcome` — the sessions whose newest entry of an action on a
  shelf has an outcome (a reconsolidation or rewrite request still queued), with that entry's id;
* :meth:`AuditRepo.unclosed` / :meth:`AuditRepo.sessions_with_unclosed` — the subjects (and
  sessions) whose newest opening entry (a repair intent) has no newer closing one; per session,
  what :meth:`worker.state.audit.AuditRepo.pending_repairs` answers.

Random histories (seeded) mix actions, shelves, outcomes, subjects, entries without a session or
subject, and the empty session id."""

from __future__ import annotations

import random

import pytest

from dsh_memory_worker.worker.state import StateDB
from dsh_memory_worker.worker.state.audit import ACTION_INTENT, ACTION_SUMMARY, AuditEntry

ACTIONS = ("reconsolidate", "rewrite", ACTION_INTENT, ACTION_SUMMARY, "forget")
OUTCOMES = ("queued", "done", "failed")
SHELVES = ("default", "other", None)
SESSIONS = (*(f"s-{i}" for i in range(12)), "", None)
SUBJECTS = ("sum-a", "sum-b", "sum-c", None)


def _history(state_db: StateDB, seed: int, rows: int) -> list[AuditEntry]:
    rng = random.Random(seed)
    with state_db.transaction() as repos:
        for _ in range(rows):
            repos.audit.record(
                rng.choice(ACTIONS),
                rng.choice(OUTCOMES),
                shelf=rng.choice(SHELVES),
                session_id=rng.choice(SESSIONS),
                subject=rng.choice(SUBJECTS),
            )
    with state_db.read() as repos:
        return repos.audit.entries()


def _unclosed_rule(entries: list[AuditEntry], sid: str) -> set[str]:
    """The subjects of ``sid`` whose newest intent is newer than their newest closing entry."""
    opened: dict[str, int] = {}
    closed: dict[str, int] = {}
    for entry in entries:  # oldest first
        if entry.session_id == sid and entry.subject is not None:
            if entry.action == ACTION_INTENT:
                opened[entry.subject] = entry.id
            elif entry.action == ACTION_SUMMARY:
                closed[entry.subject] = entry.id
    return {subject for subject, at in opened.items() if closed.get(subject, -1) < at}


def _newest_rule(
    entries: list[AuditEntry], action: str, shelf: str, outcome: str
) -> dict[str, int]:
    newest: dict[str, AuditEntry] = {}
    for entry in entries:  # oldest first
        if entry.action == action and entry.shelf == shelf and entry.session_id:
            newest[entry.session_id] = entry
    return {sid: e.id for sid, e in sorted(newest.items()) if e.outcome == outcome}


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_sql_reads_match_the_rules_over_the_whole_history(state_db: StateDB, seed: int) -> None:
    entries = _history(state_db, seed, 400)
    sessions = sorted({e.session_id for e in entries if e.session_id is not None})
    with state_db.read() as repos:
        for action in ("reconsolidate", "rewrite"):
            for shelf in ("default", "other"):
                got = repos.audit.newest_with_outcome(action, shelf, "queued")
                want = _newest_rule(entries, action, shelf, "queued")
                assert got == want
                assert list(got) == sorted(got)
        unclosed = repos.audit.sessions_with_unclosed(ACTION_INTENT, ACTION_SUMMARY)
        pairs = repos.audit.unclosed(ACTION_INTENT, ACTION_SUMMARY)
        per_session = {sid: repos.audit.pending_repairs(sid) for sid in sessions}
    want = {sid: _unclosed_rule(entries, sid) for sid in sessions}
    want_unclosed = [sid for sid in sessions if want[sid]]
    assert unclosed == want_unclosed
    assert pairs == [(sid, subject) for sid in want_unclosed for subject in sorted(want[sid])]
    assert per_session == want
    # The histories are mixed enough that both answers are neither empty nor everything.
    assert 0 < len(want_unclosed) < len(sessions)


def test_a_closed_intent_reopened_and_requests_settled(state_db: StateDB) -> None:
    with state_db.transaction() as repos:
        audit = repos.audit
        audit.record(ACTION_INTENT, "pending", session_id="s-1", subject="sum-x")
        audit.record(ACTION_SUMMARY, "rewritten", session_id="s-1", subject="sum-x")
        audit.record(ACTION_INTENT, "pending", session_id="s-2", subject="sum-y")
        audit.record(ACTION_SUMMARY, "rewritten", session_id="s-2", subject="sum-y")
        audit.record(ACTION_INTENT, "pending", session_id="s-2", subject="sum-y")  # again
        audit.record(ACTION_SUMMARY, "rewritten", session_id="s-3", subject="sum-z")  # no intent
        first = audit.record("reconsolidate", "queued", shelf="default", session_id="s-1")
        audit.record("reconsolidate", "done", shelf="default", session_id="s-1")
        audit.record("reconsolidate", "queued", shelf="other", session_id="s-1")
        queued = audit.record("reconsolidate", "queued", shelf="default", session_id="s-2")
    with state_db.read() as repos:
        assert repos.audit.sessions_with_unclosed(ACTION_INTENT, ACTION_SUMMARY) == ["s-2"]
        assert repos.audit.newest_with_outcome("reconsolidate", "default", "queued") == {
            "s-2": queued
        }
        assert repos.audit.newest_with_outcome("reconsolidate", "default", "done") == {
            "s-1": first + 1
        }
        assert repos.audit.newest_with_outcome("rewrite", "default", "queued") == {}
