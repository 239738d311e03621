"""``python -m worker …`` is ``memory-worker …``."""

from worker.cli import main

main()
