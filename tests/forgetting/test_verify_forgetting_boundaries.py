"""``verify-forgetting`` finds a phrase in raw bytes by the same word boundaries as it decides
what live text legitimately holds: forgetting a session whose prompt ends "… step 1" while a
kept session's prompt ends "… step 12" leaves no leak (the kept bytes hold "step 12", not the
phrase), and a planted copy of the forgotten phrase — between other words, after an em dash and
a JSON escape — is still found, in the entries and in the shelf's bytes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from canary_support import SessionLogWriter, canary_reply, cli, cli_env, process, runtime_for
from model_server import ModelServer, model_server_fixture  # noqa: F401

pytestmark = pytest.mark.integration

BIN = Path(sys.executable).parent
FORGOTTEN = "Please rewrite the tokenizer of the parser in step 1"
KEPT = "Please rewrite the tokenizer of the parser in step 12"
#: a phrase only the forgotten prompt has (the kept one reads "parser in step 12")
PHRASE = "the parser in step 1"


def _verify(env: dict[str, str]) -> tuple[int, list[dict[str, object]]]:
    done = cli(["verify-forgetting", "--json"], env)
    assert done.returncode in (0, 1), done.stderr
    return done.returncode, json.loads(done.stdout)["leaks"]


def test_a_phrase_inside_a_longer_kept_phrase_is_no_leak_and_a_planted_one_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, model_server: ModelServer
) -> None:
    model_server.responder = canary_reply  # summaries, archives and units repeat every line
    runtime = runtime_for(tmp_path, model_server, monkeypatch)
    gone = SessionLogWriter(tmp_path / "dsh", "s-old", "/work/proj")
    kept = SessionLogWriter(tmp_path / "dsh", "s-new", "/work/proj")
    gone.turn(FORGOTTEN, "Done with the first part.")
    kept.turn(KEPT, "Done with the next part.")
    gone.flush()
    kept.flush()
    process(runtime)
    runtime.close()
    env = cli_env(tmp_path, model_server)
    for args in (["forget", "s-old"], ["run", "--once"]):
        done = cli(args, env)
        assert done.returncode == 0, done.stderr

    code, leaks = _verify(env)
    assert (code, leaks) == (0, []), leaks

    # A real copy of the phrase is a leak: planted by hand, bounded by an em dash and a JSON
    # escape, found through the store and in the shelf's bytes.
    planted = json.dumps({"note": f"see \u2014{PHRASE.title()}\nlater"}, ensure_ascii=True)
    lite = {**os.environ, "HYPATIA_LITE_HOME": str(tmp_path / "lite")}
    made = subprocess.run(
        [str(BIN / "hypatia-lite"), "knowledge-create", "planted", f"--data={planted}"],
        env=lite,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert made.returncode == 0, made.stderr
    code, leaks = _verify(env)
    assert code == 1
    found = {(leak["via"], leak["fragment"]) for leak in leaks}
    assert ("bytes", PHRASE) in found, leaks
    assert {leak["session_id"] for leak in leaks} == {"s-old"}
