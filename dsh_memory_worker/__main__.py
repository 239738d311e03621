"""``python -m dsh_memory_worker …`` is ``memory-worker …``."""

from dsh_memory_worker.worker.cli import main

if __name__ == "__main__":
    main()
