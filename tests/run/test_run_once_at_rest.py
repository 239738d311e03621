"""A home at rest is answered without the runtime, and only a home at rest (worker.at_rest).

A ``run --once`` over files unchanged since a full run that did nothing prints that run's summary
line without loading SQLAlchemy; ``status`` shows the figures a full ``status`` showed over the
same files. Any change takes the full path again: a new session, a wiped store, another setting,
a state database another command changed. Each case asserts what was written (entry names, the
summary line, the figures), not only which path was taken."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from cli_fork import run_cli
from cluster_support import wait_for
from pipeline_support import dump

from dsh_memory_worker.worker import at_rest
from dsh_memory_worker.worker.commands.demo_home import demo_session_id

pytestmark = pytest.mark.integration

FS_READ = "a57f852d-d476-4716-a380-8a1116e4d905"
CANCEL = demo_session_id("cancel")
#: Runs ``memory-worker ARGS`` in this interpreter and says, on stdout's last line, whether
#: SQLAlchemy was imported (the full path) or not (the at-rest answer).
PROBE = (
    "import sys\nfrom dsh_memory_worker.worker.cli import main\nsys.argv = ['memory-worker', "
    "*sys.argv[1:]]\n"
    "code = 0\ntry:\n    main()\nexcept SystemExit as exc:\n    code = exc.code or 0\n"
    "print('FULL' if 'sqlalchemy' in sys.modules else 'AT-REST')\nsys.exit(code)\n"
)


def _cli(args: list[str], env: dict[str, str]) -> tuple[int, str, str, str]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *args], env=env, capture_output=True, text=True, timeout=180
    )
    *out, path = done.stdout.splitlines() or [""]
    return done.returncode, "\n".join(out), done.stderr, path


def _newest_ns(env: dict[str, str]) -> int:
    """The newest ``mtime``/``ctime`` under the home's data, hypatia-lite and DSH directories:
    everything of the home that the at-rest fingerprint covers (its code files are older)."""
    newest = 0
    for name in ("MEMORY_WORKER_DATA_DIR", "HYPATIA_LITE_HOME", "DSH_HOME"):
        for directory, _dirs, files in os.walk(env[name]):
            for path in (directory, *(os.path.join(directory, f) for f in files)):
                with contextlib.suppress(OSError):
                    st = os.stat(path)
                    newest = max(newest, st.st_mtime_ns, st.st_ctime_ns)
    return newest


def _settled(env: dict[str, str], args: list[str]) -> tuple[int, str, str, str]:
    """Wait until every file of the home is more than SETTLE_NS old (a full run records the home
    at rest only then; a file's ctime cannot be set back), run ``args`` in full (forked: it is
    not what is probed) so that it records the home, then ``args`` in a fresh interpreter: that
    answer, once it is the at-rest one (else again, for a minute)."""
    deadline = time.monotonic() + 60
    while True:
        wait_for(
            lambda: time.time_ns() > _newest_ns(env) + at_rest.SETTLE_NS,
            30,
            "the home to settle",
            every=0.05,
        )
        recorded = run_cli(args, env=env, timeout=180)
        assert recorded.returncode == 0, recorded.stderr
        found = _cli(args, env)
        if found[3] == "AT-REST" or time.monotonic() > deadline:
            return found


def _names(lite: Path) -> set[str]:
    """The entry names of the ``default`` shelf of the hypatia-lite home ``lite``."""
    return {row["name"] for row in dump(lite.parent)["knowledge"]}


@pytest.fixture(scope="module")
def staging(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The shipped fixtures laid out once as a DSH home; each test copies its sessions (read
    only here)."""
    root = tmp_path_factory.mktemp("staging")
    laid = run_cli(["demo-home", str(root)], env=_clean_env({}), timeout=120)
    assert laid.returncode == 0, laid.stderr
    return root


def _clean_env(extra: dict[str, str]) -> dict[str, str]:
    env = {**os.environ, **extra, "COLUMNS": "200"}
    for name in (
        "MEMORY_WORKER_LITE_HOME",
        "MEMORY_WORKER_STATE_URL",
        "MEMORY_WORKER_CONFIG",
        "MEMORY_WORKER_STORE_SHELF",
    ):
        env.pop(name, None)
    return env


