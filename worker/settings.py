"""The worker's configuration: environment variables ``MEMORY_WORKER_*`` plus an optional TOML file.

This is the only module that reads the process environment or a configuration file; every other
module receives a :class:`Settings` (or single values from it).

Precedence, highest first: keyword overrides passed to :func:`load_settings`, environment
variables ``MEMORY_WORKER_<FIELD>``, the TOML file, the defaults below. The TOML file is the
``config_file`` argument (``--config``) or else the path in ``MEMORY_WORKER_CONFIG``; its keys are
the field names (``flush_window_s = 60``, ``[[model_routes]]`` tables).
"""

from __future__ import annotations

import json
import os
import re
import tomllib
import zoneinfo
from collections.abc import Iterable, Mapping
from contextvars import ContextVar
from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit, urlunsplit

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    SecretStr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic.fields import FieldInfo
from pydantic_settings import (
    BaseSettings,
    NoDecode,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)
from pydantic_settings import SettingsError as SourceError

from dsh_memory_worker.memory.constants import DEFAULT_WITHDRAWAL_WHITELIST
from dsh_memory_worker.worker.data_dir import DATA_DIR_NAME, default_data_dir

ENV_PREFIX = "MEMORY_WORKER_"
CONFIG_ENV = "MEMORY_WORKER_CONFIG"
MASK = "***"

DEFAULT_WITHDRAWAL_KINDS = DEFAULT_WITHDRAWAL_WHITELIST

StoreTransport = Literal["lite", "cli", "mcp"]


#: prometheus_client's multiprocess directory (read by prometheus_client itself at import).
PROMETHEUS_MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"


def prometheus_multiproc_dir() -> Path | None:
    """The multiprocess metrics directory this process was given, if any."""
    value = os.environ.get(PROMETHEUS_MULTIPROC_ENV)
    return Path(value) if value else None


def use_prometheus_multiproc_dir(directory: Path) -> None:
    """Put this process and the processes it forks or starts in multiprocess metrics mode."""
    os.environ[PROMETHEUS_MULTIPROC_ENV] = str(directory)


class SettingsError(ValueError):
    """The configuration is unusable; ``str(err)`` is one line that says what and where."""


class ModelRoute(BaseModel):
    """One OpenAI-compatible chat-completions route; routes are tried in list order."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    base_url: str = Field(min_length=1)
    model: str = Field(min_length=1)
    api_key_env: str | None = None
    """Name of the environment variable holding the key (preferred: keeps it out of files)."""
    api_key: SecretStr | None = None
    """The key itself; allowed but discouraged. Always masked when printed."""
    reasoning_effort: str | None = Field(default=None, min_length=1)
    """Sent as the request's reasoning effort (e.g. ``high``; ``off``/``none`` = no thinking)."""

    @model_validator(mode="after")
    def _needs_a_key_source(self) -> ModelRoute:
        if not (self.api_key_env or "").strip() and self.api_key is None:
            raise ValueError("a model route needs `api_key_env` (or an inline `api_key`)")
        return self


def _split_list(value: Any) -> Any:
    """Accept a JSON list or a comma-separated string for list fields given as text."""
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("["):
            return json.loads(text)
        return [part.strip() for part in text.split(",") if part.strip()]
    return value


# Defaults computed from another program's environment variable (not ``MEMORY_WORKER_*``): the
# default factory reads it, and ``value_sources`` reports ``env <NAME>`` when it is set.
_DEFAULT_FROM_ENV: dict[str, str] = {"dsh_home": "DSH_HOME", "data_dir": "XDG_DATA_HOME"}


def _default_dsh_home() -> Path:
    raw = os.environ.get(_DEFAULT_FROM_ENV["dsh_home"])
    return Path(raw).expanduser() if raw else Path.home() / ".dsh"


