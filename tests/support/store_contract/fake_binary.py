"""Write fake ``hypatia`` executables for the fault tests (real subprocesses, no mocks).

The fake delegates to ``hypatia-lite`` and misbehaves on purpose, by ``FAKE_MODE``:

- ``old``: a binary from before MCP — ``mcp`` answers ``error: unrecognized subcommand 'mcp'``
  with exit 2; every other command is hypatia-lite's.
- ``hang-cli``: ``knowledge-get`` records its pid and its child's pid, then hangs.
- ``silent-mcp``: ``mcp`` records its pid and never answers (not even the handshake).
- ``probe-fail``: every ``--help`` records its pid and fails (exit 1) while the file named by
  ``FAKE_FAILFILE`` exists.
- ``proxy`` (default): ``mcp`` runs ``hypatia-lite mcp`` behind a line proxy that records its pid,
  hangs forever on a request containing ``HANG-me`` (with ``FAKE_HANG_CALLS=1``: on every tool
  call, after a normal handshake), and drops the tool named in ``FAKE_DROP_TOOL`` from
  ``tools/list``.

Pids go to ``FAKE_PIDFILE`` (one per line).
"""

from __future__ import annotations

import stat
import sys
from pathlib import Path

_SCRIPT = r"""#!{python}
import json, os, subprocess, sys, threading, time

LITE = {lite!r}
MODE = os.environ.get("FAKE_MODE", "proxy")
PIDFILE = os.environ.get("FAKE_PIDFILE")
DROP = os.environ.get("FAKE_DROP_TOOL", "")
HANG_CALLS = os.environ.get("FAKE_HANG_CALLS") == "1"
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
server = subprocess.Popen([LITE, "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)


def pump_out():
    for line in server.stdout:
        if DROP and b'"tools"' in line:
            message = json.loads(line)
            tools = message.get("result", {{}}).get("tools")
            if isinstance(tools, list):
                message["result"]["tools"] = [t for t in tools if t.get("name") != DROP]
                line = (json.dumps(message) + "\n").encode()
        sys.stdout.buffer.write(line)
        sys.stdout.buffer.flush()


threading.Thread(target=pump_out, daemon=True).start()
for line in sys.stdin.buffer:
    if b"HANG-me" in line or (HANG_CALLS and b'"tools/call"' in line):
        time.sleep(600)
    server.stdin.write(line)
    server.stdin.flush()
server.stdin.close()
server.wait()
"""


def write_fake_hypatia(directory: Path, lite_binary: str, name: str = "hypatia") -> Path:
    """Create an executable fake ``hypatia`` in ``directory`` and return its path."""
    path = directory / name
    path.write_text(_SCRIPT.format(python=sys.executable, lite=lite_binary), encoding="utf-8")
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
