"""One module per ``memory-worker`` command: a plain function that :mod:`worker.cli` registers
(the command modules do not import the CLI app), and :mod:`.common` for the helpers they share
(``load_or_exit``, ``open_runtime_or_exit``, ``setup_logging`` …), :mod:`.options` for the
shared options.

Start-up time: a command module's top level imports only Typer, Rich and the standard library;
every import of the runtime (our own ``worker`` / ``memory`` modules included) is function-local,
made when the command runs, so ``memory-worker --help`` and ``CMD --help`` load none of it
(``tests/project/test_startup_bench_smoke.py`` checks it).
"""
