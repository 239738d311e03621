"""Issue 17, done-when: two hosts. A `memory-worker daemon` with log shipping reads the DSH home
and ships the logs into the state database (PostgreSQL); two real `memory-worker worker`
processes (Celery on Redis DB 3, a hypatia-lite shelf on PostgreSQL) run as another OS user
(uid 65534, `nobody`), with another HOME and no read permission on the DSH home (its root is
root's, mode 700), reaching state, store and broker over TCP only. `forget`, `status` and
`verify-forgetting` run as that user too. The final store (every entry and statement) equals
an embedded run's over the same logs with the same `forget`, including a withdrawal appended
after its messages were written; the shipped bytes equal the files; the forgotten session has
no segment left.

The worker user must be able to run a Python with this project installed: `sys.executable`
when it can, else the venv named by `MEMORY_WORKER_TEST_OTHER_USER_VENV`, else one the test
builds (the project's own venv may live under `/root`, mode 700, as on CI): a venv of the
system's Python in a world-readable temporary directory, with a wheel of this tree installed into
it by pip (not editable: the checkout may be unreadable to that user too), over a seed of this
environment's installed distributions when the ABIs match.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from cli_fork import run_cli
from cluster_support import BIN, PG_ADMIN, Cluster, throwaway_cluster, wait_for
from conftest import REPO
from venv_snapshot import bare_venv, run_wheels, snapshot_venv

from dsh_memory_worker.worker.shipping.sql import SqlSegmentStore
from hypatia_lite import shelves
from hypatia_lite.store import LiteStore

sys.path.insert(0, str(REPO / "benchmarks"))
from redis_dbs import redis_db
from worker_dshgen import SessionLogWriter, embedded_runtime

pytestmark = pytest.mark.integration

REDIS_DB = redis_db("e2e_shipping_two_hosts")  # tests/support/redis_dbs.py
CWD = "/home/dev/dsh-demo"
NOBODY = 65534
SHELF = "team"  # a PostgreSQL shelf needs a name of its own ("default" is the home's directory)
KEPT = {f"msg-g-live-{n}" for n in (0, 1, 2, 3, 6, 7)}


_IMPORTS = (
    "import celery, psycopg, redis, dsh_memory_worker.worker.run.tasks, "
    "dsh_memory_worker.worker.cli; redis.Redis"
)


def _usable(bindir: Path) -> bool:
    ok = subprocess.run(
        _as_nobody(bindir / "python", "-c", _IMPORTS), capture_output=True, cwd="/", timeout=120
    )
    return ok.returncode == 0


def _other_user_bin() -> Path | None:
    """A bin directory whose `memory-worker` uid 65534 can run, if any."""
    venv = os.environ.get("MEMORY_WORKER_TEST_OTHER_USER_VENV")
    for candidate in [BIN] + ([Path(venv) / "bin"] if venv else []):
        if _usable(candidate):
            return candidate
    return None


def _build_other_user_venv(root: Path, wheels: tuple[Path, Path]) -> Path:
    """A venv of the system's Python under ``root`` (world-readable) with ``wheels`` (this
    tree's: hypatia-lite's, the worker's) installed, the worker's with its ``distributed``
    extra, by this environment's pip (no bootstrap); its bin directory. The venv is first seeded
    with this environment's installed distributions when the system's Python has this one's ABI
    (tests/support/venv_snapshot.py: pip then resolves over them and adds what that Python alone
    needs), else pip resolves and downloads them all."""
    system_python = shutil.which("python3", path="/usr/bin:/bin") or sys.executable
    venv = root / "venv"
    seeded = snapshot_venv(system_python, venv, wheels, frozenset({"distributed"}))
    if seeded is not None:
        return seeded
    bare_venv(system_python, venv)
    done = subprocess.run(
        [
            str(BIN / "python"),
            "-m",
            "pip",
            "--python",
            str(venv / "bin" / "python"),
            "install",
            "-q",
            "--no-compile",
            str(wheels[0]),
            f"{wheels[1]}[distributed]",
        ],
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return venv / "bin"


def _as_nobody(program: Path, *args: str) -> list[str]:
    return [
        "setpriv",
        f"--reuid={NOBODY}",
        f"--regid={NOBODY}",
        "--clear-groups",
        str(program),
        *args,
    ]


class TwoHosts:
    """The daemon's host (`cluster`, root, the DSH home) and the workers' (`bin`, uid 65534)."""

    def __init__(self, cluster: Cluster, bin_: Path, shelf_url: str, other: Path) -> None:
        self.cluster, self.bin, self.shelf_url, self.other = cluster, bin_, shelf_url, other
        self.env = {
            **cluster.env,
            "HOME": str(other),
            "DSH_HOME": str(cluster.home),
            "MEMORY_WORKER_DSH_HOME": str(cluster.home),
            "MEMORY_WORKER_DATA_DIR": str(other / "data"),
            "MEMORY_WORKER_LITE_HOME": str(other / "lite"),
        }
        self.reader = cluster.root / "reader-lite"  # the test's own view of the PG shelf
        shelves.connect(self.reader, shelf_url, "cluster")

    def start_worker(self, name: str) -> subprocess.Popen[bytes]:
        log = (self.cluster.root / f"{name}.log").open("wb")
        proc = subprocess.Popen(
            _as_nobody(
                self.bin / "memory-worker",
                "worker",
                "--pool",
                "solo",
                "--name",
                f"{name}@{self.cluster.queue}",
                "--queue",
                self.cluster.queue,
            ),
            env=self.env,
            cwd=self.other,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        self.cluster.procs[name] = proc
        return proc

    def command(self, *args: str) -> subprocess.CompletedProcess[str]:
        """A `memory-worker` command on the workers' host (uid 65534, no DSH home)."""
        return subprocess.run(
            _as_nobody(self.bin / "memory-worker", *args),
            env=self.env,
            cwd=self.other,
            capture_output=True,
            text=True,
            timeout=300,
        )

    def dump(self) -> dict[str, Any]:
        with LiteStore("cluster", home=self.reader) as store:
            return store.dump()

    def settled(self, sessions: int) -> bool:
        """Every session recorded, logged to its durable end, its session node written."""
        with self.cluster.state.read() as repos:
            progress = {p.session_id: p for p in repos.progress.list(SHELF)}
            states = [s for s in repos.sessions.list() if not s.forgotten]
        for s in states:
            row = progress.get(s.session_id)
            logged = max(row.last_logged_seq if row else 0, s.inherited_cut)
            node_owed = s.last_title_seq is not None and s.last_title_seq >= s.inherited_cut
            if s.durable_end_seq > logged or (node_owed and not (row and row.has_session_node)):
                return False
        return len(states) == sessions

    def names(self, prefix: str) -> set[str]:
        return {r["name"] for r in self.dump()["knowledge"] if r["name"].startswith(prefix)}


