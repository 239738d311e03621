"""The runtime of dsh-memory-worker: settings, state, jobs, Celery tasks, daemon, CLI."""

__version__ = "0.1.0"