@pytest.fixture
def home(tmp_path: Path, staging: Path) -> dict[str, Any]:
    env = _clean_env(
        {
            "MEMORY_WORKER_DATA_DIR": str(tmp_path / "data"),
            "HYPATIA_LITE_HOME": str(tmp_path / "lite"),
            "DSH_HOME": str(tmp_path / "dsh"),
            "XDG_CACHE_HOME": str(tmp_path / "cache"),
        }
    )
    sessions = tmp_path / "dsh" / "sessions"
    held_back = {}
    for log_dir in sorted((staging / "sessions").glob("*/*")):
        target = sessions / log_dir.parent.name / log_dir.name
        if log_dir.name == CANCEL:
            held_back[CANCEL] = (log_dir, target)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copytree(log_dir, target)
    # The home's first run (forked: what it imports is not what is probed here). It took the
    # full path: it wrote entries, and an at-rest answer only repeats a run that wrote none.
    first = run_cli(["run", "--once"], env=env, timeout=180)
    assert first.returncode == 0, first.stderr
    assert re.search(r"; [1-9]\d* entries written", first.stderr.splitlines()[-1]), first.stderr
    return {
        "env": env,
        "root": tmp_path,
        "held_back": held_back,
        "names": _names(tmp_path / "lite"),
    }


def test_settled_run_is_answered_at_rest_with_the_same_line(home: dict[str, Any]) -> None:
    code, _out, err, path = _settled(home["env"], ["run", "--once"])
    assert (code, path) == (0, "AT-REST"), err
    assert err.strip() == (
        "7 sessions, 0 new events; 0 entries written, 0 retracted, 0 edges; 0 jobs done, 0 failed"
    )
    assert _names(home["root"] / "lite") == home["names"]
    records = list((home["root"] / "cache" / "dsh-memory-worker" / "at-rest").glob("*.json"))
    assert len(records) == 1
    assert records[0].stat().st_mode & 0o777 == 0o600
    # The same answer once Typer has parsed the options (not the bare form worker.cli answers
    # before Typer): same configuration, same record.
    code, _out, err2, path = _cli(["run", "--once", "--jobs", "1"], home["env"])
    assert (code, path, err2) == (0, "AT-REST", err)


def test_a_new_session_takes_the_full_path_and_is_written(home: dict[str, Any]) -> None:
    assert _settled(home["env"], ["run", "--once"])[3] == "AT-REST"
    source, target = home["held_back"][CANCEL]
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copytree(source, target)
    code, _out, err, path = _cli(["run", "--once"], home["env"])
    assert (code, path) == (0, "FULL"), err
    assert "8 sessions" in err.splitlines()[-1]
    assert _names(home["root"] / "lite") - home["names"] == {
        f"msg-{CANCEL}-0",
        f"msg-{CANCEL}-1",
        f"session-{CANCEL}",
    }


def test_a_wiped_store_takes_the_full_path_and_is_rebuilt(home: dict[str, Any]) -> None:
    assert _settled(home["env"], ["run", "--once"])[3] == "AT-REST"
    shutil.rmtree(home["root"] / "lite")
    code, _out, err, path = _cli(["run", "--once"], home["env"])
    assert (code, path) == (0, "FULL"), err
    assert _names(home["root"] / "lite") == home["names"]


def test_another_setting_takes_the_full_path(home: dict[str, Any]) -> None:
    assert _settled(home["env"], ["run", "--once"])[3] == "AT-REST"
    code, _out, err, path = _cli(["run", "--once", "--shelf", "other"], home["env"])
    assert path == "FULL", err
    code, _out, err, path = _cli(
        ["run", "--once"], {**home["env"], "MEMORY_WORKER_REDACT_EXTRA_PATTERNS": "[]"}
    )
    assert (code, path) == (0, "FULL"), err


def test_a_state_database_changed_by_another_command_takes_the_full_path(
    home: dict[str, Any],
) -> None:
    assert _settled(home["env"], ["run", "--once"])[3] == "AT-REST"
    forgot = run_cli(["forget", FS_READ], env=home["env"], timeout=120)
    assert forgot.returncode == 0, forgot.stderr
    code, _out, err, path = _cli(["run", "--once"], home["env"])
    assert (code, path) == (0, "FULL"), err
    assert not any(FS_READ in name for name in _names(home["root"] / "lite"))


