"""Which sessions a poll reads: the listing of the sessions root (:func:`survey_sessions`), one
location per session id, and one line for each entry that is refused (a symlink out of the DSH
home, a FIFO or a directory where the log should be, an id no state database can store, ...)."""

from __future__ import annotations

import logging
import os
from collections.abc import Collection
from pathlib import Path

from dsh_memory_worker.memory.dsh.locate import CachedSurvey, SessionLocation
from dsh_memory_worker.worker.watch.scan_problems import ProblemBook, session_id_problem

log = logging.getLogger("memory_worker")


class SessionFinder:
    """Lists the sessions under ``root`` for a watcher; problems go to its :class:`ProblemBook`.
    With ``only_sessions`` (a share of the home) it reports nothing: the owner of the whole
    listing does."""

    def __init__(
        self, root: Path, problems: ProblemBook, only_sessions: frozenset[str] | None
    ) -> None:
        self.root = root
        self.problems = problems
        self.only_sessions = only_sessions
        self._root_missing = False
        self._location_problems: set[str] = set()  # subjects with a problem in the listing
        self._survey = CachedSurvey(root)

    def discover(
        self,
        *,
        stale: set[str] | frozenset[str] = frozenset(),
        trust: bool = False,
        full: bool = False,
    ) -> list[SessionLocation]:
        """The sessions a poll reads: one per session id (the first found), only
        ``only_sessions`` when given; ids that cannot be stored are refused.

        Directory listings are cached by mtime (:class:`memory.dsh.locate.CachedSurvey`);
        ``stale`` / ``trust`` are passed to it (file-system notifications), ``full`` lists
        everything again (the periodic safety scan)."""
        if full:
            self._survey.forget()
        if not self.root.is_dir():
            if not self._root_missing:
                log.warning(
                    "DSH home %s has no sessions directory (%s): nothing to read yet; "
                    "set MEMORY_WORKER_DSH_HOME or --dsh-home if DSH keeps its logs elsewhere",
                    self.root.parent,
                    self.root,
                )
                self._root_missing = True
            return []
        self._root_missing = False
        survey = self._survey.survey(stale=stale, trust=trust)
        if self.only_sessions is None:  # with a share of the home, its owner reported them
            self._location_report({str(p.subject): str(p) for p in survey.problems})
        seen: dict[str, SessionLocation] = {}
        for location in survey.sessions:
            other = seen.get(location.session_id)
            refused = session_id_problem(location.session_id)
            if refused is not None:
                if self.only_sessions is None:
                    self.problems.note(
                        location.session_id,
                        f"session directory "
                        f"{location.directory}: the session id {refused}; "
                        "not read",
                    )
                continue
            if other is not None:
                self.problems.say(
                    f"duplicate:{location.session_id}",
                    f"session id {location.session_id} appears twice ({other.directory} and "
                    f"{location.directory}); only the first is read",
                )
                continue
            seen[location.session_id] = location
        if self.only_sessions is not None:
            return [loc for sid, loc in seen.items() if sid in self.only_sessions]
        return list(seen.values())

    def _location_report(self, found: dict[str, str]) -> None:
        """Note each refused entry of the listing once; forget those that are gone."""
        for subject, line in found.items():
            self.problems.note(subject, line)
        self.problems.clear(self._location_problems - set(found))
        self._location_problems = set(found)


def changed_directories(root: Path, paths: Collection[str]) -> tuple[set[str], set[str], bool]:
    """What notified ``paths`` below the sessions ``root`` mean for discovery:
    ``(stale, touched, whole)`` — the directories whose cached listing is out of date, the
    session directories to scan, and whether the root's own entries changed (a project
    directory came or went: every session is scanned)."""
    base = str(root)
    stale: set[str] = set()
    touched: set[str] = set()
    whole = False
    for path in paths:
        rel = os.path.relpath(path, base)
        if rel == "." or rel.startswith(".."):
            whole = whole or rel == "."
            continue
        parts = rel.split(os.sep)
        project = os.path.join(base, parts[0])
        if len(parts) == 1:  # a project directory (or a file at the root) came or went
            whole = True
            stale.update((base, project))
            continue
        session = os.path.join(project, parts[1])
        if len(parts) == 2:  # a session directory came, went or was renamed
            stale.add(project)
        stale.add(session)
        touched.add(session)
    if whole:
        stale.add(base)
    return stale, touched, whole
