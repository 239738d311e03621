"""The domain of dsh-memory-worker: DSH logs in, Hypatia memory out. No Celery, no database."""
