"""Write fake ``hypatia`` executables for the fault tests (real subprocesses, no mocks).

The fake delegates to ``hypatia-lite`` and misbehaves on purpose, by ``FAKE_MODE``:

- ``old``: a binary from before MCP — ``mcp`` answers ``error: unrecognized subcommand 'mcp'``
  with exit 2; every other command is hypatia-lite's.
- ``hang-cli``: ``knowledge-get`` records its pid and its child's pid, then hangs.
- ``silent-mcp``: ``mcp`` records its pid and never answers (not even the handshake).
- ``probe-fail``: every ``--help`` records its pid and fails (exit 1) while the file named by
  ``FAKE_FAILFILE`` exists.
- ``proxy`` (default): ``mcp`` runs ``hypatia-lite mcp`` (forked from the tests' pre-imported
  server, :mod:`cli_fork`, unless ``forked=False`` or ``MW_TEST_NO_FORK=1``) behind a line proxy
  that records its pid, hangs forever on a request containing ``HANG-me`` (with
  ``FAKE_HANG_CALLS=1``: on every tool call, after a normal handshake), and drops the tool named
  in ``FAKE_DROP_TOOL`` from ``tools/list``. With ``FAKE_FLAP_CALLS=<file>`` it flaps: the
  tool calls, counted in that file across server restarts, alternately hang (odd ones, each
  noted in ``FAKE_FLAP_HANGS``) and pass.

Pids go to ``FAKE_PIDFILE`` (one per line).
"""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

from cli_fork import fork_server_path

SUPPORT = Path(__file__).resolve().parents[1]

_SCRIPT = r"""#!{python}
import json, os, subprocess, sys, threading, time

LITE = {lite!r}
FORK = {fork!r}
MODE = os.environ.get("FAKE_MODE", "proxy")
PIDFILE = os.environ.get("FAKE_PIDFILE")
DROP = os.environ.get("FAKE_DROP_TOOL", "")
HANG_CALLS = os.environ.get("FAKE_HANG_CALLS") == "1"
FLAP = os.environ.get("FAKE_FLAP_CALLS", "")
args = sys.argv[1:]


def record(pid):
    if PIDFILE:
        with open(PIDFILE, "a") as fh:
            fh.write(f"{{pid}}\n")


if MODE == "old" and args[:1] == ["mcp"]:
    sys.stderr.write("error: unrecognized subcommand 'mcp'\n\nUsage: hypatia [COMMAND]\n")
    sys.exit(2)
if MODE == "silent-mcp" and args[:1] == ["mcp"]:
    record(os.getpid())
    time.sleep(120)
    sys.exit(0)
if MODE == "hang-cli" and args[:1] == ["knowledge-get"]:
    record(os.getpid())
    child = subprocess.Popen(["sleep", "120"])
    record(child.pid)
    time.sleep(120)
    sys.exit(0)
if MODE == "probe-fail" and "--help" in args:
    record(os.getpid())
    if os.path.exists(os.environ["FAKE_FAILFILE"]):
        sys.stderr.write("probe refused\n")
        sys.exit(1)
if args[:1] != ["mcp"]:
    os.execv(LITE, [LITE, *args])

record(os.getpid())
if FORK and os.environ.get("MW_TEST_NO_FORK") != "1":
    # hypatia-lite mcp as a process forked from the tests' pre-imported server (its MCP
    # libraries imported once, not per start), on this proxy's pipes as a child's would be.
    sys.path.insert(0, {support!r})
    from cli_fork import exit_status, request_fork

    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    conn, _ = request_fork(
        FORK,
        [LITE, "mcp"],
        dict(os.environ),
        os.getcwd(),
        (in_r, out_w, 2),
        tool="hypatia-lite",
    )
    os.close(in_r)
    os.close(out_w)
    server_in, server_out = os.fdopen(in_w, "wb"), os.fdopen(out_r, "rb")
    server_wait = lambda: exit_status(conn)
else:
    server = subprocess.Popen([LITE, "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    server_in, server_out, server_wait = server.stdin, server.stdout, server.wait


def pump_out():
    for line in server_out:
        if DROP and b'"tools"' in line:
            message = json.loads(line)
            tools = message.get("result", {{}}).get("tools")
            if isinstance(tools, list):
                message["result"]["tools"] = [t for t in tools if t.get("name") != DROP]
                line = (json.dumps(message) + "\n").encode()
        sys.stdout.buffer.write(line)
        sys.stdout.buffer.flush()


def flap_hangs():
    # The next tool call's number (kept in FLAP, shared by restarts); True when it is odd.
    try:
        with open(FLAP) as fh:
            n = int(fh.read() or 0) + 1
    except FileNotFoundError:
        n = 1
    with open(FLAP, "w") as fh:
        fh.write(str(n))
    if n % 2:
        with open(os.environ["FAKE_FLAP_HANGS"], "a") as fh:
            fh.write(f"{{n}}\n")
    return n % 2 == 1


threading.Thread(target=pump_out, daemon=True).start()
for line in sys.stdin.buffer:
    if b"HANG-me" in line or (HANG_CALLS and b'"tools/call"' in line):
        time.sleep(600)
    if FLAP and b'"tools/call"' in line and flap_hangs():
        time.sleep(600)
    server_in.write(line)
    server_in.flush()
server_in.close()
server_wait()
"""


def write_fake_hypatia(
    directory: Path, lite_binary: str, name: str = "hypatia", *, forked: bool = True
) -> Path:
    """Create an executable fake ``hypatia`` in ``directory`` and return its path.

    ``forked``: its ``hypatia-lite mcp`` is forked from this test process's ``hypatia-lite`` server
    (:mod:`cli_fork`; a real process on real pipes, without the second of imports a fresh
    interpreter pays per start) unless ``MW_TEST_NO_FORK=1``; else a fresh ``hypatia-lite``."""
    path = directory / name
    fork = (
        fork_server_path("hypatia-lite")
        if forked and os.environ.get("MW_TEST_NO_FORK") != "1"
        else ""
    )
    path.write_text(
        _SCRIPT.format(python=sys.executable, lite=lite_binary, fork=fork, support=str(SUPPORT)),
        encoding="utf-8",
    )
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


def read_pids(pidfile: Path) -> list[int]:
    if not pidfile.exists():
        return []
    return [int(x) for x in pidfile.read_text(encoding="utf-8").split()]


def alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie awaiting its reaper counts as dead)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8").rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError, ProcessLookupError):
        return False
    return state not in ("Z", "X")
