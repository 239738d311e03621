"""``hypatia`` over subprocess: one process per call, argv lists only (never a shell).

Follows Hypatia's CLI contract (``hypatia-protocol.md`` §2, §5.2): ``--shelf`` on every call,
data in the single-argument ``--data=`` form capped at 96 KiB on a UTF-8 boundary, the
``Knowledge '<n>' not found.`` / ``No results found.`` sentinels, duplicates recognised by the
UNIQUE / duplicate-key texts, a feature probe from ``--help`` and bounded, jittered retries of
transient failures (timeouts, ``database is locked``).

The row parsers, list normalisers and error classification live in :mod:`memory.store.replies`
(shared with the MCP adapter, so both transports turn the same reply into the same rows); they
stay importable from here.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from tenacity import Retrying, retry_if_exception_type, stop_after_attempt, wait_random_exponential

from dsh_memory_worker.memory.store.base import (
    Catalog,
    DuplicateError,
    FatalStoreError,
    Features,
    KnowledgeEntry,
    NotFoundError,
    QueryRow,
    SearchRow,
    SimilarRow,
    StoreError,
    Target,
    TransientStoreError,
)
from dsh_memory_worker.memory.store.breaker import Breaker, StoreTimeout
from dsh_memory_worker.memory.store.lifetime import die_with_parent
from dsh_memory_worker.memory.store.reaper import reaper_fd, register_in_child, unregister
from dsh_memory_worker.memory.store.replies import (
    MAX_DATA_BYTES,
    classify_error,
    create_args,
    filter_excluded,
    fit_data,
    jse_text,
    normalize_scopes,
    normalize_tags,
    parse_entry,
    parse_query_rows,
    parse_search_rows,
    parse_similar_rows,
    scopes_arg,
    update_args,
    well_formed,
)

STDOUT_CAP = 512 * 1024
STDERR_CAP = 64 * 1024
KILL_GRACE_S = 3.0
NO_RESULTS = "No results found."

_NOT_FOUND_GET = re.compile(r"^Knowledge '.*' not found\.$", re.DOTALL)

T = TypeVar("T")

# --------------------------------------------------------------------------------- the adapter


class CliStore:
    """A ``MemoryStore`` that runs ``<binary> <command> … --shelf <shelf>`` once per call."""

    def __init__(
        self,
        shelf: str = "default",
        binary: str = "hypatia",
        *,
        timeout_s: float = 30.0,
        attempts: int = 3,
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
        stdout_cap: int = STDOUT_CAP,
        stderr_cap: int = STDERR_CAP,
        breaker: Breaker | None = None,
    ) -> None:
        self.shelf = shelf
        self.binary = binary
        self.timeout_s = timeout_s
        self.attempts = max(1, attempts)
        self.max_data_bytes = MAX_DATA_BYTES
        self._env = {**os.environ, **(env or {})}
        self._cwd = cwd or Path.home()
        self._stdout_cap = stdout_cap
        self._stderr_cap = stderr_cap
        self._features: Features | None = None
        self._failed_probes = 0
        #: Consecutive timeouts open it: the store is then treated as down (:mod:`.breaker`).
        self.breaker = breaker or Breaker()

    # ---------------------------------------------------------------------------- process

    def _run_once(self, argv: list[str]) -> tuple[int, str, str]:
        shown = " ".join(argv[:2])
        self.breaker.before_call(f"{self.binary} {shown}")
        reaper = reaper_fd()
        try:
            proc = subprocess.Popen(
                [self.binary, *argv],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=self._cwd,
                env=self._env,
                start_new_session=True,
                preexec_fn=_child_setup(os.getpid(), reaper),
            )
        except FileNotFoundError as exc:
            raise FatalStoreError(f"hypatia binary not found: {self.binary}") from exc
        except OSError as exc:
            raise FatalStoreError(f"cannot start {self.binary}: {exc}") from exc
        try:
            out, err = proc.communicate(timeout=self.timeout_s)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            message = f"{self.binary} {shown} timed out after {self.timeout_s:g} s and was killed"
            self.breaker.timed_out(message)
            raise StoreTimeout(message) from None
        except BaseException:  # SIGINT / SIGTERM as an exception: the call dies with us
            _kill_group(proc)
            raise
        finally:
            unregister(reaper, proc.pid)
        self.breaker.answered()
        if len(out) > self._stdout_cap:
            raise FatalStoreError(f"{self.binary} {shown}: stdout exceeds {self._stdout_cap} bytes")
        stderr = err[: self._stderr_cap].decode("utf-8", "replace")
        return proc.returncode, out.decode("utf-8", "replace"), stderr

    def _run(self, argv: list[str]) -> tuple[int, str, str]:
        """Run once, retrying transient failures (bounded, jittered); non-zero exits classified."""

        def attempt() -> tuple[int, str, str]:
            code, out, err = self._run_once(argv)
            if code != 0:
                context = f"{self.binary} exited {code}: {argv[0]}"
                error = classify_error(err or out, context=context)
                if code == 2 and not isinstance(error, TransientStoreError):
                    raise FatalStoreError(str(error))
                raise error
            return code, out, err

        return self._retrying(attempt)

    def _retrying(self, fn: Callable[[], T]) -> T:
        retrying = Retrying(
            stop=stop_after_attempt(self.attempts),
            wait=wait_random_exponential(multiplier=0.2, max=2.0),
            retry=retry_if_exception_type(TransientStoreError),
            reraise=True,
        )
        return retrying(fn)

    def _argv(
        self, command: str, positionals: Sequence[str], options: Sequence[str] = ()
    ) -> list[str]:
        """``<command> <positionals> --shelf <s> <options>``; a positional that starts with
        ``-`` moves after ``--`` (options first), so it is never parsed as a flag."""
        clean = [well_formed(p) for p in positionals]
        if any(p.startswith("-") for p in clean):
            return [command, "--shelf", self.shelf, *options, "--", *clean]
        return [command, *clean, "--shelf", self.shelf, *options]

    @staticmethod
    def _json(out: str, what: str) -> Any:
        try:
            return json.loads(out)
        except json.JSONDecodeError as exc:
            raise FatalStoreError(f"unparseable {what} output: {out.strip()[:200]}") from exc

    # ---------------------------------------------------------------------------- features

    def features(self) -> Features:
        if self._features is not None:
            return self._features
        try:
            helps = [self._run_once([*cmd, "--help"]) for cmd in _PROBES]
        except StoreError:
            helps = []
        if len(helps) != len(_PROBES) or any(code != 0 for code, _, _ in helps):
            self._failed_probes += 1
            if self._failed_probes >= 2:
                self._features = Features()
            return Features()
        main, create, statement, similar = (out for _, out, _ in helps)
        self._features = Features(
            no_embed="--no-embed" in create and "--no-embed" in statement,
            similar_filters="--exclude-tags" in similar,
            delete="knowledge-delete" in main,
            update="knowledge-update" in main,
        )
        return self._features

    # ---------------------------------------------------------------------------- knowledge

    def knowledge_get(self, name: str) -> KnowledgeEntry | None:
        _, out, _ = self._run(self._argv("knowledge-get", [name]))
        if _NOT_FOUND_GET.match(out.strip()):
            return None
        return parse_entry(self._json(out, "knowledge-get"))

    def knowledge_create(
        self,
        name: str,
        data: str,
        *,
        tags: Sequence[str] = (),
        scopes: Sequence[str] | None = None,
        embed: bool = True,
    ) -> bool:
        args = create_args(data, tags=tags, scopes=scopes, embed=embed, features=self.features)
        try:
            self._run(self._argv("knowledge-create", [name], _options(args)))
        except DuplicateError:
            return False
        return True

    def knowledge_update(
        self,
        name: str,
        *,
        data: str | None = None,
        tags: Sequence[str] | None = None,
        scopes: Sequence[str] | None = None,
    ) -> bool:
        options = _options(update_args(data, tags, scopes))
        _, out, _ = self._run(self._argv("knowledge-update", [name], options))
        return not out.strip().startswith("Knowledge unchanged")

    def knowledge_delete(self, name: str) -> bool:
        try:
            self._run(self._argv("knowledge-delete", [name]))
        except NotFoundError:
            return False
        return True

    # ---------------------------------------------------------------------------- statements

    def statement_create(
        self,
        head: str,
        relation: str,
        tail: str,
        *,
        data: str = "",
        scopes: Sequence[str] | None = None,
        embed: bool = True,
    ) -> bool:
        options = _options(create_args(data, scopes=scopes, embed=embed, features=self.features))
        triple = [head, relation, tail]
        try:
            _, out, _ = self._run(self._argv("statement-create", triple, options))
        except DuplicateError:
            return False
        return not out.strip().startswith("Statement already exists")

    def statement_delete(self, head: str, relation: str, tail: str) -> bool:
        try:
            self._run(self._argv("statement-delete", [head, relation, tail]))
        except NotFoundError:
            return False
        return True

    # ---------------------------------------------------------------------------- reads

    def search(
        self, query: str, *, catalog: Catalog | None = None, limit: int = 100
    ) -> list[SearchRow]:
        options = ["-c", catalog] if catalog is not None else []
        options += ["--limit", str(limit)]
        _, out, _ = self._run(self._argv("search", [query], options))
        if out.strip() == NO_RESULTS:
            return []
        return parse_search_rows(self._json(out, "search"))

    def similar(
        self,
        query: str,
        *,
        target: Target = "knowledge",
        limit: int = 10,
        exclude_tags: Sequence[str] = (),
    ) -> list[SimilarRow]:
        argv = ["-t", target, "--limit", str(limit)]
        excluded = normalize_tags(exclude_tags)
        server_side = bool(excluded) and self.features().similar_filters
        if server_side:
            argv.append("--exclude-tags=" + ",".join(excluded))
        _, out, _ = self._run(self._argv("similar", [query], argv))
        if out.strip() == NO_RESULTS:
            return []
        rows = parse_similar_rows(self._json(out, "similar"), target)
        return rows if server_side else filter_excluded(rows, excluded)

    def query(self, jse: Any) -> list[QueryRow]:
        _, out, _ = self._run(self._argv("query", [jse_text(jse)]))
        if out.strip() == NO_RESULTS:
            return []
        return parse_query_rows(self._json(out, "query"))

    def close(self) -> None:
        """Nothing to release: every call is its own process."""


def _options(args: Mapping[str, Any]) -> list[str]:
    """The CLI options for normalised write arguments (:func:`create_args`, :func:`update_args`):
    ``--data=`` fitted to the command line, ``--tags=``, ``--scopes=``, ``--no-embed``."""
    options: list[str] = []
    if "data" in args:
        options.append("--data=" + fit_data(args["data"]))
    if "tags" in args:
        options.append("--tags=" + ",".join(args["tags"]))
    if "scopes" in args:
        options.append("--scopes=" + scopes_arg(args["scopes"]))
    if args.get("embed") is False:
        options.append("--no-embed")
    return options


_PROBES: tuple[tuple[str, ...], ...] = (
    (),
    ("knowledge-create",),
    ("statement-create",),
    ("similar",),
)


def _child_setup(parent_pid: int, reaper: int | None) -> Callable[[], None] | None:
    """The ``preexec_fn`` of a store call: die with the worker (the parent-death signal) and
    register the call's group with the worker's reaper (:mod:`memory.store.reaper`)."""
    die = die_with_parent(parent_pid)
    if reaper is None:
        return die

    def _setup() -> None:
        register_in_child(reaper)
        if die is not None:
            die()

    return _setup


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """Kill the call's whole process group, then reap it (bounded)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.communicate(timeout=KILL_GRACE_S)


__all__ = [
    "MAX_DATA_BYTES",
    "CliStore",
    "classify_error",
    "filter_excluded",
    "fit_data",
    "jse_text",
    "normalize_scopes",
    "normalize_tags",
    "parse_entry",
    "parse_query_rows",
    "parse_search_rows",
    "parse_similar_rows",
    "scopes_arg",
    "well_formed",
]
