"""What the watcher says about what it cannot read: each problem is one line, logged once (until
it changes or heals) and recorded once as a ``scan`` failure, so ``memory-worker status`` shows
the session (or directory) with its problem.

Also the limits every state database holds a session id to (:func:`session_id_problem`): the
same on SQLite and PostgreSQL, so both modes refuse the same ids with the same line instead of
one ingesting what the other cannot store.
"""

from __future__ import annotations

import hashlib
import logging

from dsh_memory_worker.memory.printable import printable
from dsh_memory_worker.worker.state.database import StateDB
from dsh_memory_worker.worker.state.models import SessionRow

log = logging.getLogger("memory_worker")

SCAN_TASK = "scan"
#: The longest session id the state database stores (the ``sessions`` key column).
MAX_SESSION_ID = int(SessionRow.__table__.c.session_id.type.length)  # type: ignore[attr-defined]
_KEY_HEAD = MAX_SESSION_ID - 40


def session_id_problem(session_id: str) -> str | None:
    """Why ``session_id`` cannot be recorded, or ``None`` when it can."""
    if "\x00" in session_id:
        return "contains a NUL character, which a state database cannot store"
    if any("\ud800" <= char <= "\udfff" for char in session_id):
        return "is not valid text (its directory name has undecodable bytes)"
    if len(session_id) > MAX_SESSION_ID:
        return f"is {len(session_id)} characters long; the limit is {MAX_SESSION_ID}"
    return None


def subject_key(subject: str) -> str:
    """The key a problem is recorded under: ``subject`` itself when it can be stored, else its
    escaped head and a digest of the whole (stable, unique, storable everywhere)."""
    if session_id_problem(subject) is None:
        return subject
    shown = printable(subject)
    if len(shown) <= MAX_SESSION_ID and session_id_problem(shown) is None:
        return shown
    digest = hashlib.sha256(subject.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return f"{shown[:_KEY_HEAD]}…#{digest}"


class ProblemBook:
    """Problems said once per subject; recorded as ``scan`` failures once per distinct line."""

    def __init__(self, state: StateDB) -> None:
        self._state = state
        self._said: dict[str, str] = {}
        self._recorded: dict[str, str] = {}

    def say(self, subject: str, line: str) -> bool:
        """Log ``line`` once per subject (until it changes); True when it was logged."""
        if self._said.get(subject) == line:
            return False
        self._said[subject] = line
        log.warning("%s", line)
        return True

    def note(self, subject: str, line: str, *, permanent: bool = False) -> None:
        """Say ``line`` once and record it as ``subject``'s scan failure once (a state database
        that cannot take it now is tried again at the next note)."""
        self.say(subject, line)
        key = subject_key(subject)
        if self._recorded.get(key) == line:
            return
        stored = printable(line)
        try:
            with self._state.transaction() as repos:
                previous = repos.failures.get(SCAN_TASK, key)
                if previous is None or stored not in previous.last_error:
                    repos.failures.record(SCAN_TASK, key, stored, permanent=permanent)
        except Exception as exc:  # said already; recorded at the next note that can
            log.debug("cannot record the problem of %s: %s", key, exc)
            return
        self._recorded[key] = line

    def healed(self, subject: str) -> bool:
        """Forget ``subject``'s problem (it reads again); True when it had one to forget. The
        caller clears the recorded failure in its own transaction."""
        self._recorded.pop(subject_key(subject), None)
        return self._said.pop(subject, None) is not None

    def clear(self, subjects: set[str]) -> None:
        """Forget these subjects' problems and delete their recorded failures."""
        if not subjects:
            return
        with self._state.transaction() as repos:
            for subject in subjects:
                self.healed(subject)
                repos.failures.clear(SCAN_TASK, subject_key(subject))
