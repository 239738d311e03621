"""``celery -A dsh_memory_worker …``: Celery finds the worker's app here (``<package>.celery``,
Celery's own convention), configured from the settings when imported — e.g.
``celery -A dsh_memory_worker inspect ping``. ``dsh_memory_worker.worker.tasks`` names the same
app."""

from dsh_memory_worker.worker.tasks import app

__all__ = ["app"]