def test_status_at_rest_shows_the_full_figures(home: dict[str, Any]) -> None:
    env = home["env"]
    full = run_cli(["status", "--json"], env=env, timeout=180)  # the full figures (forked)
    assert full.returncode == 0, full.stderr
    code, out, err, path = _settled(env, ["status", "--json"])
    assert (code, path) == (0, "AT-REST"), err
    assert json.loads(out) == json.loads(full.stdout)
    table = _cli(["status"], env)
    assert table[3] == "AT-REST" and "total (7)" in table[1]
    source, target = home["held_back"][CANCEL]  # a new session: the figures change at once
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copytree(source, target)
    code, out, err, path = _cli(["status", "--json"], env)
    assert (code, path) == (0, "FULL"), err
    rows = {row["session_id"]: row for row in json.loads(out)["sessions"]}
    assert rows[CANCEL]["recorded"] is False


def test_no_record_while_a_file_is_too_recent(tmp_path: Path) -> None:
    """A file changed within SETTLE_NS of the first fingerprint could change again in the same
    clock tick unseen: nothing is recorded."""
    inputs = at_rest.Inputs(
        state_db=str(tmp_path / "state.db"),
        sessions_root=str(tmp_path / "logs"),
        lite_home=str(tmp_path / "lite"),
        config=None,
        code=(),
    )
    (tmp_path / "state.db").write_bytes(b"x")
    watch = at_rest.Watch.__new__(at_rest.Watch)
    watch.key, watch.inputs, watch.started_ns = "k" * 64, inputs, time.time_ns()
    watch.before = at_rest.fingerprint(inputs)
    os.environ["XDG_CACHE_HOME"] = str(tmp_path / "cache")
    try:
        assert not watch.keep("status", {})
        watch.started_ns += 2 * at_rest.SETTLE_NS  # as if the file had been older
        assert watch.keep("status", {"shelf": "default"})
        assert at_rest.recorded("k" * 64, "status") == {"shelf": "default"}
        (tmp_path / "state.db").write_bytes(b"xy")
        assert at_rest.recorded("k" * 64, "status") is None
    finally:
        del os.environ["XDG_CACHE_HOME"]


def test_lite_home_is_the_lite_stores(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib

    from dsh_memory_worker.worker.settings import load_settings

    try:  # hypatia-lite's own package, or where it lived inside memory/ before
        lite_home = importlib.import_module("hypatia_lite.shelves").lite_home
    except ModuleNotFoundError:
        lite_home = importlib.import_module("dsh_memory_worker.memory.store.lite.shelves").lite_home

    monkeypatch.delenv("MEMORY_WORKER_LITE_HOME", raising=False)
    for env in (None, str(tmp_path / "env-home")):
        if env is None:
            monkeypatch.delenv(at_rest.LITE_HOME_ENV, raising=False)
        else:
            monkeypatch.setenv(at_rest.LITE_HOME_ENV, env)
        assert at_rest.lite_home(load_settings(None)) == lite_home(None)
    explicit = load_settings(None, lite_home=tmp_path / "explicit")
    assert at_rest.lite_home(explicit) == lite_home(tmp_path / "explicit")


def test_the_fingerprint_covers_every_package_the_run_executes(tmp_path: Path) -> None:
    """A code upgrade is an input: the fingerprint reads the source of the worker, the domain,
    the store (hypatia-lite, a distribution of its own) and the Alembic scripts, wherever each
    is installed."""
    import hypatia_lite
    from dsh_memory_worker import memory, migrations, worker
    from dsh_memory_worker.worker.settings import load_settings

    (tmp_path / "lite" / "default").mkdir(parents=True)
    registry = {"shelves": {"default": str(tmp_path / "lite" / "default")}}
    (tmp_path / "lite" / "shelves.json").write_text(json.dumps(registry))
    settings = load_settings(
        config_file="", data_dir=tmp_path / "data", lite_home=tmp_path / "lite"
    )
    inputs = at_rest.inputs_of(settings, None)
    assert inputs is not None
    packages = {Path(p.__file__).parent for p in (worker, memory, hypatia_lite, migrations)}
    assert {Path(p) for p in inputs.code} == packages
