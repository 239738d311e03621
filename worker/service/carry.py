"""Which of the installing shell's variables a service carries, so that at login the worker
follows the same home with the same routes as the ``memory-worker run`` the user tried:

* every ``MEMORY_WORKER_*`` and ``HYPATIA_*`` variable, ``DSH_HOME`` and ``XDG_DATA_HOME`` (the
  defaults of ``dsh_home`` and ``data_dir`` follow them), and the variables the model routes
  read their keys from (``api_key_env``);
* a secret — decided by its name (``KEY``, ``TOKEN``, ``SECRET``, ``PASSWORD`` …) or by a value
  that holds a URL password or an inline ``api_key`` — goes to an environment file of mode 0600
  that the unit references, never inline in the unit;
* ``PATH`` is not the shell's: it is the directory of ``memory-worker`` (the venv's ``bin/``), the
  store binary's directory (the ``cli`` / ``mcp`` stores run it) and the system directories
  (``git``, which the project scope runs).

:func:`carry` also says, one line each, what it carried and what it did not. Standard library
only, like the rest of :mod:`worker.service`.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final
from urllib.parse import urlsplit

#: Prefixes of the variables every service carries.
CARRIED_PREFIXES: Final = ("MEMORY_WORKER_", "HYPATIA_")
#: Single variables every service carries (the worker's defaults follow them).
CARRIED_NAMES: Final = ("DSH_HOME", "XDG_DATA_HOME")
#: Directories after the venv's and the store's on the service's PATH.
SYSTEM_PATH: Final = ("/usr/local/bin", "/usr/bin", "/bin")
#: Variables of the shell that look relevant but are left out, and why.
LEFT_OUT: Final = {
    "VIRTUAL_ENV": "the unit runs the venv's memory-worker by its absolute path",
    "PROMETHEUS_MULTIPROC_DIR": "the worker sets its own for --jobs",
}

_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSW|CREDENTIAL|AUTH|COOKIE", re.IGNORECASE)
_PATH_VALUED = re.compile(r"(^|_)(HOME|DIR|CONFIG|FILE|PATH)$")
_SHOWN_CHARS: Final = 100


def is_secret(name: str, value: str) -> bool:
    """A secret by its name, or by a value holding a URL password or an inline API key. A name
    ending in ``_ENV`` holds the name of another variable (``HYPATIA_LITE_EMBED_KEY_ENV``)."""
    if (_SECRET_NAME.search(name) and not name.endswith("_ENV")) or '"api_key"' in value:
        return True
    for word in re.findall(r"[a-z][a-z0-9+.-]*://\S+", value):
        try:
            if urlsplit(word).password:
                return True
        except ValueError:
            continue
    return False


@dataclass(frozen=True, slots=True)
class Carried:
    """The service's ``environment`` (in the unit), its ``secrets`` (in the environment file)
    and one report line per variable carried or not."""

    environment: dict[str, str] = field(default_factory=dict)
    secrets: dict[str, str] = field(default_factory=dict)
    report: list[str] = field(default_factory=list)


def _shown(name: str, value: str) -> str:
    text = value if len(value) <= _SHOWN_CHARS else value[: _SHOWN_CHARS - 1] + "…"
    return f"{name}={text}"


def _absolute(name: str, value: str, cwd: Path) -> str:
    """A relative path in a path-valued variable, made absolute (the service's directory is not
    the shell's); ``~`` stays (the worker expands it, HOME is the same)."""
    if not value or not _PATH_VALUED.search(name) or value.startswith(("/", "~")):
        return value
    if "://" in value:
        return value
    return str(cwd / value)


def embedder_keys(environ: Mapping[str, str]) -> list[str]:
    """The variable hypatia-lite's OpenAI-compatible embedder reads its key from, when the
    environment selects that embedder (docs/stores.md)."""
    kind = environ.get("HYPATIA_LITE_EMBEDDER", "").strip().lower()
    if kind == "openai" or (environ.get("HYPATIA_LITE_EMBED_URL", "").strip() and not kind):
        return [environ.get("HYPATIA_LITE_EMBED_KEY_ENV") or "OPENAI_API_KEY"]
    return []


def service_path(program: Path, store_binary: str | None, environ: Mapping[str, str]) -> list[str]:
    """The service's PATH: ``program``'s directory, the store binary's (found on this shell's
    PATH when not absolute; left out when not found or ``None``), then :data:`SYSTEM_PATH`."""
    directories = [str(program.parent)]
    found = shutil.which(store_binary, path=environ.get("PATH", "")) if store_binary else None
    if found is not None:
        directories.append(str(Path(found).absolute().parent))
    return list(dict.fromkeys([*directories, *SYSTEM_PATH]))


def carry(
    environ: Mapping[str, str],
    *,
    program: Path,
    store_binary: str | None,
    key_names: Iterable[str],
    cwd: Path,
) -> Carried:
    """What a service started from ``environ`` carries; see the module's docstring.
    ``store_binary``: the ``cli`` / ``mcp`` store's program (``None``: the store is in process)."""
    carried = Carried()
    keys = [name for name in dict.fromkeys([*key_names, *embedder_keys(environ)]) if name]
    chosen = sorted(
        name
        for name in environ
        if name.startswith(CARRIED_PREFIXES) or name in CARRIED_NAMES or name in keys
    )
    for name in chosen:
        value = _absolute(name, environ[name], cwd)
        if not value:
            carried.report.append(f"does not carry {name} (empty here)")
        elif is_secret(name, value):
            carried.secrets[name] = value
            carried.report.append(f"carries {name} (a secret: in the environment file, 0600)")
        else:
            carried.environment[name] = value
            carried.report.append(f"carries {_shown(name, value)}")
    for name in keys:
        if name not in environ:
            carried.report.append(
                f"does not carry {name} (not set here: the model route or embedder that reads "
                "its key from it has none)"
            )
    path = service_path(program, store_binary, environ)
    carried.environment["PATH"] = ":".join(path)
    if store_binary and shutil.which(store_binary, path=environ.get("PATH", "")) is None:
        carried.report.append(
            f"does not carry the store binary {store_binary!r}: not found on this PATH "
            "(the cli and mcp stores need it)"
        )
    carried.report.append(f"does not carry this shell's PATH (the service's: {':'.join(path)})")
    for name in sorted(environ):
        if name.startswith("DSH_") and name not in CARRIED_NAMES:
            carried.report.append(f"does not carry {name} (the worker reads only DSH_HOME)")
        elif name in LEFT_OUT:
            carried.report.append(f"does not carry {name} ({LEFT_OUT[name]})")
    return carried


def differences(service: Mapping[str, str], shell: Mapping[str, str]) -> list[str]:
    """What differs between the service's environment and the one this shell would give it,
    one item per variable; secret values are never shown."""
    found = []
    for name in sorted(set(service) | set(shell)):
        mine, theirs = shell.get(name), service.get(name)
        if mine == theirs:
            continue
        if theirs is None:
            found.append(f"{name} (set here, not in the service)")
        elif mine is None:
            found.append(f"{name} (in the service, not set here)")
        elif is_secret(name, mine) or is_secret(name, theirs):
            found.append(f"{name} (a different secret)")
        else:
            found.append(f"{name} (service {_shown('', theirs)[1:]}, here {_shown('', mine)[1:]})")
    return found
