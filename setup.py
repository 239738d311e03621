"""The package list and its mapping, which ``pyproject.toml`` alone cannot say: the distribution
installs one import name, ``dsh_memory_worker``, whose packages live in the repository's
top-level folders — ``worker/`` → ``dsh_memory_worker.worker``, ``memory/`` →
``dsh_memory_worker.memory``, ``migrations/`` (the Alembic script directory) →
``dsh_memory_worker.migrations`` — beside the namespace root ``dsh_memory_worker/`` (version,
``python -m``, ``celery -A``). A ``package_dir`` mapping, not a move. ``hypatia_lite`` is not
here: it is the ``hypatia-lite`` distribution (``hypatia-lite/``). Everything else (metadata,
dependencies, package data) is in ``pyproject.toml``."""

from setuptools import find_packages, setup

NAMESPACE = "dsh_memory_worker"
#: Top-level folder → the package it installs as.
FOLDERS = {"worker": f"{NAMESPACE}.worker", "memory": f"{NAMESPACE}.memory"}

setup(
    packages=[
        NAMESPACE,
        *(
            f"{NAMESPACE}.{name}"
            for name in find_packages(include=["memory*", "worker*"], exclude=["worker.demo*"])
        ),
        f"{NAMESPACE}.migrations",
    ],
    package_dir={
        **{package: folder for folder, package in FOLDERS.items()},
        f"{NAMESPACE}.migrations": "migrations",
    },
)
