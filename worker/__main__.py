"""``python -m dsh_memory_worker.worker …`` is ``memory-worker …`` (``python -m dsh_memory_worker``
too)."""

from dsh_memory_worker.worker.cli import main

main()
