"""``memory-worker service install | uninstall | status`` — run ``memory-worker run`` at login
under the user's service manager: a ``systemd --user`` unit on Linux, a launchd LaunchAgent on
macOS (:mod:`worker.service`; docs/service.md).

``install`` writes the file (``--print``: only prints it) and loads it: enabled at login, started
now, restarted on failure. It carries this shell's settings (:mod:`worker.service.carry`), the
secrets in an environment file of mode 0600, and says one line per setting carried or not. When
the manager cannot be reached (no user bus, as in a container; no ``launchctl``) the file is
written anyway and one line says how to load it, exit 1. ``uninstall`` unloads the service and
removes exactly what ``install`` made (the file, the environment file, and the directories it
created if they are empty). ``status`` exits 0 only when the service is installed and running,
and says whether its settings differ from this shell's.

Start-up time: this module imports only Typer and the standard library at its top level.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from dsh_memory_worker.worker.commands.options import ConfigOption, DshHomeOption, command_group

if TYPE_CHECKING:
    from dsh_memory_worker.worker.service.manager import Manager
    from dsh_memory_worker.worker.service.spec import ServiceSpec

service_app = command_group(
    "service",
    "Run `memory-worker run` at login: a systemd --user unit (Linux) or a launchd "
    "LaunchAgent (macOS).",
)

ManagerOption = Annotated[
    str | None,
    typer.Option(
        "--manager", help="systemd or launchd (default: systemd on Linux, launchd on macOS)."
    ),
]

SAY = "memory-worker service"


def _fail(line: str, code: int = 2) -> typer.Exit:
    typer.echo(f"{SAY}: {line}", err=True)
    return typer.Exit(code)


def _manager(chosen: str | None) -> Manager:
    from dsh_memory_worker.worker.service.launchd import Launchd
    from dsh_memory_worker.worker.service.systemd import Systemd

    managers: dict[str, Manager] = {"systemd": Systemd(), "launchd": Launchd()}
    if chosen is None:
        chosen = {"linux": "systemd", "darwin": "launchd"}.get(sys.platform)
        if chosen is None:
            raise _fail(
                f"not supported on {sys.platform}: the worker runs on Linux and macOS "
                "(docs/service.md)"
            )
    if chosen not in managers:
        raise _fail(f"--manager {chosen!r}: choose systemd or launchd")
    return managers[chosen]


def _environment() -> dict[str, str]:
    """This process's environment (read, like every value of it, in :mod:`worker.settings`): the
    unit gets PATH and the ``--env`` variables from it, the file's place HOME / XDG_CONFIG_HOME."""
    from dsh_memory_worker.worker.settings import environment_without

    return environment_without(())


def _installed(
    manager: str | None, absent: str = "; nothing to remove"
) -> tuple[Manager, dict[str, str], Path | None]:
    """The service manager, this environment and the installed service's file; ``None`` (with
    the line ``not installed (no FILE)`` and ``absent`` after it) when there is none."""
    chosen = _manager(manager)
    environ = _environment()
    path = chosen.file(environ)
    if path.exists():
        return chosen, environ, path
    typer.echo(f"not installed (no {path}){absent}")
    return chosen, environ, None


def _write(path: Path, content: bytes, base: Path) -> list[Path]:
    """Write ``content`` to ``path`` (mode 0600: it may hold environment values) through a
    temporary file; the directories it had to create, outermost first."""
    made = []
    directory = path.parent
    while not directory.exists() and directory != base:
        made.append(directory)
        directory = directory.parent
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(content)
    os.replace(partial, path)
    return made[::-1]


