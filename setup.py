"""The package list, which ``pyproject.toml`` alone cannot say: the top-level ``migrations/``
folder (the Alembic script directory) installs as the package ``dsh_memory_worker.migrations``
(``package_dir`` maps it), beside the ``memory`` and ``worker`` packages ``find_packages`` finds.
``hypatia_lite`` is not here: it is the ``hypatia-lite`` distribution (``hypatia-lite/``).
Everything else (metadata, dependencies, package data) is in ``pyproject.toml``."""

from setuptools import find_packages, setup

setup(
    packages=[
        *find_packages(include=["memory*", "worker*"], exclude=["worker.demo*"]),
        "dsh_memory_worker.migrations",
    ],
    package_dir={"dsh_memory_worker.migrations": "migrations"},
)
