"""The Alembic script directory of the state database (``env.py``, ``script.py.mako``,
``versions/``), at the top of the checkout and installed as the package
``dsh_memory_worker.migrations`` (``setup.py`` maps it), so a wheel install finds it beside
``worker`` and ``memory``. Nothing here is imported by the worker: Alembic loads these files."""
