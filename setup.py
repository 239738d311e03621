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
#: The top-level folders, each installed as ``dsh_memory_worker.<folder>`` (their subpackages
#: follow); ``worker/demo/`` is package data, not a package.
FOLDERS = ("worker", "memory", "migrations")

setup(
    packages=[
        NAMESPACE,
        *(
            f"{NAMESPACE}.{name}"
            for name in find_packages(include=[f"{f}*" for f in FOLDERS], exclude=["worker.demo*"])
        ),
    ],
    package_dir={f"{NAMESPACE}.{folder}": folder for folder in FOLDERS},
)
