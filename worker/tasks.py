"""``celery -A dsh_memory_worker …``: the worker's Celery app under the name a Celery user types first
(``celery -A dsh_memory_worker inspect ping``, ``… events``, ``… purge``). The app, its tasks and its
configuration from the settings (environment and config file, at import) are
:mod:`worker.run.tasks`'; this module only names them. It needs the ``distributed`` extra."""

from dsh_memory_worker.worker.run.tasks import app

__all__ = ["app"]
