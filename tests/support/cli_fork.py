"""Run ``memory-worker`` from a pre-imported parent that forks one child per invocation.

A CLI test pays the command line's start-up (about a second of imports on the shared machine)
for every ``subprocess.run([... "memory-worker", ...])``. :func:`run_cli` has the same contract —
argv, environment, working directory, standard input, captured standard output and error, the
exit status (negative: killed by that signal), a timeout — but the process that runs the command
is forked from a server that imported the heavy libraries once (SQLAlchemy, pydantic, Typer,
Rich, the runtime's modules). The child is a real process: its own pid, its own file
descriptors, ``kill -9`` kills it and nothing else, ``os._exit`` ends it.

What the child does is what ``memory-worker`` does: ``worker.cli.main()`` with ``sys.argv``,
``os.environ`` and the working directory of the request, standard streams on the request's
pipes; then the ``atexit`` handlers and an exit with the command's status. The server never runs
a command, opens a database or a console itself (a Rich console reads ``COLUMNS`` when it is made,
so the command modules are imported in the child), so nothing of one run reaches the next.

Use it where a test only needs a command's outcome::

    from cli_fork import run_cli
    done = run_cli(["run", "--once"], env=env, timeout=120)   # a CompletedProcess[str]

A start-up hook that a fresh interpreter would run from ``PYTHONPATH`` (the crash points'
``sitecustomize``) is run by the child with ``site_dir=``: the child puts that directory first on
``sys.path`` and imports its ``sitecustomize`` after it has taken the request's environment, so
the hook reads its settings from the environment of that one run, as at a real start-up (the
environment still carries ``PYTHONPATH`` for the command's own children).

A test that signals the process or watches it while it runs uses :func:`start_cli` (a
``Popen``-like :class:`CliProcess`; ``module=`` runs ``python -m MODULE``). Another process (a fake
store binary) can ask the same server to fork ``memory-worker`` or ``hypatia-lite`` on pipes of
its own with :func:`request_fork` (the socket from :func:`fork_server_path`).

A command that needs a fresh interpreter — ``-X`` options, another Python, a probe of what start-up
imports — keeps using :mod:`subprocess`. ``MW_TEST_NO_FORK=1`` makes :func:`run_cli` start real
processes (to compare).

Where the code under test starts the command itself (a store adapter's configured binary, the
``MEMORY_WORKER_STORE_BINARY`` of a worker), :func:`launcher` gives an executable to configure
instead of ``BIN / tool``: a small script (an interpreter without ``site``, built-in modules only)
that sends its own argv, environment, working directory and standard streams to the server, which
forks the command with them — the adapter still reads the command's stdout from a pipe, writes an
MCP conversation to its stdin and sees its exit status as the launcher's. The launcher forwards
SIGTERM, SIGINT and SIGHUP to the command, ends with the command's signal when it was killed by
one, and when the launcher dies (``kill -9`` of the call's process group) the command is killed
too. ``memory-worker`` and ``hypatia-lite`` are served, each by a server of its own (the
``hypatia-lite`` one imports little, so it forks cheaply, and the MCP library just before its first
``mcp``); ``MW_TEST_NO_FORK=1`` returns the real console script.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import select
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path

from cli_fork_scripts import LAUNCHER, SERVER_MAIN

BIN = Path(sys.executable).parent
#: Imported once by the server: what every command's start-up would import again (a name this
#: checkout does not have is skipped).
PRELOAD = (
    "sqlalchemy",
    "sqlalchemy.orm",
    "sqlalchemy.dialects.sqlite",
    "pydantic",
    "pydantic_settings",
    "typer",
    "typer._adapters",
    "rich.console",
    "rich.table",
    "rich.progress",
    "dsh_memory_worker.worker.cli",
    "dsh_memory_worker.worker.settings",
    "dsh_memory_worker.worker.state",
    "dsh_memory_worker.worker.jobs.registry",
    "dsh_memory_worker.worker.jobs.guard",
    "dsh_memory_worker.worker.run.runner",
    "dsh_memory_worker.worker.run.once_parallel",
    "dsh_memory_worker.worker.watch.watcher",
    "hypatia_lite.store",
    "hypatia_lite.db",
    "hypatia_lite.sqlite_backend",
    "hypatia_lite.purge",
    "dsh_memory_worker.memory.store.lite.store",
    "dsh_memory_worker.memory.dsh.reader",
    "dsh_memory_worker.worker.state.migrate",
    "dsh_memory_worker.worker.state.template",
    "dsh_memory_worker.worker.at_rest",
    "tenacity",
    "dsh_memory_worker.worker.jobs.housekeeping",
    # The model client's library and its transport: most of a consolidating command's imports.
    "openai",
    "openai.resources",
    "openai.pagination",
    "httpcore2",
    "h11",
    "jiter",
    "truststore",
    "anyio.abc",
    "anyio.streams",
    "encodings.idna",
)
#: What the ``hypatia-lite`` server imports (its own server: a small parent forks cheaply).
LITE_PRELOAD = (
    "hypatia_lite.cli",
    "hypatia_lite.store",
    "hypatia_lite.shelves",
    "hypatia_lite.embed",
    "hypatia_lite.jse",
    "hypatia_lite.batch",
    "hypatia_lite.purge",
    "hypatia_lite.sqlite_backend",
    "hypatia_lite.pg.backend",
    "psycopg",
    "sqlean",
)
#: Imported by a server just before it forks the first ``TOOL COMMAND`` of that kind: a test
#: process that never starts an MCP server does not pay for the MCP library's imports.
COMMAND_PRELOAD = {
    "hypatia-lite mcp": (
        "hypatia_lite.mcp_server",
        "hypatia_lite.mcp_stdio",
        "hypatia_lite.mcp_tools",
    ),
}
#: The console scripts the servers run: ``tool -> module`` whose ``main()`` is the entry point.
ENTRY_POINTS = {"memory-worker": "dsh_memory_worker.worker.cli", "hypatia-lite": "hypatia_lite.cli"}
_PRELOADS = {"memory-worker": PRELOAD, "hypatia-lite": LITE_PRELOAD}
_lock = threading.Lock()
#: One server per tool and extra preload: what a server has imported is fixed when it starts, so
#: a command forked from it never carries a module that only another test's command asked for.
_servers: dict[tuple[str, tuple[str, ...]], _Server] = {}


class _Server:
    """The pre-imported parent: a process on a Unix socket, one per tool (and extra preload) and
    test process."""

    def __init__(self, tool: str = "memory-worker", preload: Sequence[str] = ()) -> None:
        self.dir = tempfile.mkdtemp(prefix="mw-cli-fork-")
        self.path = os.path.join(self.dir, "socket")
        ready_r, ready_w = os.pipe()
        # The server's lifeline: it exits when this end closes (this process ended, even killed).
        life_r, self._lifeline = os.pipe()
        env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORY_WORKER_")}
        try:
            self.process = subprocess.Popen(
                [
                    sys.executable,
                    "-c",
                    SERVER_MAIN,
                    self.path,
                    str(ready_w),
                    str(life_r),
                    json.dumps([*_PRELOADS[tool], *preload]),
                    json.dumps({"entry": ENTRY_POINTS, "preload": COMMAND_PRELOAD}),
                ],
                pass_fds=(ready_w, life_r),
                env=env,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        except BaseException:
            os.close(ready_r)
            os.rmdir(self.dir)
            raise
        finally:
            os.close(ready_w)
            os.close(life_r)
        with os.fdopen(ready_r, "rb") as ready:
            if ready.read(1) != b"1":
                raise RuntimeError("the CLI fork server did not start")
        self.launchers: dict[str, str] = {}
        atexit.register(self.stop)

    def launcher(self, tool: str) -> str:
        """The path of this server's launcher script for ``tool`` (written once)."""
        if tool not in self.launchers:
            path = os.path.join(self.dir, tool)
            script = LAUNCHER.format(
                python=sys.executable, socket=self.path, tool=tool, argv0=str(BIN / tool)
            )
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(script)
            os.chmod(path, 0o755)
            self.launchers[tool] = path
        return self.launchers[tool]

    def stop(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self._lifeline)
        with contextlib.suppress(OSError):
            self.process.kill()
        with contextlib.suppress(Exception):
            self.process.wait(timeout=10)
        for path in [self.path, *getattr(self, "launchers", {}).values()]:
            with contextlib.suppress(OSError):
                os.unlink(path)
        with contextlib.suppress(OSError):
            os.rmdir(self.dir)


