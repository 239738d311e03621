"""Logging: one configured tree, JSON lines through python-json-logger, job fields on every line.

Every module logs through ``logging.getLogger(__name__)``, so all of the project's loggers sit
under ``worker`` and ``memory``. :func:`setup_logging` installs one handler on the root logger
(third-party libraries at WARNING, the two project trees at the configured level), so nothing
bypasses the format (JSON or text) the settings ask for.

Inside a job, :func:`job_context` (entered by the job guard) sets the job's ``session``, ``job``,
``shelf`` and ``attempt`` in a context variable; :class:`JobFields`, a filter on the handler,
copies them onto every record emitted meanwhile — by any logger, the store and model client
included — so each JSON line of a job carries the four fields.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Final

from dsh_memory_worker.memory.printable import printable

if TYPE_CHECKING:
    from rich.console import Console

#: The project's logger trees (the ``dsh_memory_worker.worker`` and ``dsh_memory_worker.memory``
#: modules, named by ``__name__``).
TREES: Final = ("dsh_memory_worker.worker", "dsh_memory_worker.memory")
JOB_FIELDS: Final = ("session", "job", "shelf", "attempt")

_job: ContextVar[dict[str, Any] | None] = ContextVar("memory_worker_job", default=None)

#: Whether :func:`setup_logging` was asked for JSON lines (the log stream is then JSON only).
_json_lines: list[bool] = [False]

#: The logger of the command's own lines (:func:`record`): outside the two trees, so
#: :func:`quiet_job_lines` does not silence a run's summary.
COMMAND_LOGGER: Final = "memory-worker"


@contextmanager
def job_context(job: str, session_id: str, shelf: str, attempt: int) -> Iterator[None]:
    """Tag every log line emitted inside the block with the job's four fields."""
    token = _job.set({"session": session_id, "job": job, "shelf": shelf, "attempt": attempt})
    try:
        yield
    finally:
        _job.reset(token)


class JobFields(logging.Filter):
    """Adds ``session``, ``job``, ``shelf`` and ``attempt`` to records emitted inside a job."""

    def filter(self, record: logging.LogRecord) -> bool:
        fields = _job.get()
        if fields is not None:
            for key, value in fields.items():
                if not hasattr(record, key):
                    setattr(record, key, value)
        return True


class PrintableFormatter(logging.Formatter):
    """A plain (or Rich) log line whose message has its control characters escaped
    (:func:`dsh_memory_worker.memory.printable.printable`): a session id holding a newline or an
    ANSI escape cannot
    forge a second line or rewrite the terminal. Tracebacks keep their lines. (JSON lines need
    no such care: the encoder escapes control characters.)"""

    def formatMessage(self, record: logging.LogRecord) -> str:
        safe = logging.makeLogRecord(record.__dict__)
        safe.message = printable(record.message)
        return super().formatMessage(safe)


def json_formatter() -> logging.Formatter:
    """One JSON object per line: ``time`` (UTC ISO-8601), ``level``, ``logger``, ``message``,
    ``exc_info`` when there is a traceback, and any ``extra=`` / job fields."""
    from pythonjsonlogger.json import JsonFormatter

    return JsonFormatter(
        ["levelname", "name", "message"],
        rename_fields={"levelname": "level", "name": "logger"},
        timestamp="time",
        json_ensure_ascii=False,
    )


def setup_logging(level: str, *, json_lines: bool = False, console: Console | None = None) -> None:
    """Configure the tree: JSON lines when ``json_lines``, a Rich handler on ``console`` (a
    terminal), else plain text with a timestamp (service logs stay greppable). Idempotent."""
    handler: logging.Handler
    _json_lines[0] = json_lines
    if json_lines:
        handler = logging.StreamHandler()
        handler.setFormatter(json_formatter())
    elif console is not None:
        from rich.logging import RichHandler

        handler = RichHandler(console=console, show_path=False, markup=False)
        handler.setFormatter(PrintableFormatter("%(message)s"))
    else:
        handler = logging.StreamHandler()
        handler.setFormatter(PrintableFormatter("%(asctime)s %(levelname)s %(message)s"))
    handler.addFilter(JobFields())
    handler.set_name("memory-worker")
    root = logging.getLogger()
    root.handlers[:] = [h for h in root.handlers if h.get_name() != "memory-worker"]
    root.addHandler(handler)
    root.setLevel(logging.WARNING)
    for tree in TREES:
        logger = logging.getLogger(tree)
        logger.setLevel(level)
        logger.propagate = True


def json_mode() -> bool:
    """The log stream is JSON lines (``log_json``): a command writes no plain text on it."""
    return _json_lines[0]


def record(message: str, *, level: int = logging.INFO, **fields: Any) -> None:
    """One record of the command itself (a summary, what it follows, a stop) on the log stream,
    with ``fields`` (e.g. ``event="summary"``): in JSON mode, a JSON line."""
    logger = logging.getLogger(COMMAND_LOGGER)
    logger.setLevel(logging.INFO)
    logger.log(level, message, extra=fields)


def quiet_job_lines(level: str) -> None:
    """Under a progress bar: per-job INFO lines only when DEBUG was asked for."""
    if level == "DEBUG":
        return
    for tree in TREES:
        logger = logging.getLogger(tree)
        if logger.getEffectiveLevel() < logging.WARNING:
            logger.setLevel(logging.WARNING)