@pytest.fixture(scope="module")
def hosts(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TwoHosts]:
    assert shutil.which("setpriv"), "setpriv (util-linux) runs the workers as another user"
    built = None
    bin_ = _other_user_bin()
    if bin_ is None:
        built = Path(tempfile.mkdtemp(prefix="mw-other-user-", dir="/tmp"))
        built.chmod(0o755)
        bin_ = _build_other_user_venv(built, run_wheels(tmp_path_factory, REPO))
        assert _usable(bin_), "uid 65534 cannot run the venv built for it"
    root = tmp_path_factory.mktemp("two-hosts")
    home = root / "dsh"
    run_cli(["demo-home", str(home)], timeout=120).check_returncode()
    live = SessionLogWriter(home, "g-live", CWD)
    first = live.turn("remember the build flag", "noted: --release")
    live.title("Build flags", first.user_seq)
    live.turn("and the target", "x86_64")
    live.turn("which flag again?", "--release")
    live.flush()
    gone = SessionLogWriter(home, "g-forget", CWD)
    gone.turn("my password is hunter2", "I will not repeat it")
    gone.flush()
    os.chown(home, 0, 0)
    home.chmod(0o700)  # the workers' user cannot even list it
    other = Path(tempfile.mkdtemp(prefix="two-hosts-worker-"))  # /tmp/pytest-of-root is 0700
    os.chown(other, NOBODY, NOBODY)
    shelf_db = f"h17_shelf_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(PG_ADMIN, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{shelf_db}"')
    shelf_url = f"postgresql://postgres@127.0.0.1:5432/{shelf_db}"
    env = {
        "MEMORY_WORKER_SHIPPING": "true",
        "MEMORY_WORKER_STORE_SHELF_URL": shelf_url,
        "MEMORY_WORKER_STORE_SHELF": SHELF,
        "MEMORY_WORKER_SHIPPING_SEGMENT_BYTES": "4096",
    }
    try:
        with throwaway_cluster(root, "h17_ship", REDIS_DB, env) as cluster:
            two = TwoHosts(cluster, bin_, shelf_url, other)
            two.live = live  # type: ignore[attr-defined]
            cluster.start("daemon", "daemon")
            two.start_worker("w1")
            two.start_worker("w2")
            yield two
    finally:
        shutil.rmtree(other, ignore_errors=True)
        if built is not None:
            shutil.rmtree(built, ignore_errors=True)
        with psycopg.connect(PG_ADMIN, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{shelf_db}" WITH (FORCE)')


def _embedded(home: Path, root: Path) -> dict[str, Any]:
    """An embedded run (no shipping, SQLite) over a copy of the home, then the same forget."""
    from pipeline_support import dump, process

    from dsh_memory_worker.worker.jobs.forget import ACTION_FORGET, forget_session
    from dsh_memory_worker.worker.jobs.retract import with_session_lease

    shutil.copytree(home, root / "dsh")
    runtime = embedded_runtime(root, force_idle=True)
    process(runtime, consolidation=False)
    with_session_lease(
        runtime,
        "g-forget",
        "default",
        ACTION_FORGET,  # its SQLite shelf
        lambda ctx: forget_session(ctx),
    )
    runtime.close()
    return dump(root)


@pytest.mark.timeout(900)
def test_workers_as_another_user_equal_an_embedded_run(hosts: TwoHosts, tmp_path: Path) -> None:
    cluster = hosts.cluster
    for name in ("w1", "w2"):  # really another user, and it cannot read the DSH home
        status = Path(f"/proc/{cluster.procs[name].pid}/status")
        wait_for(lambda s=status: "memory-worker" in s.read_text(), 60, f"{name} to start")
        assert f"Uid:\t{NOBODY}\t{NOBODY}" in status.read_text()
    probe = subprocess.run(_as_nobody(Path("/bin/ls"), str(cluster.home)), capture_output=True)
    assert probe.returncode != 0
    wait_for(lambda: hosts.settled(10), 300, "the daemon and workers to log every session")
    assert "msg-g-forget-0" in hosts.names("msg-g-forget-")

    live: SessionLogWriter = hosts.live  # type: ignore[attr-defined]
    marker = live.rewind(next(s for s in live.surface if s >= live.seq - 6))
    live.turn("forget that", "forgotten")
    live.flush()  # a late withdrawal of written entries (ordinals 4, 5); a new turn follows
    wait_for(lambda: hosts.names("msg-g-live-") == KEPT, 120, "the withdrawal and the new turn")
    forgot = hosts.command("forget", "g-forget")
    assert forgot.returncode == 0, forgot.stdout + forgot.stderr
    wait_for(lambda: hosts.settled(9), 300, "every session logged after the withdrawal")

    for command in (["status"], ["verify-forgetting"], ["retract", "--all"]):
        done = hosts.command(*command)
        assert done.returncode == 0, f"{command}: {done.stdout}{done.stderr}"
    planned = hosts.command("reconsolidate", "--replace", "--all", "--dry-run")  # reads logs
    assert "Permission denied" not in planned.stdout + planned.stderr
    assert "Traceback" not in planned.stdout + planned.stderr
    assert hosts.names("msg-g-forget-") == set()
    assert hosts.dump() == _embedded(cluster.home, tmp_path)

    with cluster.state.transaction() as repos:
        retracted = repos.audit.retractions(session_id="g-live")
        forgets = [(a.action, a.outcome) for a in repos.audit.entries(session_id="g-forget")]
    assert [(a.entry, a.marker_seq, a.source_kind, a.outcome) for a in retracted] == [
        (f"msg-g-live-{n}", marker, "dsh-rewind", "retracted") for n in (4, 5)
    ]
    assert forgets == [("forget", "started"), ("forget", "done")]
    logs = "\n".join((cluster.root / f"{n}.log").read_text(errors="replace") for n in ("w1", "w2"))
    assert "Permission denied" not in logs and "dsh" not in _opened_paths(logs)


def _opened_paths(logs: str) -> str:
    """Lines of the workers' logs naming a session log file (they never should)."""
    return "\n".join(line for line in logs.splitlines() if "session.v" in line)


def test_the_shipped_bytes_equal_the_files_and_the_forgotten_are_gone(hosts: TwoHosts) -> None:
    cluster = hosts.cluster
    store = SqlSegmentStore(cluster.state)
    files = {p.parent.name: p for p in cluster.home.glob("sessions/*/*/session.*")}
    assert len(files) == 10
    for sid, path in sorted(files.items()):
        shipped = store.latest(sid)
        if sid == "g-forget":
            assert shipped is None
            continue
        assert shipped is not None, sid
        data = path.read_bytes()
        assert shipped.shipped_end == len(data), sid
        assert store.read_exact(sid, shipped.generation, 0, len(data)) == data, sid


def _count(url: str, prefix: str) -> int:
    """Entries named ``prefix…`` in the PostgreSQL shelf at ``url`` (cheap, for polling)."""
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM hypatia_lite.knowledge WHERE name LIKE %s", (prefix + "%",)
        ).fetchone()
    return int(row[0]) if row else 0