def _server_for_this_process(tool: str = "memory-worker", preload: Sequence[str] = ()) -> _Server:
    key = (tool, tuple(preload))
    with _lock:
        server = _servers.get(key)
        if server is None or server.process.poll() is not None:
            server = _servers[key] = _Server(tool, preload)
        return server


def launcher(tool: str = "hypatia-lite") -> str:
    """An executable to configure where code under test runs ``tool`` itself: run as a real
    process with any argv, environment, working directory and standard streams, it has the
    pre-imported server fork ``tool`` with them and ends with its status (module docstring).
    With ``MW_TEST_NO_FORK=1``: the real console script."""
    if tool not in ENTRY_POINTS:
        raise ValueError(f"no fork entry point for {tool!r}")
    if os.environ.get("MW_TEST_NO_FORK") == "1":
        return str(BIN / tool)
    return _server_for_this_process(tool).launcher(tool)


def _argv_env(
    args: Sequence[str],
    env: Mapping[str, str] | None,
    tool: str,
    site_dir: str | os.PathLike[str] | None,
) -> tuple[list[str], Mapping[str, str] | None]:
    argv = [str(BIN / tool), *args]
    if site_dir is not None:
        env = dict(os.environ if env is None else env)
        env["PYTHONPATH"] = os.pathsep.join(
            filter(None, [os.fspath(site_dir), env.get("PYTHONPATH", "")])
        )
    return argv, env


