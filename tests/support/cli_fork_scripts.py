"""The two programs :mod:`cli_fork` runs, as source text: the pre-imported server's main loop
(it forks a waiter, then the command, per request) and the launcher a store adapter runs in place
of a console script (module docstring of :mod:`cli_fork`)."""

#: The server: ``python -c SERVER_MAIN SOCKET READY_FD LIFELINE_FD PRELOAD TOOLS``.
SERVER_MAIN = r"""
import importlib, json, os, signal, socket, sys

path, ready, lifeline = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
preload = json.loads(sys.argv[4])
tools = json.loads(sys.argv[5])
preloaded = set()
for name in preload:
    try:
        importlib.import_module(name)
    except ImportError:  # a module this checkout does not have: the child imports what it needs
        pass
server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
server.bind(path)
server.listen(64)
os.write(ready, b"1")
os.close(ready)


def reap(_signum, _frame):  # waiters are reaped here, so their CPU time is the server's (and,
    try:                    # once the server is reaped, the test process's: ``time`` counts it)
        while os.waitpid(-1, os.WNOHANG)[0] > 0:
            pass
    except ChildProcessError:
        pass


signal.signal(signal.SIGCHLD, reap)


def child(request, fds):
    os.setsid()
    for target, fd in zip((0, 1, 2), fds):
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    sys.argv = list(request["argv"])
    sys.stdin = open(0, "r", closefd=False)
    sys.stdout = open(1, "w", closefd=False)
    sys.stderr = open(2, "w", closefd=False)
    code = 0
    try:
        if request["site"] is not None:  # what start-up does with PYTHONPATH=site
            sys.path.insert(0, request["site"])
            sys.modules.pop("sitecustomize", None)
            importlib.import_module("sitecustomize")
        tool = request.get("tool") or "memory-worker"
        if tool.startswith("-m "):  # python -m MODULE: its main() is the command
            raise SystemExit(importlib.import_module(tool[3:]).main())
        entry = tools["entry"][tool]
        raise SystemExit(importlib.import_module(entry).main())  # what a console script does
    except SystemExit as exc:
        if exc.code is None:
            code = 0
        elif isinstance(exc.code, int):
            code = exc.code
        else:
            print(exc.code, file=sys.stderr)
            code = 1
    except BaseException:
        import traceback
        traceback.print_exc()
        code = 1
    import atexit
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass
    os._exit(code)


def serve_until_the_parent_is_gone():
    import selectors
    chooser = selectors.DefaultSelector()
    chooser.register(server, selectors.EVENT_READ)
    chooser.register(lifeline, selectors.EVENT_READ)
    while True:
        for key, _ in chooser.select():
            if key.fileobj == lifeline:  # EOF: the test process is gone
                try:
                    os.unlink(path)
                    os.rmdir(os.path.dirname(path))
                except OSError:
                    pass
                os._exit(0)
            yield server.accept()[0]


for conn in serve_until_the_parent_is_gone():
    head, fds, _flags, _addr = socket.recv_fds(conn, 1 << 20, 4)
    size = int.from_bytes(head[:8], "big")
    body = head[8:]
    while len(body) < size:
        body += conn.recv(size - len(body))
    if body[:1] == b"M":  # a launcher's request (marshal: what its interpreter has built in)
        import marshal
        request = marshal.loads(body[1:])
    else:
        request = json.loads(body)
    # A launcher's request carries a fourth descriptor: its lifeline (EOF: the launcher died).
    caller = fds[3] if len(fds) > 3 else None
    fds = fds[:3]
    tool = request.get("tool", "memory-worker")
    command = " ".join([tool, *request["argv"][1:2]])
    if command in tools["preload"] and command not in preloaded:  # once, before its first fork
        preloaded.add(command)
        for name in tools["preload"][command]:
            try:
                importlib.import_module(name)
            except ImportError:
                pass
    if os.fork() == 0:  # a waiter per command: the server accepts the next request at once
        server.close()
        os.close(lifeline)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        pid = os.fork()
        if pid == 0:
            conn.close()
            if caller is not None:
                os.close(caller)
            child(request, fds)
        for fd in fds:
            os.close(fd)
        try:
            conn.sendall(f"{pid}\n".encode())
        except OSError:
            pass
        if caller is not None:  # the launcher gone first (killed): the command goes too
            import select
            done = os.pidfd_open(pid)
            if caller in select.select([done, caller], [], [])[0]:
                if done not in select.select([done], [], [], 0)[0]:
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
        _, status = os.waitpid(pid, 0)
        try:
            conn.sendall(f"{os.waitstatus_to_exitcode(status)}\n".encode())
        except OSError:
            pass
        os._exit(0)
    for fd in fds:
        os.close(fd)
    if caller is not None:
        os.close(caller)
    conn.close()
"""

#: The launcher: ``python -I -S`` with built-in modules only (``_socket``, ``_signal``,
#: ``marshal``: an interpreter start-up and little more); its request is marshalled (``M``).
LAUNCHER = r"""#!{python} -IS
import _signal, _socket, marshal, os, sys

life_r, life_w = os.pipe()  # the server's child sees EOF here when this process is gone
request = {{
    "argv": [{argv0!r}, *sys.argv[1:]],
    "env": dict(os.environ),
    "cwd": os.getcwd(),
    "site": None,
    "tool": {tool!r},
}}
data = b"M" + marshal.dumps(request)
fds = b"".join(fd.to_bytes(4, sys.byteorder) for fd in (0, 1, 2, life_r))
conn = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
conn.connect({socket!r})
data = len(data).to_bytes(8, "big") + data
sent = conn.sendmsg([data], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, fds)])
conn.sendall(data[sent:])
os.close(life_r)
reply = b""


def line():
    global reply
    while b"\n" not in reply:
        block = conn.recv(64)
        if not block:
            return None
        reply += block
    first, reply = reply.split(b"\n", 1)
    return int(first)


pid = line()
if pid is None:
    sys.stderr.write("the CLI fork server closed the connection\n")
    sys.exit(1)


def forward(signum, _frame):
    try:
        os.kill(pid, signum)
    except ProcessLookupError:
        pass


for signum in (_signal.SIGTERM, _signal.SIGINT, _signal.SIGHUP):
    _signal.signal(signum, forward)
status = line()
if status is None:
    status = 1
if status < 0:  # killed by a signal: end the same way
    _signal.signal(-status, _signal.SIG_DFL)
    os.kill(os.getpid(), -status)
sys.exit(status)
"""
