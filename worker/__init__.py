"""The runtime of dsh-memory-worker: settings, state, jobs, Celery tasks, daemon, CLI."""