class CliProcess:
    """A running ``memory-worker`` forked from the pre-imported server, ``Popen``-like: its
    ``pid`` (a real process: ``os.kill(pid, SIGKILL)`` kills it and nothing else), ``poll``,
    ``wait`` (the exit status, negative when a signal killed it) and, once it has ended, the
    captured ``stdout`` and ``stderr``. Made by :func:`start_cli`."""

    def __init__(
        self,
        argv: list[str],
        env: Mapping[str, str] | None,
        cwd: str | os.PathLike[str] | None,
        input: str | None,
        site_dir: str | os.PathLike[str] | None,
        tool: str = "memory-worker",
        preload: Sequence[str] = (),
    ) -> None:
        self.args = argv
        self.returncode: int | None = None
        self.stdout = ""
        self.stderr = ""
        in_r, in_w = os.pipe()
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        try:
            self._conn, pid = request_fork(
                fork_server_path(preload=preload),
                argv,
                env,
                cwd,
                (in_r, out_w, err_w),
                tool=tool,
                site_dir=site_dir,
            )
        except BaseException:
            for fd in (in_w, out_r, err_r):
                os.close(fd)
            raise
        finally:
            for fd in (in_r, out_w, err_w):
                os.close(fd)
        self._chunks: dict[int, list[bytes]] = {out_r: [], err_r: []}
        self._out, self._err = out_r, err_r
        self._readers = [
            threading.Thread(target=self._drain, args=(fd,), daemon=True) for fd in (out_r, err_r)
        ]
        for reader in self._readers:
            reader.start()
        with os.fdopen(in_w, "wb") as stdin, contextlib.suppress(BrokenPipeError):
            if input is not None:
                stdin.write(input.encode())
        self.pid = pid

    def _drain(self, fd: int) -> None:
        with os.fdopen(fd, "rb") as stream:
            for block in iter(lambda: stream.read1(65536), b""):
                self._chunks[fd].append(block)

    def stderr_so_far(self) -> str:
        """What it has written to standard error until now (while it runs)."""
        return b"".join(list(self._chunks[self._err])).decode(errors="replace")

    def poll(self) -> int | None:
        """The exit status once the process has ended, else None (it does not wait)."""
        if self.returncode is None:
            ready, _, _ = select.select([self._conn], [], [], 0)
            if ready:
                self.wait()
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        """Wait for the end (``subprocess.TimeoutExpired`` after ``timeout`` seconds, the
        process left running); read what it wrote."""
        if self.returncode is not None:
            return self.returncode
        try:
            status = exit_status(self._conn, timeout)
        except TimeoutError:
            raise subprocess.TimeoutExpired(self.args, timeout or 0) from None
        self._conn.close()
        for reader in self._readers:  # its output is complete when every writer is gone
            reader.join()
        self.stdout = b"".join(self._chunks[self._out]).decode(errors="replace")
        self.stderr = b"".join(self._chunks[self._err]).decode(errors="replace")
        self.returncode = status
        return status

    def kill(self) -> None:
        """SIGKILL, unless it has ended."""
        if self.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)


