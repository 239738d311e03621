"""``python -m dsh_memory_worker …`` is ``memory-worker …``."""

from dsh_memory_worker.worker.cli import main

main()
