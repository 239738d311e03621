"""The ``memory-worker`` command line (Typer + Rich).

Each command lives in its own module under ``worker/commands/`` and is registered here.
"""

from __future__ import annotations

import typer

app = typer.Typer(
    name="memory-worker",
    help="Turn DSH session logs into Hypatia memory.",
    no_args_is_help=True,
    add_completion=False,
)


@app.callback()
def _root() -> None:
    """Turn DSH session logs into Hypatia memory."""


def _register() -> None:
    from worker.commands import config as _config  # noqa: F401  (registers `config`)
    from worker.commands import daemon as _daemon  # noqa: F401  (registers `daemon`)
    from worker.commands import demo_home as _demo_home  # noqa: F401  (registers `demo-home`)
    from worker.commands import forget as _forget  # noqa: F401  (registers `forget`)
    from worker.commands import inspect as _inspect  # noqa: F401  (registers `inspect`)
    from worker.commands import migrate as _migrate  # noqa: F401  (registers `migrate`)
    from worker.commands import reconsolidate as _reconsolidate  # noqa: F401  (`reconsolidate`)
    from worker.commands import relog as _relog  # noqa: F401  (registers `relog`)
    from worker.commands import retract as _retract  # noqa: F401  (registers `retract`)
    from worker.commands import run as _run  # noqa: F401  (registers `run`)
    from worker.commands import status as _status  # noqa: F401  (registers `status`)
    from worker.commands import verify_forgetting as _verify  # noqa: F401  (`verify-forgetting`)
    from worker.commands import worker_cmd as _worker_cmd  # noqa: F401  (registers `worker`)


def main() -> None:
    _register()
    app()