def fork_server_path(tool: str = "memory-worker", preload: Sequence[str] = ()) -> str:
    """The socket of this process's pre-imported server for ``tool`` that has also imported
    ``preload`` (started if need be: one server per tool and preload, so no command carries
    another's imports), for a helper process that asks it to fork a command
    (:func:`request_fork`)."""
    return _server_for_this_process(tool, preload).path


def request_fork(
    server_path: str,
    argv: Sequence[str],
    env: Mapping[str, str] | None,
    cwd: str | os.PathLike[str] | None,
    fds: tuple[int, int, int],
    *,
    tool: str = "memory-worker",
    site_dir: str | os.PathLike[str] | None = None,
) -> tuple[socket.socket, int]:
    """Ask the server at ``server_path`` to fork ``tool`` (``memory-worker``, ``hypatia-lite``
    or ``-m MODULE``: ``python -m MODULE`` of a module whose ``main()`` returns the status) with
    ``argv``, ``env`` and ``cwd`` on the standard streams ``fds`` (the caller closes its
    copies). Returns the connection (its
    :func:`exit_status` is the command's) and the command's pid."""
    request = {
        "argv": list(argv),
        "env": dict(os.environ if env is None else env),
        "cwd": os.fspath(cwd) if cwd is not None else os.getcwd(),
        "site": None if site_dir is None else os.fspath(site_dir),
        "tool": tool,
    }
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(server_path)
        data = json.dumps(request).encode()
        socket.send_fds(conn, [len(data).to_bytes(8, "big") + data], list(fds))
        return conn, int(_recv_line(conn))
    except BaseException:
        conn.close()
        raise


def exit_status(conn: socket.socket, timeout: float | None = None) -> int:
    """The exit status of a command :func:`request_fork` started (negative: killed by that
    signal); ``TimeoutError`` after ``timeout`` seconds."""
    conn.settimeout(timeout)
    return int(_recv_line(conn))


def start_cli(
    args: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    input: str | None = None,
    site_dir: str | os.PathLike[str] | None = None,
    module: str | None = None,
    preload: Sequence[str] = (),
) -> CliProcess:
    """Start ``memory-worker ARGS`` (``module``: ``python -m MODULE ARGS``, a module whose
    ``main()`` returns the exit status) forked from a pre-imported server that has also imported
    ``preload`` (a server of its own), and return at once (for a test that signals the run or
    watches it while it runs; :func:`run_cli` waits for it)."""
    if module is None:
        argv, env = _argv_env(args, env, "memory-worker", site_dir)
        return CliProcess(argv, env, cwd, input, site_dir)
    # sys.argv as ``python -m`` leaves it: the module first, then ARGS
    argv, env = [module, *args], _argv_env(args, env, "", site_dir)[1]
    return CliProcess(argv, env, cwd, input, site_dir, tool=f"-m {module}", preload=preload)


def run_cli(
    args: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    input: str | None = None,
    timeout: float | None = None,
    tool: str = "memory-worker",
    site_dir: str | os.PathLike[str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """``subprocess.run([BIN / tool, *args], env=env, cwd=cwd, input=input, timeout=timeout,
    capture_output=True, text=True)``, with the process forked from the pre-imported server.

    ``site_dir``: a directory put first on the command's ``PYTHONPATH``, whose ``sitecustomize``
    it runs at start-up (a real process does that itself; a forked child does it after taking
    the environment)."""
    argv, env = _argv_env(args, env, tool, site_dir)
    if tool != "memory-worker" or os.environ.get("MW_TEST_NO_FORK") == "1":
        return subprocess.run(
            argv,
            env=None if env is None else dict(env),
            cwd=cwd,
            input=input,
            timeout=timeout,
            capture_output=True,
            text=True,
        )
    process = CliProcess(argv, env, cwd, input, site_dir)
    try:
        status = process.wait(timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        for reader in process._readers:
            reader.join(timeout=10)
        process._conn.close()
        raise
    return subprocess.CompletedProcess(argv, status, process.stdout, process.stderr)


def _recv_line(conn: socket.socket) -> bytes:
    line = b""
    while not line.endswith(b"\n"):
        block = conn.recv(1)
        if not block:
            raise RuntimeError("the CLI fork server closed the connection")
        line += block
    return line
