"""The wheel's metadata says where the project lives, what it is and who keeps it: the five
project URLs, the classifiers, the authors, the keywords and the SPDX licence, read from the
``METADATA`` of the wheel built from this tree (the one the wheel tests install)."""

from __future__ import annotations

import zipfile
from email.message import Message
from email.parser import HeaderParser

import pytest
from conftest import REPO
from venv_snapshot import run_wheels

from dsh_memory_worker import __version__

pytestmark = pytest.mark.integration

URL = "https://github.com/dsh-memory-worker/dsh-memory-worker"
CLASSIFIERS = {
    "Development Status :: 4 - Beta",
    "Environment :: Console",
    "Intended Audience :: Developers",
    "Operating System :: POSIX :: Linux",
    "Operating System :: MacOS",
    "Programming Language :: Python :: 3.11",
    "Programming Language :: Python :: 3.12",
    "Programming Language :: Python :: 3.13",
    "Typing :: Typed",
}


def _metadata(tmp_path_factory: pytest.TempPathFactory) -> Message:
    _, wheel = run_wheels(tmp_path_factory, REPO)  # built once a run (the worker's is second)
    with zipfile.ZipFile(wheel) as archive:
        (name,) = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        text = archive.read(name).decode("utf-8")
    return HeaderParser().parsestr(text)


def test_the_wheel_names_its_urls_classifiers_authors_and_keywords(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    meta = _metadata(tmp_path_factory)
    assert meta["Name"] == "dsh-memory-worker"
    assert meta["Version"] == __version__
    urls = dict(line.split(", ", 1) for line in meta.get_all("Project-URL") or [])
    assert urls == {
        "Homepage": URL,
        "Source": URL,
        "Issues": f"{URL}/issues",
        "Changelog": f"{URL}/blob/main/CHANGELOG.md",
        "Documentation": f"{URL}/tree/main/docs",
    }
    classifiers = set(meta.get_all("Classifier") or [])
    assert classifiers >= CLASSIFIERS, CLASSIFIERS - classifiers
    assert any(c.startswith("Topic :: ") for c in classifiers)
    # PEP 639: the licence is an SPDX expression, and no `License ::` classifier contradicts it.
    assert meta["License-Expression"] == "MIT"
    assert not any(c.startswith("License :: ") for c in classifiers)
    assert meta["Author"] == "dsh-memory-worker maintainers"
    keywords = set((meta["Keywords"] or "").split(","))
    assert {"dsh", "hypatia", "agent-memory"} <= keywords
    assert meta["Requires-Python"] == ">=3.11"
    assert meta["Summary"]