def _old_data_dir() -> Path:
    """The rule every platform had before platformdirs (and Linux keeps, as platformdirs does):
    ``$XDG_DATA_HOME/dsh-memory-worker``, else ``~/.local/share/dsh-memory-worker``."""
    xdg = os.environ.get(_DEFAULT_FROM_ENV["data_dir"])
    base = Path(xdg).expanduser() if xdg else Path.home() / ".local" / "share"
    return base / DATA_DIR_NAME


def _default_data_dir() -> Path:
    return default_data_dir(_old_data_dir())[0]


# The parsed TOML file for the settings object being built (set only inside load_settings).
_FILE_VALUES: ContextVar[Mapping[str, Any] | None] = ContextVar("_FILE_VALUES", default=None)


class _TomlValues(PydanticBaseSettingsSource):
    """Feeds the already parsed and key-checked TOML table to pydantic-settings."""

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        values = _FILE_VALUES.get() or {}
        return values.get(field_name), field_name, False

    def __call__(self) -> dict[str, Any]:
        return dict(_FILE_VALUES.get() or {})


class Settings(BaseSettings):
    """Every knob of the worker, with its default. Field names are stable (env, TOML, docs)."""

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX,
        extra="ignore",
        validate_default=True,
        frozen=True,
    )

    # --- where things are -------------------------------------------------------------------
    dsh_home: Path = Field(default_factory=_default_dsh_home)
    data_dir: Path = Field(default_factory=_default_data_dir)
    state_url: str | None = None
    """SQLAlchemy URL of the state database; ``None`` → ``sqlite:///<data_dir>/state.db``."""
    migrations_dir: Path | None = None
    """Alembic script directory; ``None`` → the packaged one (see ``worker.state.migrate``)."""

    shipping: bool = False
    """Log shipping (docs/shipping.md): the daemon ships each log's complete bytes into the state
    database and every job reads them from there; workers never open the DSH home."""
    shipping_segment_bytes: int = Field(default=256 << 10, ge=1 << 12, le=64 << 20)
    """About how many bytes one shipped segment holds (at least one whole frame or line)."""

    # --- broker -------------------------------------------------------------------------------
    broker_url: str = "redis://127.0.0.1:6379/0"
    result_backend: str | None = None

    # --- the memory store ---------------------------------------------------------------------
    store_transport: StoreTransport = "lite"
    store_binary: str = Field(default="hypatia", min_length=1)
    store_shelf: str = Field(default="default", pattern=r"^\S+$")
    store_timeout_s: float = Field(default=30.0, gt=0, le=3600)
    store_down_after_timeouts: int = Field(default=3, ge=1, le=100)
    """After this many store calls timed out within ``store_down_window_s`` (answers between them
    or not), the store is treated as down: calls fail at once (sessions named, exit 1) instead of
    each waiting ``store_timeout_s`` (docs/stores.md)."""
    store_down_window_s: float = Field(default=300.0, gt=0, le=86_400)
    """The sliding window in which ``store_down_after_timeouts`` timeouts are counted."""
    store_down_retry_s: float = Field(default=300.0, gt=0, le=86_400)
    """How long a store treated as down is left alone before one call tries it again."""
    lite_home: Path | None = None
    store_shelf_url: str | None = None
    """hypatia-lite on PostgreSQL: ``postgresql://user:pass@host:5432/db[?schema=name]`` is
    registered as ``store_shelf`` in ``lite_home`` when the store opens (docs/stores.md)."""

    # --- what the worker reads and how it cuts spans ------------------------------------------
    withdrawal_kinds: Annotated[list[str], NoDecode] = Field(
        default_factory=lambda: list(DEFAULT_WITHDRAWAL_KINDS)
    )
    flush_window_s: float = Field(default=120.0, ge=0, le=600)
    idle_close_s: float = Field(default=600.0, gt=0, le=86_400)
    poll_interval_s: float = Field(default=1.0, gt=0, le=60)
    reconcile_interval_s: float = Field(default=30.0, gt=0, le=3600)
    watch_notifications: bool = True
    """Follow the sessions root through file-system notifications (watchdog: inotify, FSEvents)
    and re-scan only the sessions whose files changed; polling every ``poll_interval_s`` is the
    fallback when they are unavailable or fail."""
    safety_scan_s: float = Field(default=300.0, gt=0, le=86_400)
    """With notifications: every this many seconds, list and scan the whole home anyway."""
    jobs_adapt: bool = True
    """``run --once --jobs N`` uses fewer processes (down to one) when fewer cores are free, or
    the home is too small to pay for them (:mod:`worker.run.cpu_budget`); ``false``: exactly N."""
    tool_ledger: bool = False
    log_max_frame_bytes: int = Field(default=64 << 20, ge=1 << 16, le=1 << 32)
    """The most bytes one zstd frame of a log may decode to, and one raw line may hold; a log
    with a larger one is refused (one line, shown by ``status``), not read into memory."""
    max_assistant_chars: int = Field(default=8000, ge=500)
    max_user_chars: int = Field(default=32000, ge=500)
    timezone: str | None = None
    """IANA zone for timestamps written into entries; ``None`` = the machine's local zone."""
    redact_extra_patterns: list[str] = Field(default_factory=list)
    """Extra regular expressions redacted as ``[REDACTED:custom]`` in everything written (env:
    a JSON list); after adding one, ``memory-worker relog`` rewrites what is already stored."""

    # --- task execution -----------------------------------------------------------------------
    concurrency: int = Field(default=1, ge=1, le=64)
    lease_ttl_s: float = Field(default=300.0, ge=5, le=86_400)
    lease_wait_s: float = Field(default=40.0, ge=0, le=3600)
    """How long ``run`` keeps retrying a job whose session lease a live process holds before it
    gives up on it (named, recorded as the job's failure; the next run retries it)."""
    task_max_retries: int = Field(default=2, ge=0, le=9)
    """Retries after the first attempt (the reference's maxAttempts 3 = 1 + 2 retries)."""
    retry_backoff_s: float = Field(default=5.0, ge=0.1, le=3600)

    # --- consolidation (reference §9 defaults and bounds) --------------------------------------
    consolidation_enabled: bool = True
    model_routes: list[ModelRoute] = Field(default_factory=list)
    model_timeout_s: float = Field(default=120.0, ge=1, le=3600)
    check_every_turns: int = Field(default=5, ge=1)
    min_new_tokens: int = Field(default=3000, ge=500)
    max_input_tokens: int = Field(default=16000, ge=1000)
    max_output_tokens: int = Field(default=2000, ge=200)
    max_work_units_per_run: int = Field(default=3, ge=1, le=10)
    adjudicate: bool = True
    dedup_max_distance: float = Field(default=0.45, ge=0, le=2)
    dedup_candidates: int = Field(default=5, ge=1, le=20)
    cascade_enabled: bool = True
    cascade_batch_size: int = Field(default=16, ge=2, le=64)
    consolidation_backfill_per_scope: int = Field(default=4, ge=1, le=64)
    reconcile_on_startup: bool = True

    # --- operations ---------------------------------------------------------------------------
    log_json: bool = False
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    metrics_port: int | None = Field(default=None, ge=1, le=65535)

    @field_validator("log_level", mode="before")
    @classmethod
    def _upper(cls, value: Any) -> Any:
        return value.strip().upper() if isinstance(value, str) else value

    @field_validator("store_transport", mode="before")
    @classmethod
    def _lower(cls, value: Any) -> Any:
        return value.strip().lower() if isinstance(value, str) else value

    @field_validator("withdrawal_kinds", mode="before")
    @classmethod
    def _parse_kinds(cls, value: Any) -> Any:
        return _split_list(value)

    @field_validator("withdrawal_kinds")
    @classmethod
    def _clean_kinds(cls, value: list[str]) -> list[str]:
        kinds = [kind.strip() for kind in value if kind.strip()]
        return list(dict.fromkeys(kinds))

    @field_validator("redact_extra_patterns")
    @classmethod
    def _check_patterns(cls, value: list[str]) -> list[str]:
        for pattern in value:
            if not pattern:
                raise ValueError("an empty redaction pattern would match everywhere")
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ValueError(f"redaction pattern {pattern!r} is not a regex: {exc}") from None
        return value

    @field_validator("dsh_home", "data_dir", "lite_home", "migrations_dir")
    @classmethod
    def _expand(cls, value: Path | None) -> Path | None:
        return value.expanduser() if value is not None else None

    @field_validator("timezone")
    @classmethod
    def _check_zone(cls, value: str | None) -> str | None:
        if value is None or value.strip() == "":
            return None
        try:
            zoneinfo.ZoneInfo(value)
        except (zoneinfo.ZoneInfoNotFoundError, ValueError) as exc:
            raise ValueError(f"unknown time zone {value!r}") from exc
        return value

    @field_validator("state_url", "broker_url", "result_backend")
    @classmethod
    def _check_url(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is None or value.strip() == "":
            if info.field_name == "broker_url":
                raise ValueError("must not be empty")
            return None
        if not re.match(r"^[A-Za-z][A-Za-z0-9+.-]*://", value):
            raise ValueError(f"not a URL (scheme://...): {mask_url(value)!r}")
        return value.strip()

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (init_settings, env_settings, _TomlValues(settings_cls))

    _sources: dict[str, str] = PrivateAttr(default_factory=dict)

    # --- derived values -----------------------------------------------------------------------
    @property
    def value_sources(self) -> dict[str, str]:
        """Where each value came from: ``option``, ``env`` (its ``MEMORY_WORKER_*`` variable),
        ``env <NAME>`` (a default computed from another variable, e.g. ``env DSH_HOME``),
        ``file`` or ``default`` (filled by :func:`load_settings`; empty for a ``Settings``
        built directly)."""
        return dict(self._sources)

    @property
    def sessions_root(self) -> Path:
        """Where DSH keeps session directories: ``<dsh_home>/sessions``."""
        return self.dsh_home / "sessions"

    @property
    def effective_state_url(self) -> str:
        """``state_url``, or the SQLite file ``<data_dir>/state.db`` when unset."""
        if self.state_url:
            return self.state_url
        return f"sqlite:///{self.data_dir / 'state.db'}"

    @property
    def state_file(self) -> Path | None:
        """The SQLite file of the state database, or ``None`` when it is not a plain SQLite
        file URL (PostgreSQL, ``:memory:``, a URI with options): the one rule for it, read
        without SQLAlchemy (the at-rest record, the fresh-home paths)."""
        url = self.effective_state_url
        prefix = "sqlite:///"
        if not url.startswith(prefix) or any(ch in url for ch in "?%#"):
            return None
        path = url[len(prefix) :]
        if not path or path == ":memory:" or path.startswith("file:"):
            return None
        return Path(path).expanduser().absolute()

    def route_api_key(self, route: ModelRoute) -> str | None:
        """The API key of ``route``: its ``api_key``, else the value of ``api_key_env``."""
        if route.api_key is not None:
            return route.api_key.get_secret_value()
        if route.api_key_env:
            return os.environ.get(route.api_key_env) or None
        return None

    def public_dict(self) -> dict[str, Any]:
        """Every effective value as JSON-ready data, secrets masked (URL passwords, API keys)."""
        data = self.model_dump(mode="json")
        data["state_url"] = mask_url(self.effective_state_url)
        data["sessions_root"] = str(self.sessions_root)
        data["broker_url"] = mask_url(self.broker_url)
        if self.store_shelf_url:
            data["store_shelf_url"] = mask_url(self.store_shelf_url)
        if self.result_backend:
            data["result_backend"] = mask_url(self.result_backend)
        routes = []
        for route in self.model_routes:
            shown = route.model_dump(mode="json")
            shown["base_url"] = mask_url(route.base_url)
            shown["api_key"] = MASK if route.api_key is not None else None
            shown["api_key_set"] = self.route_api_key(route) is not None
            routes.append(shown)
        data["model_routes"] = routes
        return data


def environment_without(names: Iterable[str]) -> dict[str, str]:
    """This process's environment without ``names``: a child process's (``git``'s in the project
    scope), read here like every other value of the environment."""
    dropped = frozenset(names)
    return {k: v for k, v in os.environ.items() if k not in dropped}


def mask_url(url: str) -> str:
    """``url`` with any password replaced by ``***`` (``redis://:***@host:6379/0``)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return url
    if parts.password is None:
        return url
    netloc = parts.netloc
    userinfo, _, hostport = netloc.rpartition("@")
    user = userinfo.split(":", 1)[0]
    return urlunsplit(parts._replace(netloc=f"{user}:{MASK}@{hostport}"))


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as handle:
            data = tomllib.load(handle)
    except FileNotFoundError as exc:
        raise SettingsError(f"config file {path} does not exist") from exc
    except OSError as exc:
        raise SettingsError(f"config file {path} cannot be read: {exc.strerror}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise SettingsError(f"config file {path} is not valid TOML: {exc}") from exc
    unknown = sorted(set(data) - set(Settings.model_fields))
    if unknown:
        raise SettingsError(
            f"config file {path}: unknown setting(s) {', '.join(unknown)} "
            "(see `memory-worker config` for the names)"
        )
    return data


def _one_line(exc: ValidationError, path: Path | None, options: Iterable[str] = ()) -> str:
    problems = []
    for error in exc.errors():
        loc = ".".join(str(part) for part in error["loc"])
        field = str(error["loc"][0]) if error["loc"] else ""
        where = (
            "a command-line option"
            if field in options
            else f"{ENV_PREFIX}{field.upper()}" + (f" or {path}" if path else "")
        )
        problems.append(f"{loc}: {error['msg']} (set by {where})")
    return "invalid configuration: " + "; ".join(problems)


def _source_line(exc: SourceError) -> str:
    found = re.search(r'field "([^"]+)"', str(exc))
    field = found.group(1) if found else "?"
    cause = exc.__cause__
    why = (
        f"not valid JSON ({cause.msg} at char {cause.pos})"
        if isinstance(cause, json.JSONDecodeError)
        else " ".join(str(cause or exc).split())
    )
    return f"invalid configuration: {field}: {why} (set by {ENV_PREFIX}{field.upper()})"


def load_settings(config_file: Path | str | None = None, **overrides: Any) -> Settings:
    """Build the effective settings; raise :class:`SettingsError` (one line) when invalid."""
    raw_path = config_file if config_file is not None else os.environ.get(CONFIG_ENV)
    path = Path(raw_path).expanduser() if raw_path else None
    values = _read_toml(path) if path is not None else {}
    token = _FILE_VALUES.set(values)
    try:
        settings = Settings(**overrides)
    except ValidationError as exc:
        raise SettingsError(_one_line(exc, path, overrides)) from None
    except SourceError as exc:  # an environment value that is not the JSON a list/model needs
        raise SettingsError(_source_line(exc)) from None
    finally:
        _FILE_VALUES.reset(token)
    env_names = {name.upper() for name in os.environ}
    for name in Settings.model_fields:
        if name in overrides:
            source = "option"
        elif f"{ENV_PREFIX}{name.upper()}" in env_names:
            source = "env"
        elif name in values:
            source = "file"
        elif name == "data_dir" and default_data_dir(_old_data_dir())[1]:
            source = "default (old location: it holds the state database)"
        elif os.environ.get(_DEFAULT_FROM_ENV.get(name, "")):  # the factory's own test
            source = f"env {_DEFAULT_FROM_ENV[name]}"
        else:
            source = "default"
        settings._sources[name] = source
    return settings