@service_app.command("install")
def install(
    print_: Annotated[
        bool, typer.Option("--print", help="Print the file; install nothing.")
    ] = False,
    env: Annotated[
        list[str] | None,
        typer.Option(
            "--env",
            help="Pass this variable too (NAME: its value here; NAME=VALUE); repeatable. "
            "MEMORY_WORKER_*, HYPATIA_*, DSH_HOME and the routes' key variables are "
            "carried without it.",
        ),
    ] = None,
    manager: ManagerOption = None,
    dsh_home: DshHomeOption = None,
    config: ConfigOption = None,
) -> None:
    """Write, enable and start the service that runs `memory-worker run`, with the settings
    of this shell (one line each for what it carries and what it does not)."""
    from dsh_memory_worker.worker.service import envfile
    from dsh_memory_worker.worker.service.spec import ServiceError, remove_empty_parents

    chosen = _manager(manager)
    environ = _environment()
    try:
        spec = _spec(chosen, environ, config, dsh_home, list(env or []))
        content = chosen.render(spec, environ)
        secrets = envfile.render(spec.secrets) if spec.env_file is not None else None
    except ServiceError as exc:
        raise _fail(str(exc)) from None
    for line in spec.report:
        typer.echo(line, err=print_)
    if spec.env_file is not None:
        typer.echo(f"environment file (mode 0600): {spec.env_file}", err=print_)
    if print_:
        sys.stdout.buffer.write(content)
        return
    path = chosen.file(environ)
    if path.exists():
        chosen.unload(path)  # an update: the new file replaces the loaded one
    old_secrets = chosen.env_file(environ)
    if secrets is not None and spec.env_file is not None:
        _write(spec.env_file, secrets, chosen.base(environ))
    elif old_secrets.exists():  # none now: the last install's go
        old_secrets.unlink()
        remove_empty_parents(old_secrets, chosen.base(environ))
    _write(path, content, chosen.base(environ))
    logs = chosen.log_directory(environ)
    if logs is not None:
        logs.mkdir(parents=True, exist_ok=True)
    loaded = chosen.load(path)
    if not loaded.ok:
        raise _fail(
            f"wrote {path}, but {chosen.name} is not reachable here ({loaded.line}); "
            f"load it in your login session with: {chosen.load_hint(path)}",
            1,
        )
    typer.echo(f"installed and started {path}; logs: {chosen.log_hint(environ)}")


def _spec(
    chosen: Manager,
    environ: dict[str, str],
    config: Path | None,
    dsh_home: Path | None,
    env: list[str],
) -> ServiceSpec:
    """The service of this shell's settings; a configuration the service could not start with
    fails here (:class:`~worker.service.spec.ServiceError`), not at every restart."""
    from dsh_memory_worker.worker.service.spec import ServiceError, build_spec
    from dsh_memory_worker.worker.settings import SettingsError, load_settings

    try:
        settings = load_settings(config, **({"dsh_home": dsh_home} if dsh_home else {}))
    except SettingsError as exc:
        raise ServiceError(str(exc)) from None
    return build_spec(
        config=config,
        dsh_home=dsh_home,
        env_names=env,
        environ=environ,
        store_binary=settings.store_binary if settings.store_transport != "lite" else None,
        key_names=tuple(r.api_key_env for r in settings.model_routes if r.api_key_env),
        env_file=chosen.env_file(environ),
    )


@service_app.command("uninstall")
def uninstall(manager: ManagerOption = None) -> None:
    """Stop and disable the service, and remove what `service install` made."""
    from dsh_memory_worker.worker.service.spec import remove_empty_parents

    chosen, environ, path = _installed(manager)
    if path is None:
        return
    unloaded = chosen.unload(path)
    path.unlink()
    remove_empty_parents(path, chosen.base(environ))
    secrets = chosen.env_file(environ)
    if secrets.exists():
        secrets.unlink()
        remove_empty_parents(secrets, chosen.base(environ))
    logs = chosen.log_directory(environ)
    if logs is not None:  # only if the service never wrote a log there
        remove_empty_parents(logs / "-", chosen.base(environ))
    chosen.reload_after_removal()
    typer.echo(f"removed {path}")
    if not unloaded.ok:
        typer.echo(
            f"{SAY}: {chosen.name} was not reachable ({unloaded.line}): nothing was stopped here",
            err=True,
        )


def _compared(chosen: Manager, path: Path, environ: dict[str, str]) -> str:
    """Whether the installed service's environment is the one this shell would give it."""
    from dsh_memory_worker.worker.service.carry import differences
    from dsh_memory_worker.worker.service.spec import ServiceError

    argv = chosen.command(path)  # the installed --config / --dsh-home, read as the service does
    options = {
        flag: Path(argv[argv.index(flag) + 1])
        for flag in ("--config", "--dsh-home")
        if flag in argv[:-1]
    }
    try:
        here = _spec(chosen, environ, options.get("--config"), options.get("--dsh-home"), [])
    except ServiceError as exc:
        return f"cannot compare with this shell ({exc})"
    found = differences(chosen.environment(path), {**here.environment, **here.secrets})
    if not found:
        return "the same as this shell's"
    return "differ from this shell's: " + "; ".join(found)


@service_app.command("status")
def status(manager: ManagerOption = None) -> None:
    """Whether the service is installed and running; exit 0 only when it runs."""
    chosen, environ, path = _installed(manager, "")
    if path is None:
        raise typer.Exit(1)
    state = chosen.state(path)
    typer.echo(f"installed: {path}")
    typer.echo(f"{chosen.name}: {state.line}")
    typer.echo(f"settings: {_compared(chosen, path, environ)}")
    typer.echo(f"logs: {chosen.log_hint(environ)}")
    raise typer.Exit(0 if state.running else 1)
