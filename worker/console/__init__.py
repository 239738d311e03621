"""``memory-worker console``: a local web page over the worker's state database and shelf.

The top floor of ``worker/`` beside ``commands``: it imports ``jobs``, ``state``, ``verify``,
``consolidation_state`` and ``memory``; only :mod:`worker.commands.console` imports it, when the
command runs (Starlette, Jinja2 and uvicorn are never loaded by any other command). See
``docs/console.md``.
"""
