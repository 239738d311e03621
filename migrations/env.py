"""Alembic environment for the state database.

Run programmatically by ``worker.state.migrate`` (which hands over an open connection in
``config.attributes["connection"]``) or by hand with ``alembic -x url=... upgrade head``.
"""

from __future__ import annotations

from alembic import context

from dsh_memory_worker.worker.state.models import Base

config = context.config
target_metadata = Base.metadata


def _url() -> str:
    url = context.get_x_argument(as_dictionary=True).get("url")
    if url:
        return url
    from dsh_memory_worker.worker.settings import load_settings

    return load_settings().effective_state_url


def _run(connection: object) -> None:
    context.configure(
        connection=connection,  # type: ignore[arg-type]
        target_metadata=target_metadata,
        render_as_batch=True,
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_offline() -> None:
    context.configure(
        url=_url(), target_metadata=target_metadata, literal_binds=True, render_as_batch=True
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        _run(connection)
        return
    from dsh_memory_worker.worker.state.migrate import locked_connection

    with locked_connection(_url()) as conn:
        _run(conn)


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
