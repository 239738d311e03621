"""The worker's Celery app under a short name: ``celery -A dsh_memory_worker …`` finds it through
:mod:`dsh_memory_worker.celery` (``celery -A dsh_memory_worker inspect ping``, ``… events``,
``… purge``; ``-A dsh_memory_worker.worker.tasks`` names the same app). The app, its tasks and its
configuration from the settings (environment and config file, at import) are
:mod:`dsh_memory_worker.worker.run.tasks`; this module only names them. It needs the
``distributed`` extra."""

from dsh_memory_worker.worker.run.tasks import app

__all__ = ["app"]
