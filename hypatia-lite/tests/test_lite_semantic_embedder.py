"""The ``semantic`` extra: WordLlama's weights from its own wheel, never from the network."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from hypatia_lite import semantic
from hypatia_lite.embed import HashingEmbedder, embedder_from_env
from hypatia_lite.protocol import ModelUnavailableError

# Every way out to the network fails (and is recorded) before anything of the project loads.
_NO_NETWORK = """
import json, socket, sys
attempts = []
def refuse(*args, **kwargs):
    attempts.append(repr(args[:2]))
    raise OSError("network refused by the test")
socket.socket.connect = refuse
socket.socket.connect_ex = refuse
socket.create_connection = refuse
socket.getaddrinfo = refuse
"""

_PROBE = """
from pathlib import Path
import numpy as np
from hypatia_lite import shelves
from hypatia_lite.embed import embedder_from_env
from hypatia_lite.store import LiteStore

embedder = embedder_from_env({})
kitten, cat, tax = embedder.embed(["a kitten", "a young cat", "my quarterly tax return"])
home = Path(sys.argv[1])
shelves.connect(home, home / "s", "s")
with LiteStore("s", home=home) as store:
    store.knowledge_create("pets", "Our feline companion sleeps all day")
    store.knowledge_create("money", "The accountant filed the invoices")
    store.knowledge_create("log", "kitten kitten kitten", embed=False)
    rows = store.similar_rows("a kitten", limit=2)
print(json.dumps({
    "identity": embedder.identity,
    "dims": len(kitten),
    "cat": float(np.dot(kitten, cat)),
    "tax": float(np.dot(kitten, tax)),
    "store": store.embedder.identity,
    "similar": [r["name"] for r in rows],
    "attempts": attempts,
}))
"""


@pytest.mark.integration
def test_the_extra_works_with_every_network_call_refused(tmp_path: Path) -> None:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "HF_HOME": str(tmp_path / "hf")}
    script = textwrap.dedent(_NO_NETWORK) + textwrap.dedent(_PROBE)
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "lite")],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,  # the installed hypatia_lite, not a checkout's
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout.splitlines()[-1])
    assert got["identity"] == got["store"] == "wordllama/l2_supercat-256"
    assert got["dims"] == 256
    assert got["cat"] > got["tax"] + 0.1  # meaning, not spelling: no shared word with "cat"
    assert got["similar"] == ["pets", "money"]
    assert got["attempts"] == []
    assert not (tmp_path / "hf").exists()  # no hub cache was written


def test_the_default_is_the_extra_when_installed_else_hashing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert semantic.available()
    assert isinstance(embedder_from_env({}), semantic.WordLlamaEmbedder)
    assert isinstance(embedder_from_env({"HYPATIA_LITE_EMBEDDER": "hash"}), HashingEmbedder)
    monkeypatch.setattr(semantic, "available", lambda: False)
    assert isinstance(embedder_from_env({}), HashingEmbedder)
    with pytest.raises(
        ModelUnavailableError, match=r"needs `pip install 'hypatia-lite\[semantic\]'`"
    ):
        embedder_from_env({"HYPATIA_LITE_EMBEDDER": "semantic"})


def test_a_damaged_install_is_one_clear_error_not_a_download(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import wordllama

    def refuse(*args: object, **kwargs: object) -> None:
        raise FileNotFoundError("l2_supercat_256.safetensors")

    monkeypatch.setattr(wordllama.WordLlama, "load", refuse)
    with pytest.raises(ModelUnavailableError, match="model unavailable: wordllama's l2_supercat"):
        semantic.WordLlamaEmbedder().embed(["x"])