@pytest.mark.timeout(900)
def test_kill_9_of_the_daemon_shipping_and_of_a_worker_then_restarts(
    hosts: TwoHosts, tmp_path: Path
) -> None:
    cluster = hosts.cluster
    store = SqlSegmentStore(cluster.state)
    long = SessionLogWriter(cluster.home, "g-long", CWD)
    first = long.turn("start a long session", "ok")
    long.title("A long session", first.user_seq)
    for i in range(3000):
        long.turn(f"question {i}", f"answer {i}")
    long.flush()
    path = next(cluster.home.glob("sessions/*/g-long/session.*"))
    size = path.stat().st_size

    def mid_shipping() -> bool:
        shipped = store.latest("g-long")
        return shipped is not None and 0 < shipped.shipped_end < size

    wait_for(mid_shipping, 120, "the daemon to be mid-way through shipping g-long", every=0.005)
    daemon = cluster.procs["daemon"]
    daemon.kill()
    assert daemon.wait(timeout=10) == -9
    shipped = store.latest("g-long")
    assert shipped is not None and shipped.shipped_end < size  # killed with bytes left to ship
    cluster.start("daemon-b", "daemon")

    expected = 2 * 3001

    def mid_job() -> int | None:
        with cluster.state.read() as repos:
            lease = repos.leases.holder("session:g-long")
        if lease is None or not lease.owner.startswith("celery:"):
            return None
        return (
            int(lease.owner.split(":")[2])
            if 0 < _count(hosts.shelf_url, "msg-g-long-") < expected
            else None
        )

    pid = wait_for(mid_job, 300, "a worker mid-way through g-long", every=0.01)
    victim = next(name for name, p in cluster.procs.items() if p.pid == pid)
    os.kill(pid, 9)
    assert cluster.procs[victim].wait(timeout=10) == -9
    hosts.start_worker(f"{victim}b")
    wait_for(lambda: hosts.settled(10), 600, "the restarted processes to converge", every=0.5)
    assert _count(hosts.shelf_url, "msg-g-long-") == expected
    assert hosts.dump() == _embedded(cluster.home, tmp_path)
    final = store.latest("g-long")
    assert final is not None and final.generation == 0 and final.shipped_end == size
    assert store.read_exact("g-long", 0, 0, size) == path.read_bytes()
