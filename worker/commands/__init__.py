"""One module per ``memory-worker`` command; each registers itself on ``worker.cli.app``."""
